"""`gangsched run --config FILE`: a configuration file in the style of KubeSchedulerConfiguration.

    apiVersion: gangsched.io/v1alpha1
    kind: GangschedConfiguration
    clientConnection: {kubeconfig: "", apiConcurrency: 16}   # "": in-cluster, else $KUBECONFIG
    leaderElection: {leaderElect: true, leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s,
                     resourceNamespace: gangsched-system, resourceName: gangsched}
    featureGates: {GenericWorkload: true}
    bindAddress: 0.0.0.0
    metricsPort: 10261
    seed: 0
    profiles:
    - {schedulerName: gangsched, scoringStrategy: LeastAllocated, placementLimit: false,
       backfillDepth: 1, backfillWindow: 720h, backfillResolution: 60s, backfillInterval: 30s,
       agingRate: 0, agingCap: 0, explainPending: false, queuePolicy: gang, recoveryPolicy: wait}

The names and the validation rules are upstream's where upstream has the setting (component-base's
LeaderElectionConfiguration, kube-scheduler's profiles), durations are Go durations ("15s", "1m30s").
Command-line flags override the file, field by field. `load_config` returns the validated settings or raises
`ConfigError` whose message is one line: `FILE: GangschedConfiguration: FIELD.PATH: MESSAGE`.
Unknown fields are errors (as upstream's strict decoding), never ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import yaml

from ..api.gates import FeatureGateError, FeatureGates
from ..scheduler.backfill import BackfillSettings
from ..scheduler.policy import QUEUE_POLICIES
from ..scheduler.recovery import Recovery

__all__ = ["API_VERSION", "KIND", "ConfigError", "leader_election_problem", "load_config", "parse_duration"]

API_VERSION = "gangsched.io/v1alpha1"
KIND = "GangschedConfiguration"
SCORING_STRATEGIES = ("LeastAllocated", "MostAllocated")
# client-go's leaderelection: RenewDeadline must exceed RetryPeriod * JitterFactor.
JITTER_FACTOR = 1.2


class ConfigError(ValueError):
    """A configuration file that cannot be used; str() is the one-line message for the user."""


class _Struct(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class ClientConnection(_Struct):
    kubeconfig: str = ""
    apiConcurrency: int = 16


class LeaderElection(_Struct):
    leaderElect: bool = False
    leaseDuration: str = "15s"
    renewDeadline: str = "10s"
    retryPeriod: str = "2s"
    resourceLock: str = "leases"
    resourceNamespace: str = "kube-system"
    resourceName: str = "gangsched"


class ProfileConfig(_Struct):
    schedulerName: str = "gangsched"
    scoringStrategy: str = "LeastAllocated"
    placementLimit: bool = False
    # Queue policy gang-backfill (docs/backfill.md), as `run --backfill DEPTH --bf-...`: off when absent.
    backfillDepth: int | str | None = None  # reservations: N, or "all" (conservative)
    backfillWindow: str | None = None  # absent: unbounded, the engine's and the CLI's default
    backfillResolution: str = "60s"
    backfillInterval: str = "30s"
    agingRate: float = 0.0  # priority points per hour waited
    agingCap: float = 0.0
    explainPending: bool = False
    queuePolicy: str = "gang"  # as --policy
    recoveryPolicy: str = "wait"  # as --recovery: wait, restart, continue, release-after:SECONDS


class FileConfig(_Struct):
    apiVersion: str
    kind: str
    clientConnection: ClientConnection = msgspec.field(default_factory=ClientConnection)
    leaderElection: LeaderElection = msgspec.field(default_factory=LeaderElection)
    featureGates: dict[str, bool] = msgspec.field(default_factory=dict)
    bindAddress: str = "127.0.0.1"
    metricsPort: int | None = None
    seed: int = 0
    profiles: list[ProfileConfig] = msgspec.field(default_factory=lambda: [ProfileConfig()])


_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string ("1m30s", "500ms", "0"); ValueError if it is not one."""
    if text == "0":
        return 0.0
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(text)
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)


