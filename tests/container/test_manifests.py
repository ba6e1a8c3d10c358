"""deploy/kubernetes/ without a cluster: the YAML parses, the kustomization names every file, and
the manifests agree with the image (uid, port, drain timeout, seccomp profile) and with each
other (selectors, probes, scrape annotations).

  /usr/bin/python3 -m pytest -q tests/container/test_manifests.py
"""

from __future__ import annotations

import json
import pathlib
import re

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "kubernetes"


def load(name: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all((K8S / name).read_text()) if doc is not None]


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict]:
    kustomization = load("kustomization.yaml")[0]
    assert kustomization["kind"] == "Kustomization"
    found = {}
    for resource in kustomization["resources"]:
        for obj in load(resource):
            assert {"apiVersion", "kind", "metadata"} <= obj.keys(), resource
            found[(obj["kind"], obj["metadata"]["name"])] = obj
    # Every manifest in the folder is listed in the kustomization.
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert on_disk == listed, (on_disk, listed)
    return found


def dockerfile_uid() -> int:
    return int(re.search(r"useradd .*--uid (\d+)", (REPO / "Dockerfile").read_text()).group(1))


def dockerfile_drain_ms() -> int:
    return int(re.search(r"--shutdown_timeout_ms=(\d+)", (REPO / "Dockerfile").read_text())[1])


def flag(args: list[str], name: str) -> str | None:
    """The last --name=value in args (gflags: a later flag wins)."""
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    return values[-1] if values else None


def test_statefulset(objects):
    sts = objects[("StatefulSet", "shardis")]
    spec = sts["spec"]
    assert spec["replicas"] == 1
    assert ("Service", spec["serviceName"]) in objects
    pod = spec["template"]
    assert spec["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()

    notes = pod["metadata"]["annotations"]
    assert notes["prometheus.io/scrape"] == "true"
    assert notes["prometheus.io/port"] == "6379"
    assert notes["prometheus.io/path"] == "/metrics"

    podspec = pod["spec"]
    ctx = podspec["securityContext"]
    assert ctx["runAsNonRoot"] is True
    assert ctx["runAsUser"] == dockerfile_uid() and ctx["fsGroup"] == dockerfile_uid()
    seccomp = ctx["seccompProfile"]
    assert seccomp["type"] == "Localhost"
    assert (K8S / "seccomp" / pathlib.Path(seccomp["localhostProfile"]).name).is_file()

    (container,) = podspec["containers"]
    assert container["ports"] == [{"name": "redis", "containerPort": 6379}]
    drain_ms = int(flag(container.get("args", []), "shutdown_timeout_ms") or dockerfile_drain_ms())
    assert podspec["terminationGracePeriodSeconds"] * 1000 > drain_ms
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "redis"}, probe
    resources = container["resources"]
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= resources[kind].keys(), kind
    # No --threads / --maxmemory: shardis takes them from the CPU quota and the memory limit.
    assert flag(container.get("args", []), "threads") is None
    assert flag(container.get("args", []), "maxmemory") is None
    # Active defragmentation on (Redis' spelling: the name and its value as two arguments), so
    # the resident memory the limit counts falls back after churn.
    args = container["args"]
    assert args[args.index("--activedefrag") + 1] == "yes"
    assert container["securityContext"]["allowPrivilegeEscalation"] is False

    (claim,) = spec["volumeClaimTemplates"]
    (mount,) = container["volumeMounts"]
    assert mount == {"name": claim["metadata"]["name"], "mountPath": "/data"}
    assert claim["spec"]["resources"]["requests"]["storage"]


def test_services(objects):
    pod_labels = objects[("StatefulSet", "shardis")]["spec"]["template"]["metadata"]["labels"]
    headless = objects[("Service", "shardis-headless")]["spec"]
    client = objects[("Service", "shardis")]["spec"]
    assert headless["clusterIP"] == "None"
    assert client.get("clusterIP") != "None"
    for svc in (headless, client):
        assert svc["selector"].items() <= pod_labels.items()
        assert svc["ports"] == [{"name": "redis", "port": 6379, "targetPort": "redis"}]


def test_seccomp_profile_allows_io_uring():
    profile = json.loads((K8S / "seccomp" / "shardis-io-uring.json").read_text())
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    denied = {name for rule in profile["syscalls"] if rule["action"] != "SCMP_ACT_ALLOW"
              for name in rule["names"]}
    assert not {"io_uring_setup", "io_uring_enter", "io_uring_register"} & denied
    assert {"mount", "unshare", "setns", "bpf", "ptrace", "kexec_load"} <= denied
