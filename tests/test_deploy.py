"""What a cluster install is made of, without a cluster: deploy/*.yaml, the Helm chart rendered by a real
`helm` (scripts/helm-binary.sh), and the wheel the image is built from, run as the image's user.

No container runtime can run here (and no base image can be fetched), so the image itself is not built in
the tests: the wheel test does what its Dockerfile does (a clean venv with only the wheel, non-root, nothing
written where the image's read-only root filesystem would refuse it). tests/live/test_deploy.py installs
deploy/ into a real API server."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.live.config import load_config
from gangsched.live.controlplane import free_port

from .conftest import REPO, as_image_user, image_env, tree_state, unavailable
from .live.deployment import DEPLOY, NAMESPACE, deploy_objects

# Labels and annotations only the chart adds (its own bookkeeping); everything else must be equal.
CHART_ONLY_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by")
CHART_ONLY_ANNOTATIONS = ("checksum/config",)


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


@pytest.fixture(scope="session")
def helm() -> str:
    done = subprocess.run(
        [str(REPO / "scripts" / "helm-binary.sh")], capture_output=True, text=True, timeout=3600, check=False
    )
    if done.returncode != 0:
        unavailable(f"scripts/helm-binary.sh exited with {done.returncode}:\n{done.stderr[-2000:]}")
    return dict(line.split("=", 1) for line in done.stdout.splitlines())["helm"]


def render(helm: str, *sets: str) -> list[dict[str, Any]]:
    args = [helm, "template", "gangsched", str(DEPLOY / "chart"), "--namespace", NAMESPACE]
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=60).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc is not None]


def normalized(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` without the chart's own labels and annotations; a ConfigMap's config file parsed (the chart
    writes it with toYaml: same content, another key order)."""
    obj = json.loads(json.dumps(obj))
    metas = [obj["metadata"]]
    if obj["kind"] == "Deployment":
        metas.append(obj["spec"]["template"]["metadata"])
    for meta in metas:
        for key in CHART_ONLY_LABELS:
            meta.get("labels", {}).pop(key, None)
        for key in CHART_ONLY_ANNOTATIONS:
            meta.get("annotations", {}).pop(key, None)
        if meta.get("annotations") == {}:
            del meta["annotations"]
    if obj["kind"] == "ConfigMap":
        obj["data"] = {k: yaml.safe_load(v) for k, v in obj["data"].items()}
    return obj


def identity(obj: dict[str, Any]) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def test_the_chart_renders_deploy(helm: str) -> None:
    subprocess.run([helm, "lint", "--strict", str(DEPLOY / "chart")], check=True, capture_output=True)
    rendered = {identity(o): normalized(o) for o in render(helm, "createNamespace=true")}
    plain = {identity(o): normalized(o) for o in deploy_objects()}
    assert sorted(rendered) == sorted(plain)
    for key, obj in plain.items():
        assert rendered[key] == obj, key
    # The chart's own labels are there (what the comparison leaves out is really only that).
    deployment = by_kind(render(helm), "Deployment")[0]
    assert deployment["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    # With `helm install --create-namespace` the chart leaves the Namespace to helm.
    assert not by_kind(render(helm), "Namespace")


def test_chart_values_move_together(helm: str) -> None:
    """A scheduler name, Lease name or image given as values reaches every object that names it."""
    objects = render(
        helm, "schedulerName=gpu", "leaderElection.leaseName=gpu-lease", "image.repository=r.example/gs",
        "image.tag=1.2.3", "config.featureGates.CompositePodGroup=false", "recoveryPolicy=release-after:600",
    )  # fmt: skip
    config = yaml.safe_load(by_kind(objects, "ConfigMap")[0]["data"]["config.yaml"])
    assert config["profiles"] == [{"schedulerName": "gpu", "recoveryPolicy": "release-after:600"}]
    assert config["leaderElection"]["resourceName"] == "gpu-lease"
    assert config["featureGates"] == {"CompositePodGroup": False}
    role = by_kind(objects, "Role")[0]
    assert role["rules"][1]["resourceNames"] == ["gpu-lease"]
    container = by_kind(objects, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "r.example/gs:1.2.3"


def test_the_deployed_configuration_is_valid_and_agrees_with_rbac(tmp_path: Path) -> None:
    objects = deploy_objects()
    (configmap,) = by_kind(objects, "ConfigMap")
    path = tmp_path / "config.yaml"
    path.write_text(configmap["data"]["config.yaml"])
    settings = load_config(path)
    assert settings["leader_elect"] and settings["bind_address"] == "0.0.0.0"
    assert settings["scheduler_name"] == "gangsched"
    # The Lease it elects with is the one its Role lets it update, in the namespace it runs in.
    (role,) = by_kind(objects, "Role")
    assert role["metadata"]["namespace"] == settings["lease_namespace"] == NAMESPACE
    assert role["rules"][1]["resourceNames"] == [settings["lease_name"]]
    # Probes and the Service reach the port the configuration serves on.
    (deployment,) = by_kind(objects, "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"name": "metrics", "containerPort": settings["metrics_port"]}]
    assert container["args"] == ["run", "--config=/etc/gangsched/config.yaml"]
    assert container["volumeMounts"][0]["mountPath"] == "/etc/gangsched"


# --- the wheel, as the image runs it ----------------------------------------------------------------------


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the image's user can read (the tests' tmp_path is private to root)."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="gangsched-image-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_wheel_runs_as_the_image_user_and_writes_nothing(
    installed_gangsched: Path, shared_dir: Path
) -> None:
    """`gangsched run` from a clean venv holding only the wheel, as uid 65532, serves /healthz (alive while
    its API server is unreachable) and /readyz 503 (not synced), and writes nothing into its installation."""
    venv = installed_gangsched.parents[1]
    kubeconfig = shared_dir / "kubeconfig"
    unreachable = f"https://127.0.0.1:{free_port()}"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": unreachable, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": secrets.token_hex(8)}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}], "current-context": "x",
    }))  # fmt: skip
    kubeconfig.chmod(0o644)
    before = tree_state(venv)
    port = free_port()
    log = shared_dir / "gangsched.log"
    with log.open("wb") as out:
        args = [str(installed_gangsched), "run", f"--kubeconfig={kubeconfig}", "--bind-address=127.0.0.1",
                f"--metrics-port={port}"]  # fmt: skip
        proc = subprocess.Popen(
            as_image_user(args),
            env=image_env(shared_dir / "no-home"),
            cwd="/",
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while _get(f"http://127.0.0.1:{port}/healthz") != 200:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert _get(f"http://127.0.0.1:{port}/readyz") == 503
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            assert b"gangsched_schedule_attempts_total" in resp.read()
    finally:
        proc.terminate()
        code = proc.wait(15)  # SIGTERM ends it at once, though it never reached its API server
    assert code == 0, log.read_text()
    assert tree_state(venv) == before
    assert not (shared_dir / "no-home").exists()