def _msgspec_problem(e: msgspec.ValidationError) -> tuple[str, str]:
    """(field path, message) from msgspec's `Expected ... - at `$.a.b`` text."""
    text = str(e)
    message, _, at = text.partition(" - at `$")
    path = at.rstrip("`").lstrip(".")
    unknown = re.match(r"Object contains unknown field `(.+)`", message)
    if unknown:
        path = f"{path}.{unknown.group(1)}" if path else unknown.group(1)
        return path, "unknown field"
    missing = re.match(r"Object missing required field `(.+)`", message)
    if missing:
        path = f"{path}.{missing.group(1)}" if path else missing.group(1)
        return path, "Required value"
    return path or "(root)", message[0].lower() + message[1:] if message else "invalid"


def load_config(path: str | Path) -> dict[str, Any]:
    """Read and validate a GangschedConfiguration file: the settings it gives, by RunOptions field name
    (`feature_gates` as `A=true,B=false` text, for flags to override gate by gate). Raises ConfigError (one
    line) on any problem."""
    name = str(path)

    def fail(field_path: str, message: str) -> ConfigError:
        return ConfigError(f"{name}: {KIND}: {field_path}: {message}")

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as e:
        raise ConfigError(f"{name}: {e.strerror or e}") from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"{name}: not YAML{where}: {getattr(e, 'problem', None) or e}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"{name}: {KIND}: (root): expected an object, got {type(data).__name__}")
    try:
        raw = msgspec.convert(data, FileConfig)
    except msgspec.ValidationError as e:
        raise fail(*_msgspec_problem(e)) from e
    if raw.apiVersion != API_VERSION:
        raise fail("apiVersion", f'Unsupported value: "{raw.apiVersion}": supported values: "{API_VERSION}"')
    if raw.kind != KIND:
        raise fail("kind", f'Unsupported value: "{raw.kind}": supported values: "{KIND}"')

    # clientConnection
    if raw.clientConnection.apiConcurrency < 1:
        raise fail(
            "clientConnection.apiConcurrency",
            f"Invalid value: {raw.clientConnection.apiConcurrency}: must be at least 1",
        )

    # leaderElection: component-base's ValidateLeaderElectionConfiguration, with its messages.
    le = raw.leaderElection
    seconds: dict[str, float] = {}
    for key in ("leaseDuration", "renewDeadline", "retryPeriod"):
        value = getattr(le, key)
        try:
            seconds[key] = parse_duration(value)
        except ValueError as e:
            raise fail(f"leaderElection.{key}", f'Invalid value: "{value}": not a duration') from e
    if le.leaderElect:
        problem = leader_election_problem(
            seconds["leaseDuration"], seconds["renewDeadline"], seconds["retryPeriod"]
        )
        if problem is not None:
            key, message = problem
            raise fail(f"leaderElection.{key}", f'Invalid value: "{getattr(le, key)}": {message}')
        if le.resourceLock != "leases":
            raise fail("leaderElection.resourceLock", f'Unsupported value: "{le.resourceLock}": '
                       'supported values: "leases"')  # fmt: skip
        for key in ("resourceNamespace", "resourceName"):
            if not getattr(le, key):
                raise fail(f"leaderElection.{key}", "Required value")

    # featureGates: the same names and dependency rules as --feature-gates.
    gates_text = ",".join(f"{k}={str(v).lower()}" for k, v in raw.featureGates.items())
    try:
        FeatureGates.parse(gates_text)
    except FeatureGateError as e:
        raise fail("featureGates", str(e)) from e

    if raw.metricsPort is not None and not 0 < raw.metricsPort < 65536:
        raise fail("metricsPort", f"Invalid value: {raw.metricsPort}: must be between 1 and 65535")

    # profiles: one per process (gangsched runs one queue); kube-scheduler's schedulerName rules.
    if len(raw.profiles) != 1:
        raise fail("profiles", f"Invalid value: {len(raw.profiles)} profiles: exactly one is supported")
    profile = raw.profiles[0]
    if not profile.schedulerName:
        raise fail("profiles[0].schedulerName", "Required value")
    if profile.scoringStrategy not in SCORING_STRATEGIES:
        raise fail(
            "profiles[0].scoringStrategy",
            f'Unsupported value: "{profile.scoringStrategy}": supported values: '
            + ", ".join(f'"{s}"' for s in SCORING_STRATEGIES),
        )
    if profile.queuePolicy not in QUEUE_POLICIES:
        raise fail(
            "profiles[0].queuePolicy",
            f'Unsupported value: "{profile.queuePolicy}": supported values: '
            + ", ".join(f'"{p}"' for p in QUEUE_POLICIES),
        )
    try:
        recovery = Recovery.parse(profile.recoveryPolicy)
    except ValueError as e:
        raise fail("profiles[0].recoveryPolicy", f'Invalid value: "{profile.recoveryPolicy}": {e}') from e
    backfill = _backfill(profile, fail)
    return {
        "kubeconfig": raw.clientConnection.kubeconfig or None,
        "scheduler_name": profile.schedulerName,
        "feature_gates": gates_text,
        "leader_elect": le.leaderElect,
        "lease_namespace": le.resourceNamespace,
        "lease_name": le.resourceName,
        "lease_duration": seconds["leaseDuration"],
        "renew_deadline": seconds["renewDeadline"],
        "retry_period": seconds["retryPeriod"],
        "bind_address": raw.bindAddress,
        "metrics_port": raw.metricsPort,
        "seed": raw.seed,
        "api_concurrency": raw.clientConnection.apiConcurrency,
        "scoring": profile.scoringStrategy,
        "placement_limit": profile.placementLimit,
        "backfill": backfill,
        "explain_pending": profile.explainPending,
        "queue_policy": profile.queuePolicy,
        "recovery": recovery,
    }


