"""`gangsched run` settings: the GangschedConfiguration file, flags over it, and where the cluster is.

Expectations are upstream's rules written by hand: component-base's leader-election validation (lease >
renew > retry x 1.2, with its messages), strict decoding (an unknown field is an error), client-go's order of
cluster configuration (in-cluster ServiceAccount, then $KUBECONFIG)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gangsched.api.gates import FeatureGates
from gangsched.cli import main
from gangsched.live import runner
from gangsched.live.config import ConfigError, load_config, parse_duration
from gangsched.live.kube import cluster_config
from gangsched.scheduler.backfill import BackfillSettings
from gangsched.scheduler.recovery import Recovery

FULL = """\
apiVersion: gangsched.io/v1alpha1
kind: GangschedConfiguration
clientConnection: {kubeconfig: "", apiConcurrency: 8}
leaderElection:
  leaderElect: true
  leaseDuration: 1m
  renewDeadline: 30s
  retryPeriod: 500ms
  resourceNamespace: gangsched-system
  resourceName: gs-lease
featureGates: {CompositePodGroup: false}
bindAddress: 0.0.0.0
metricsPort: 10261
seed: 7
profiles:
- {schedulerName: gpu-gangs, scoringStrategy: MostAllocated, placementLimit: true, backfillDepth: 2,
   backfillWindow: 2h, backfillResolution: 30s, backfillInterval: 10s, agingRate: 5, agingCap: 50,
   explainPending: true, queuePolicy: gang-strict-fifo, recoveryPolicy: "release-after:600"}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gangsched.yaml"
    path.write_text(text)
    return path


def test_a_full_file_gives_every_setting(tmp_path: Path) -> None:
    settings = load_config(write(tmp_path, FULL))
    assert settings == {
        "kubeconfig": None,
        "scheduler_name": "gpu-gangs",
        "feature_gates": "CompositePodGroup=false",
        "leader_elect": True,
        "lease_namespace": "gangsched-system",
        "lease_name": "gs-lease",
        "lease_duration": 60.0,
        "renew_deadline": 30.0,
        "retry_period": 0.5,
        "bind_address": "0.0.0.0",
        "metrics_port": 10261,
        "seed": 7,
        "api_concurrency": 8,
        "scoring": "MostAllocated",
        "placement_limit": True,
        "backfill": BackfillSettings(
            depth=2, window=7200.0, resolution=30.0, interval=10.0, aging_rate=5.0, aging_cap=50.0
        ),
        "explain_pending": True,
        "queue_policy": "gang-strict-fifo",
        "recovery": Recovery("release-after", 600.0),
    }


def test_an_empty_file_body_means_the_defaults(tmp_path: Path) -> None:
    settings = load_config(
        write(tmp_path, "apiVersion: gangsched.io/v1alpha1\nkind: GangschedConfiguration\n")
    )
    options = runner.RunOptions(**{k: v for k, v in settings.items() if k != "feature_gates"})
    assert options == runner.RunOptions()
    assert settings["feature_gates"] == ""


@pytest.mark.parametrize(
    ("text", "duration"),
    [("15s", 15.0), ("1m30s", 90.0), ("500ms", 0.5), ("1.5h", 5400.0), ("0", 0.0)],
)
def test_go_durations(text: str, duration: float) -> None:
    assert parse_duration(text) == duration


