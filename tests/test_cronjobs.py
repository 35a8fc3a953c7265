"""cronjobs/ as `kubectl kustomize` renders it: valid against the schemas of current
Kubernetes releases, a pod that passes the restricted Pod Security level, and deadlines that
agree with gcjob's own --timeout and the schedule. (Server-side dry runs and the RBAC on a
real server: tests/e2e/test_rbac_e2e.py.)"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from gcjob.settings import parse_duration

CRONJOBS = Path(__file__).parents[1] / "cronjobs"
RENDERED = (
    "overlays/dry-run",
    "overlays/enforce",
    "rollout",
    "rbac/hub",
    "rbac/upstream",
    "rbac/projects",
)
READ_TIMEOUT = 15  # gcjob's --read-timeout default: the request in flight when it stops
SCHEDULE_PERIOD = 300  # */5 * * * *


def render(directory: str) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl renders cronjobs/ (kubectl kustomize)"
    done = subprocess.run(
        [kubectl, "kustomize", str(CRONJOBS / directory)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def job_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]
    return spec["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else spec


def workloads() -> list[tuple[str, dict[str, Any]]]:
    return [
        (d, obj)
        for d in ("overlays/dry-run", "overlays/enforce", "rollout")
        for obj in render(d)
        if obj["kind"] in ("CronJob", "Job")
    ]


def flag(args: list[str], name: str) -> str | None:
    values = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    return values[-1] if values else None


@pytest.mark.parametrize("version", ["1.32.0", kubernetes_validate.latest_version()])
@pytest.mark.parametrize("directory", RENDERED)
def test_every_rendered_object_is_valid_for_current_releases(directory: str, version: str) -> None:
    objects = render(directory)
    assert objects
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)


@pytest.mark.parametrize(("directory", "workload"), workloads())
def test_the_pod_passes_restricted_pod_security_with_a_read_only_root(
    directory: str, workload: dict[str, Any]
) -> None:
    pod = job_spec(workload)["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert not [v for v in volumes.values() if "hostPath" in v]
    for container in pod["containers"]:
        security = container["securityContext"]
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert security["readOnlyRootFilesystem"] is True
        assert security["runAsNonRoot"] is True
        assert security["seccompProfile"] == {"type": "RuntimeDefault"}
        assert container["resources"]["limits"]["memory"]
        assert container["resources"]["requests"]["memory"]
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        for path in ("/etc/gcjob/hub", "/etc/gcjob/upstream"):
            assert mounts[path]["readOnly"] is True
            assert "secret" in volumes[mounts[path]["name"]]
        assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
        args = container["args"]
        assert args[0] == "sweep"
        # Never the pod's in-cluster identity: that would sweep the management cluster.
        assert flag(args, "hub-kubeconfig") == "/etc/gcjob/hub/kubeconfig"


@pytest.mark.parametrize(("directory", "workload"), workloads())
def test_the_deadline_leaves_room_for_timeout_and_the_request_in_flight(
    directory: str, workload: dict[str, Any]
) -> None:
    spec = job_spec(workload)
    args = spec["template"]["spec"]["containers"][0]["args"]
    timeout = parse_duration(flag(args, "timeout") or "4m").total_seconds()
    assert spec["backoffLimit"] == 0
    assert spec["activeDeadlineSeconds"] >= timeout + READ_TIMEOUT + 20
    assert spec["ttlSecondsAfterFinished"] > 0
    if workload["kind"] == "CronJob":
        cron = workload["spec"]
        assert cron["schedule"] == "*/5 * * * *"
        assert cron["concurrencyPolicy"] == "Forbid"
        assert 0 < cron["startingDeadlineSeconds"] < SCHEDULE_PERIOD
        assert spec["activeDeadlineSeconds"] < SCHEDULE_PERIOD  # over before the next run
        assert cron["successfulJobsHistoryLimit"] >= 1
        assert cron["failedJobsHistoryLimit"] >= 1


def test_only_enforce_and_the_rollout_delete_and_only_the_rollout_drains_with_brakes_on() -> None:
    args = {
        d: obj_args
        for d, w in workloads()
        for obj_args in [job_spec(w)["template"]["spec"]["containers"][0]["args"]]
    }
    assert "--delete" not in args["overlays/dry-run"]
    assert "--delete" in args["overlays/enforce"]
    assert "--delete" in args["rollout"]
    for directory in ("overlays/dry-run", "overlays/enforce"):
        assert flag(args[directory], "max-deletions") is None  # the defaults suit 5 minutes
    assert "--drain" in args["rollout"] and "--drain" not in args["overlays/enforce"]
    # Sized for a backlog and named, never switched off.
    assert flag(args["rollout"], "max-deletions") == "500"
    assert flag(args["rollout"], "max-delete-percent") == "50"
    assert flag(args["rollout"], "max-marks") == "5000"
    assert flag(args["rollout"], "max-writes") == "20000"
