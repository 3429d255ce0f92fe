"""Deterministic object names, computed exactly as upstream computes them.

- `generate_workload_name` / `generate_pod_group_name`: workloadbuilder's names.go (FNV-32a, decimal,
  `rand.SafeEncodeString`, DNS-1123 subdomain truncation). Upstream's tests pin `job` + UID `uid-1` to
  `job-647cf7d9`; ours do too.
- Pod names: the Job controller asks the API server for `generateName` plus 5 random characters. gangsched
  must be reproducible, so the 5 characters come from a hash of (owner UID, ordinal) in upstream's alphabet
  instead: same shape, same length limits, same output on every run.
- `object_uid`: objects read from YAML often have no `metadata.uid`, which upstream always has (names and
  owner references depend on it). We derive a stable UUID from kind/namespace/name.
"""

from __future__ import annotations

import uuid

__all__ = [
    "DNS1123_SUBDOMAIN_MAX_LENGTH",
    "fnv32a",
    "generate_pod_group_name",
    "generate_workload_name",
    "indexed_pod_generate_name",
    "object_uid",
    "pod_generate_name",
    "pod_name",
    "safe_encode_string",
]

DNS1123_SUBDOMAIN_MAX_LENGTH = 253
# k8s.io/apiserver/pkg/storage/names: generated names append 5 characters to at most 58.
_RANDOM_LENGTH = 5
MAX_GENERATED_NAME_LENGTH = 63 - _RANDOM_LENGTH
# k8s.io/apimachinery/pkg/util/rand: vowels left out so that generated names spell no words.
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"
_UID_NAMESPACE = uuid.UUID("6f1c1d8e-4a52-4b9a-9d55-7a0e6c3b2f10")


def fnv32a(*chunks: bytes) -> int:
    """FNV-1a, 32 bits, over the concatenated chunks (Go's hash/fnv New32a)."""
    h = 0x811C9DC5
    for chunk in chunks:
        for byte in chunk:
            h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode_string(s: str) -> str:
    """Upstream's rand.SafeEncodeString: every character mapped into the vowel-free alphabet."""
    return "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in s)


def _hash_suffix(*chunks: bytes) -> str:
    return safe_encode_string(str(fnv32a(*chunks)))


def generate_workload_name(owner_name: str, owner_uid: str) -> str:
    """`<owner>-<hash(uid)>`, as workloadbuilder.GenerateWorkloadName and the Job controller name Workloads.

    The UID is hashed through k8s.io/utils/dump.ForHash, which prints a `types.UID` as `(types.UID)<uid>`.

    >>> generate_workload_name("job", "uid-1")
    'job-647cf7d9'
    """
    suffix = _hash_suffix(f"(types.UID){owner_uid}".encode())
    if not owner_name:
        return suffix
    max_prefix = DNS1123_SUBDOMAIN_MAX_LENGTH - len(suffix) - 1
    return f"{owner_name[:max_prefix]}-{suffix}"


def generate_pod_group_name(workload_name: str, template_name: str) -> str:
    """`<workload>-<template>-<hash>`, as workloadbuilder.GeneratePodGroupName (each half truncated fairly).

    >>> generate_pod_group_name("workload", "")
    'workload-c5546b9dd'
    """
    suffix = _hash_suffix(workload_name.encode(), template_name.encode())
    max_prefix = DNS1123_SUBDOMAIN_MAX_LENGTH - len(suffix) - 1
    if not workload_name:
        return f"{template_name[:max_prefix]}-{suffix}" if template_name else suffix
    if not template_name:
        return f"{workload_name[:max_prefix]}-{suffix}"
    available = DNS1123_SUBDOMAIN_MAX_LENGTH - len(suffix) - 2
    wl, tpl = workload_name, template_name
    if len(wl) + len(tpl) > available:
        half = available // 2
        if len(wl) <= half:
            tpl = tpl[: available - len(wl)]
        elif len(tpl) <= half:
            wl = wl[: available - len(tpl)]
        else:
            wl, tpl = wl[: available - half], tpl[:half]
    return f"{wl}-{tpl}-{suffix}"


def pod_generate_name(controller_name: str) -> str:
    """The Job controller's generateName for NonIndexed pods: `<job>-`."""
    return f"{controller_name}-"


def indexed_pod_generate_name(job_name: str, index: int) -> str:
    """The Job controller's podGenerateNameWithIndex: `<job>-<index>-`, the job name cut so it fits."""
    append = f"-{index}-"
    prefix = job_name + append
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[: MAX_GENERATED_NAME_LENGTH - len(append)] + append
    return prefix


def pod_name(generate_name: str, owner_uid: str, ordinal: int) -> str:
    """generateName completed with 5 characters derived from (owner UID, ordinal), not random ones."""
    base = generate_name[:MAX_GENERATED_NAME_LENGTH]
    digest = fnv32a(owner_uid.encode(), b"/", str(ordinal).encode())
    chars = []
    for _ in range(_RANDOM_LENGTH):
        digest, rest = divmod(digest, len(_ALPHANUMS))
        chars.append(_ALPHANUMS[rest])
    return base + "".join(chars)


def object_uid(kind: str, namespace: str, name: str) -> str:
    """A stable UID for an object read without one: the same input gives the same UID on every run."""
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}"))