@pytest.mark.parametrize("text", ["15", "s", "15 s", "1d", "-5s", ""])
def test_not_go_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("seed: 7", "seed: seven"), "seed: expected `int`, got `str`"),
        (("seed: 7", "seed: 7\nqueuePolicy: Fifo"), "queuePolicy: unknown field"),
        (("placementLimit: true", "placementLimit: true, queueSort: Fifo"),
         "profiles[0].queueSort: unknown field"),
        (("queuePolicy: gang-strict-fifo", "queuePolicy: Fifo"),
         'profiles[0].queuePolicy: Unsupported value: "Fifo": supported values: "gang", '),
        (('recoveryPolicy: "release-after:600"', "recoveryPolicy: release-after"),
         'profiles[0].recoveryPolicy: Invalid value: "release-after": invalid recovery policy'),
        (('recoveryPolicy: "release-after:600"', "recoveryPolicy: retry"),
         'profiles[0].recoveryPolicy: Invalid value: "retry": invalid recovery policy'),
        (("backfillDepth: 2", "backfillDepth: some"),
         'profiles[0].backfillDepth: Invalid value: "some": want a number or "all"'),
        (("backfillDepth: 2", "backfillDepth: -1"),
         "profiles[0].backfillDepth: Invalid value: -1: reservation depth must be >= 0 or 'all'"),
        (("backfillInterval: 10s", "backfillInterval: soon"),
         'profiles[0].backfillInterval: Invalid value: "soon": not a duration'),
        (("apiVersion: gangsched.io/v1alpha1", "apiVersion: kubescheduler.config.k8s.io/v1"),
         'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1": supported values: '
         '"gangsched.io/v1alpha1"'),
        (("kind: GangschedConfiguration\n", ""), "kind: Required value"),
        (("renewDeadline: 30s", "renewDeadline: 1m"),
         'leaderElection.leaseDuration: Invalid value: "1m": must be greater than `RenewDeadline`'),
        (("retryPeriod: 500ms", "retryPeriod: 25s"),
         'leaderElection.renewDeadline: Invalid value: "30s": must be greater than retryPeriod*JitterFactor'),
        (("retryPeriod: 500ms", "retryPeriod: 0s"),
         'leaderElection.retryPeriod: Invalid value: "0s": must be greater than zero'),
        (("leaseDuration: 1m", "leaseDuration: a minute"),
         'leaderElection.leaseDuration: Invalid value: "a minute": not a duration'),
        (("resourceName: gs-lease", 'resourceName: ""'), "leaderElection.resourceName: Required value"),
        (("{CompositePodGroup: false}", "{GangScheduling: true}"),
         "featureGates: unrecognized feature gate: GangScheduling"),
        (("{CompositePodGroup: false}", "{GenericWorkload: false, CompositePodGroup: true}"),
         "featureGates: feature gate CompositePodGroup depends on GenericWorkload, "),
        (("scoringStrategy: MostAllocated", "scoringStrategy: Spread"),
         'profiles[0].scoringStrategy: Unsupported value: "Spread": supported values: "LeastAllocated", '
         '"MostAllocated"'),
        (("schedulerName: gpu-gangs", 'schedulerName: ""'), "profiles[0].schedulerName: Required value"),
        (("profiles:\n-", "profiles:\n- {schedulerName: other}\n-"),
         "profiles: Invalid value: 2 profiles: exactly one is supported"),
        (("metricsPort: 10261", "metricsPort: 70000"),
         "metricsPort: Invalid value: 70000: must be between 1 and 65535"),
        (("apiConcurrency: 8", "apiConcurrency: 0"),
         "clientConnection.apiConcurrency: Invalid value: 0: must be at least 1"),
    ],
)  # fmt: skip
def test_a_bad_file_is_one_line_naming_file_and_field(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    assert change[0] in FULL
    path = write(tmp_path, FULL.replace(change[0], change[1], 1))
    with pytest.raises(ConfigError) as e:
        load_config(path)
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: GangschedConfiguration: {expected}"), message


def test_leader_election_durations_are_free_when_it_is_off(tmp_path: Path) -> None:
    text = FULL.replace("leaderElect: true", "leaderElect: false")
    text = text.replace("renewDeadline: 30s", "renewDeadline: 2m")
    assert load_config(write(tmp_path, text))["renew_deadline"] == 120.0


def test_not_yaml_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"gangsched.yaml: not YAML \(line 2\)"):
        load_config(write(tmp_path, "apiVersion: x\n  kind: [\n"))
    with pytest.raises(ConfigError, match=r"nothing.yaml: No such file"):
        load_config(tmp_path / "nothing.yaml")


# --- the command line -------------------------------------------------------------------------------------


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[runner.RunOptions]:
    """`gangsched run` up to the point it would connect: the RunOptions it would run with."""
    seen: list[runner.RunOptions] = []

    async def fake_run(options: runner.RunOptions) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(runner, "run", fake_run)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(_kubeconfig("https://127.0.0.1:6443")))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    return seen


def _kubeconfig(server: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }


