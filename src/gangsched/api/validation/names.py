"""Name formats with upstream's messages (k8s.io/apimachinery/pkg/api/validate/content and util/validation).

Each check returns the list of detail strings upstream returns, empty when the value is valid, so that a
caller turns each into one `Invalid value` error as upstream's callers do.

>>> dns1123_label("ok-name"), len(dns1123_label("Bad_Name"))
([], 1)
"""

from __future__ import annotations

import re

__all__ = [
    "dns1035_label",
    "dns1123_label",
    "dns1123_subdomain",
    "is_extended_resource_name",
    "label_key",
    "path_segment_name",
    "regex_error",
]

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
# `\Z`, not `$`: Python's `$` also matches before a final "\n", Go's only at the end, so "web\n" would pass.
_LABEL = re.compile(f"^{_LABEL_FMT}\\Z")
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035 = re.compile(f"^{_DNS1035_FMT}\\Z")
_SUBDOMAIN = re.compile(f"^{_SUBDOMAIN_FMT}\\Z")
_QNAME = re.compile(f"^{_QNAME_FMT}\\Z")

_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character"
)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Upstream's RegexError, including its double space between examples."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _LABEL.match(value):
        errs.append(regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1035_label(value: str) -> list[str]:
    """IsDNS1035Label: Service names (NameIsDNS1035Label)."""
    errs = []
    if len(value) > 63:
        errs.append(_max_len(63))
    if not _DNS1035.match(value):
        msg = (
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character"
        )
        errs.append(regex_error(msg, _DNS1035_FMT, "my-name", "abc-123"))
    return errs


def dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append(_max_len(253))
    if not _SUBDOMAIN.match(value):
        errs.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errs


def label_key(value: str) -> list[str]:
    """Upstream's IsQualifiedName, which label keys (and topology keys) must satisfy."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + _max_len(63))
    if not _QNAME.match(name):
        errs.append("name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: not a native resource (one without a domain, or in kubernetes.io),
    not a quota's `requests.` name, and a qualified name once `requests.` is put before it."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not label_key(f"requests.{name}")


def path_segment_name(value: str) -> list[str]:
    """Upstream's IsPathSegmentName (controllerRef kind and name)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]