def _backfill(profile: ProfileConfig, fail: Callable[[str, str], ConfigError]) -> BackfillSettings | None:
    """The profile's gang-backfill settings (None: the queue policy is plain priority order)."""
    depth = profile.backfillDepth
    if depth is None:
        return None
    if isinstance(depth, str) and depth != "all":
        raise fail("profiles[0].backfillDepth", f'Invalid value: "{depth}": want a number or "all"')
    seconds = {"backfillWindow": BackfillSettings().window}
    for key in ("backfillWindow", "backfillResolution", "backfillInterval"):
        value = getattr(profile, key)
        if value is None:
            continue
        try:
            seconds[key] = parse_duration(value)
        except ValueError as e:
            raise fail(f"profiles[0].{key}", f'Invalid value: "{value}": not a duration') from e
    try:
        return BackfillSettings(
            depth=None if depth == "all" else int(depth),
            window=seconds["backfillWindow"],
            resolution=seconds["backfillResolution"],
            interval=seconds["backfillInterval"],
            aging_rate=profile.agingRate,
            aging_cap=profile.agingCap,
        )
    except ValueError as e:
        raise fail("profiles[0].backfillDepth", f"Invalid value: {depth}: {e}") from e


def leader_election_problem(lease: float, renew: float, retry: float) -> tuple[str, str] | None:
    """component-base's ValidateLeaderElectionConfiguration on the three durations (seconds), with its
    messages: (field, message) of the first rule broken, or None."""
    for key, value in (("leaseDuration", lease), ("renewDeadline", renew), ("retryPeriod", retry)):
        if value <= 0:
            return key, "must be greater than zero"
    if lease <= renew:
        return "leaseDuration", "must be greater than `RenewDeadline`"
    if renew <= JITTER_FACTOR * retry:
        return "renewDeadline", "must be greater than retryPeriod*JitterFactor"
    return None