def test_flags_override_the_file_field_by_field(tmp_path: Path, captured: list[runner.RunOptions]) -> None:
    path = write(tmp_path, FULL)
    result = CliRunner().invoke(
        main,
        ["run", "--config", str(path), "--scheduler-name", "flagged", "--seed", "3",
         "--feature-gates", "DRAWorkloadResourceClaims=false", "--no-leader-elect", "--bind-address", "::1",
         "--backfill", "all", "--bf-window", "600", "--recovery", "restart"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (options,) = captured
    assert (options.scheduler_name, options.seed, options.leader_elect, options.bind_address) == (
        "flagged", 3, False, "::1",
    )  # fmt: skip
    # Not overridden: the file's.
    assert (options.lease_name, options.lease_duration, options.metrics_port, options.scoring) == (
        "gs-lease", 60.0, 10261, "MostAllocated",
    )  # fmt: skip
    # Gates: the file's CompositePodGroup=false and the flag's DRAWorkloadResourceClaims=false, both.
    assert options.gates == FeatureGates.parse("CompositePodGroup=false,DRAWorkloadResourceClaims=false")
    assert options.profile().scheduler_names == frozenset({"flagged"})
    assert options.profile().scoring == "MostAllocated" and options.profile().placement_limit
    # --backfill replaces the file's backfill settings whole (its planning flags go with it).
    assert options.backfill == BackfillSettings(depth=None, window=600.0)
    assert options.profile().backfill == options.backfill and options.profile().explain_pending
    # --recovery over the file's release-after:600; the file's queue policy stays.
    assert options.profile().recovery == Recovery("restart")
    assert options.queue_policy == "gang-strict-fifo"


def test_without_a_file_the_defaults(captured: list[runner.RunOptions]) -> None:
    result = CliRunner().invoke(main, ["run"])
    assert result.exit_code == 0, result.output
    assert captured == [runner.RunOptions()]


def test_bad_config_exits_1_with_one_line(tmp_path: Path, captured: list[runner.RunOptions]) -> None:
    path = write(tmp_path, FULL.replace("seed: 7", "seed: 7\nbackfill: 2"))
    result = CliRunner().invoke(main, ["run", "--config", str(path)])
    assert result.exit_code == 1
    assert result.output == f"Error: {path}: GangschedConfiguration: backfill: unknown field\n"
    assert captured == []


def test_flags_that_break_leader_election_are_refused(
    tmp_path: Path, captured: list[runner.RunOptions]
) -> None:
    result = CliRunner().invoke(
        main, ["run", "--config", str(write(tmp_path, FULL)), "--leader-elect-renew-deadline", "90"]
    )
    assert result.exit_code == 1
    assert result.output == "Error: --leader-elect-lease-duration: must be greater than `RenewDeadline`\n"
    assert captured == []


def test_a_bad_gate_flag_exits_1(captured: list[runner.RunOptions]) -> None:
    result = CliRunner().invoke(main, ["run", "--feature-gates", "Nope=true"])
    assert result.exit_code == 1
    assert "unrecognized feature gate: Nope" in result.output
    assert captured == []


# --- where the cluster is ---------------------------------------------------------------------------------


def _service_account(tmp_path: Path) -> Path:
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text("sa-token")
    (sa / "namespace").write_text("gangsched-system")
    (sa / "ca.crt").write_text("not read until a request is made")
    return sa


def test_in_cluster_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sa = _service_account(tmp_path)
    other = tmp_path / "kubeconfig"
    other.write_text(json.dumps(_kubeconfig("https://elsewhere:6443")))
    monkeypatch.setenv("KUBECONFIG", str(other))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    config = cluster_config(None, str(sa)).get()
    assert config.cluster.server == "https://10.96.0.1:443"
    assert config.user.token_file == str(sa / "token")  # read per request: rotated tokens are picked up
    assert config.namespace == "gangsched-system"
    # An explicit kubeconfig wins even in a cluster.
    assert cluster_config(str(other), str(sa)).get().cluster.server == "https://elsewhere:6443"


def test_out_of_cluster_kubeconfig_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sa = _service_account(tmp_path)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)  # a token file alone is not a pod
    first, second = tmp_path / "first", tmp_path / "second"
    first.write_text(json.dumps(_kubeconfig("https://first:6443")))
    second.write_text(json.dumps(_kubeconfig("https://second:6443")))
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    assert cluster_config(None, str(sa)).get().cluster.server == "https://first:6443"


def test_nowhere_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ValueError, match=r"^no cluster configuration: not in a cluster"):
        cluster_config(None, str(tmp_path / "none"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(ValueError, match="KUBERNETES_SERVICE_PORT"):
        cluster_config(None, str(_service_account(tmp_path)))


def test_backfill_without_a_window_plans_without_bound(tmp_path: Path) -> None:
    """The file's default window is the engine's and the CLI's: unbounded (a large gang may wait weeks, and a
    1-day window would give it no reservation at all)."""
    text = (
        "apiVersion: gangsched.io/v1alpha1\nkind: GangschedConfiguration\n"
        "profiles:\n- {schedulerName: gangsched, backfillDepth: 1}\n"
    )
    backfill = load_config(write(tmp_path, text))["backfill"]
    assert backfill.window == float("inf")
    assert backfill == BackfillSettings(depth=1)
