"""deploy/ installed into the live tests' API server, and `gangsched run` started as a pod of that Deployment
would run: from the installed wheel, as the image's user, with the in-cluster configuration.

There is no kubelet and no container runtime, so a replica is a process made to look like the container:
a private mount namespace where /var/run/secrets/kubernetes.io/serviceaccount holds the ServiceAccount's
token (from the TokenRequest API, as kubelet projects it), the cluster's CA and the namespace;
KUBERNETES_SERVICE_HOST/PORT in its environment, as kubelet sets them; uid 65532; the Deployment's container
args, with the ConfigMap's config file. Nothing names a kubeconfig: the process finds its identity as it
would in the pod.

    objects = install_deploy(control_plane)
    replica = InClusterReplica(control_plane, installed_gangsched, workdir, "--scheduler-name", "x")
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from gangsched.live.controlplane import LocalControlPlane, ManagedProcess

from ..conftest import REPO, as_image_user, image_env

DEPLOY = REPO / "deploy"
NAMESPACE = "gangsched-system"
ACCOUNT = "gangsched"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

# kind -> (API path prefix, plural, namespaced) for what deploy/ holds.
PATHS = {
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Service": ("/api/v1", "services", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
}


def deploy_objects() -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted(DEPLOY.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc is not None
    ]


def object_path(obj: dict[str, Any], with_name: bool = True) -> str:
    prefix, plural, namespaced = PATHS[obj["kind"]]
    parts = [prefix]
    if namespaced:
        parts += ["namespaces", obj["metadata"]["namespace"]]
    parts.append(plural)
    if with_name:
        parts.append(obj["metadata"]["name"])
    return "/".join(parts)


def put_object(cp: LocalControlPlane, obj: dict[str, Any]) -> None:
    """Create `obj` as the admin, or replace it if it exists (kubectl apply, simply)."""
    code, answer = cp.request("POST", object_path(obj, with_name=False), obj)
    if code == 409:
        code, current = cp.request("GET", object_path(obj))
        assert code == 200, current
        body = {
            **obj,
            "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
        }
        code, answer = cp.request("PUT", object_path(obj), body)
    assert code in (200, 201), (obj["kind"], obj["metadata"]["name"], answer)


def install_deploy(cp: LocalControlPlane) -> list[dict[str, Any]]:
    """Every object of deploy/*.yaml, in file order (Namespace first), into the API server."""
    objects = deploy_objects()
    for obj in objects:
        put_object(cp, obj)
    return objects


def service_account_token(cp: LocalControlPlane, seconds: int = 3600) -> str:
    """A token for the deployed ServiceAccount, from the TokenRequest API (what kubelet projects)."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds}}  # fmt: skip
    code, answer = cp.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token", body)
    assert code == 201, answer
    return str(answer["status"]["token"])


def config_file(objects: list[dict[str, Any]]) -> str:
    (configmap,) = [o for o in objects if o["kind"] == "ConfigMap"]
    return str(configmap["data"]["config.yaml"])


def container_args(objects: list[dict[str, Any]]) -> list[str]:
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])


class PodFiles:
    """What kubelet mounts into the pod, in a directory the image's user can read: the ServiceAccount
    volume (token, ca.crt, namespace) and the ConfigMap volume (config.yaml)."""

    def __init__(self, cp: LocalControlPlane, objects: list[dict[str, Any]]) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="gangsched-pod-"))
        self.root.chmod(0o755)
        self.account = self.root / "serviceaccount"
        self.account.mkdir(mode=0o755)
        (self.account / "token").write_text(service_account_token(cp))
        (self.account / "namespace").write_text(NAMESPACE)
        shutil.copy(cp.ca_file, self.account / "ca.crt")
        self.config = self.root / "config.yaml"
        self.config.write_text(config_file(objects))
        for path in (*self.account.iterdir(), self.config):
            path.chmod(0o644)
        self.token = (self.account / "token").read_text()

    def kubeconfig(self, server: str) -> Path:
        """The same identity as a kubeconfig (for requests the test makes as the ServiceAccount)."""
        path = self.root / "sa-kubeconfig"
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": server,
                                                   "certificate-authority": str(self.account / "ca.crt")}}],
            "users": [{"name": ACCOUNT, "user": {"token": self.token}}],
            "contexts": [{"name": "sa", "context": {"cluster": "c", "user": ACCOUNT}}],
            "current-context": "sa",
        }))  # fmt: skip
        path.chmod(0o644)
        return path

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def in_cluster_replica(
    cp: LocalControlPlane,
    gangsched: Path,
    files: PodFiles,
    args: list[str],
    log_path: Path,
) -> ManagedProcess:
    """`gangsched <args>` as a replica of the Deployment (see the module docstring); started, not waited
    for. The caller stops it (`stop(timeout=0)` is kill -9)."""
    if os.geteuid() != 0:
        raise RuntimeError("a replica needs root to set up its mount namespace (it then runs as uid 65532)")
    host, port = cp.server.removeprefix("https://").rsplit(":", 1)
    env = {
        **image_env(files.root / "no-home"),
        "KUBERNETES_SERVICE_HOST": host,
        "KUBERNETES_SERVICE_PORT": port,
    }
    # In a private mount namespace: an empty /run (the host's stays untouched), the ServiceAccount volume at
    # its well-known path; then the image's user and environment. exec all the way: one process to kill.
    mount = 'mount -t tmpfs tmpfs /run && mkdir -p "$1" && mount --bind "$0" "$1" && shift && exec "$@"'
    command = as_image_user(["env", "-i", *(f"{k}={v}" for k, v in env.items()), str(gangsched), *args])
    proc = ManagedProcess(
        "gangsched-in-cluster",
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(files.account),
         SERVICE_ACCOUNT_DIR, *command],
        log_path,
    )  # fmt: skip
    proc.start()
    return proc
