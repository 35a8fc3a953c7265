"""cronjobs/ as `kubectl kustomize` renders it: valid against the schemas of current
Kubernetes releases, a pod that passes the restricted Pod Security level, and deadlines that
agree with gcjob's own --timeout and the schedule. (Server-side dry runs and the RBAC on a
real server: tests/e2e/test_rbac_e2e.py.)"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from gcjob import preflight
from gcjob.domain import REPLICATED_KINDS, REPLICATED_PLURALS
from gcjob.kube.connect import check_server_template, project_api_from_template
from gcjob.settings import parse_duration

CRONJOBS = Path(__file__).parents[1] / "cronjobs"
RENDERED = (
    "overlays/dry-run",
    "overlays/enforce",
    "rollout",
    "rbac/hub",
    "rbac/hub-serviceaccount",
    "rbac/upstream",
    "rbac/upstream-serviceaccount",
    "rbac/projects",
)
READ_TIMEOUT = 15  # gcjob's --read-timeout default: the request in flight when it stops
SCHEDULE_PERIOD = 300  # */5 * * * *


def render(directory: str, root: Path = CRONJOBS) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl renders cronjobs/ (kubectl kustomize)"
    done = subprocess.run(
        [kubectl, "kustomize", str(root / directory)],
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
    assert flag(args["rollout"], "max-deletions") == "200"
    assert flag(args["rollout"], "max-delete-percent") == "50"
    assert flag(args["rollout"], "max-marks") == "5000"
    assert flag(args["rollout"], "max-writes") == "20000"


def pod_args(obj: dict[str, Any]) -> list[str]:
    args: list[str] = job_spec(obj)["template"]["spec"]["containers"][0]["args"]
    return args


def test_nothing_renders_the_settings_themselves() -> None:
    for directory in RENDERED:
        assert not [o for o in render(directory) if o["metadata"]["name"] == "gcjob-settings"]


def copy_with_lock_namespace(tmp_path: Path, namespace: str) -> Path:
    """cronjobs/ copied, with the lock namespace set as docs/install.md says."""
    root = tmp_path / "cronjobs"
    shutil.copytree(CRONJOBS, root)
    settings = root / "settings" / "settings.yaml"
    text, count = re.subn(
        r"(?m)^  lockNamespace: .*$", f"  lockNamespace: {namespace}", settings.read_text()
    )
    assert count == 1
    settings.write_text(text)
    return root


@pytest.mark.parametrize("namespace", ["default", "gcjob-system"])
def test_the_lock_namespace_setting_moves_the_lease_role_and_the_argument_together(
    tmp_path: Path, namespace: str
) -> None:
    root = copy_with_lock_namespace(tmp_path, namespace)

    for directory in ("rbac/hub", "rbac/hub-serviceaccount"):
        namespaced = {
            (o["kind"], o["metadata"]["name"]): o["metadata"]["namespace"]
            for o in render(directory, root)
            if o["kind"] in ("Role", "RoleBinding", "ServiceAccount")
        }
        assert set(namespaced.values()) == {namespace}, (directory, namespaced)
    sa = render("rbac/hub-serviceaccount", root)
    for obj in sa:
        if obj["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            assert obj["subjects"] == [
                {"kind": "ServiceAccount", "name": "gcjob", "namespace": namespace}
            ]
    for directory in ("overlays/dry-run", "overlays/enforce", "rollout"):
        [workload] = [o for o in render(directory, root) if o["kind"] in ("CronJob", "Job")]
        args = pod_args(workload)
        assert [a for a in args if a.startswith("--lock-namespace")] == [
            f"--lock-namespace={namespace}"
        ], directory


def test_the_upstream_secret_is_optional_and_without_routes_drops_its_flag(
    tmp_path: Path,
) -> None:
    for _, workload in workloads():
        volumes = {v["name"]: v for v in job_spec(workload)["template"]["spec"]["volumes"]}
        assert volumes["upstream-kubeconfig"]["secret"]["optional"] is True
        assert volumes["hub-kubeconfig"]["secret"].get("optional") is not True
    shutil.copytree(CRONJOBS, tmp_path / "cronjobs")
    for directory in ("overlays/enforce", "rollout"):
        mine = tmp_path / "mine" / directory
        mine.mkdir(parents=True)
        up = "../" * (directory.count("/") + 2)
        (mine / "kustomization.yaml").write_text(
            f"resources: [{up}cronjobs/{directory}]\n"
            f"components: [{up}cronjobs/components/without-routes]\n"
        )
        [workload] = [
            o for o in render(directory, tmp_path / "mine") if o["kind"] in ("CronJob", "Job")
        ]
        args = pod_args(workload)
        [plain] = [o for o in render(directory) if o["kind"] in ("CronJob", "Job")]
        assert not [a for a in args if a.startswith("--upstream")]
        assert args == [a for a in pod_args(plain) if not a.startswith("--upstream-kubeconfig")] + [
            "--sweep=companions",
            "--sweep=bindings",
        ]


def test_an_own_kustomization_sets_the_image_by_its_rendered_name(tmp_path: Path) -> None:
    """docs/install.md: over a shipped overlay, the image is named as the base renders it."""
    shutil.copytree(CRONJOBS, tmp_path / "cronjobs")
    (tmp_path / "mine").mkdir()
    [shipped] = {
        c["image"] for _, w in workloads() for c in job_spec(w)["template"]["spec"]["containers"]
    }
    assert shipped == "ghcr.io/datum-cloud/gcjob:0.1.0"
    for directory in ("overlays/dry-run", "rollout"):
        (tmp_path / "mine" / "kustomization.yaml").write_text(
            f"resources: [../cronjobs/{directory}]\n"
            "images:\n"
            "  - name: ghcr.io/datum-cloud/gcjob\n"
            "    newName: registry.example.com/gcjob\n"
            "    newTag: 0.2.0\n"
        )
        [workload] = [o for o in render("mine", tmp_path) if o["kind"] in ("CronJob", "Job")]
        [container] = job_spec(workload)["template"]["spec"]["containers"]
        assert container["image"] == "registry.example.com/gcjob:0.2.0", directory


def test_the_documented_server_template_patch_renders_a_template_gcjob_accepts(
    tmp_path: Path,
) -> None:
    """docs/install.md's kustomization for --upstream-server-template, rendered as written."""
    install = (CRONJOBS.parent / "docs" / "install.md").read_text(encoding="utf-8")
    found = re.search(r"```yaml\n# my-gcjob/kustomization.yaml\n(.*?)```", install, re.S)
    assert found
    shutil.copytree(CRONJOBS, tmp_path / "cronjobs")
    (tmp_path / "my-gcjob").mkdir()
    (tmp_path / "my-gcjob" / "kustomization.yaml").write_text(found.group(1))

    [cronjob] = [o for o in render("my-gcjob", tmp_path) if o["kind"] == "CronJob"]

    template = flag(pod_args(cronjob), "upstream-server-template")
    assert template is not None
    check_server_template(template)  # raises ConfigError on a template gcjob refuses
    assert project_api_from_template(template) == "https://milo.example"


def granted_verbs(directory: str) -> dict[tuple[str, str], set[str]]:
    """(group, plural) -> the verbs the rendered ClusterRoles and Roles grant on it."""
    verbs: dict[tuple[str, str], set[str]] = {}
    for doc in render(directory):
        if doc["kind"] not in ("ClusterRole", "Role"):
            continue
        for rule in doc["rules"]:
            for group in rule["apiGroups"]:
                for plural in rule["resources"]:
                    verbs.setdefault((group, plural), set()).update(rule["verbs"])
    return verbs


@pytest.mark.parametrize("directory", ["rbac/hub", "rbac/upstream", "rbac/projects"])
def test_no_rendered_rule_is_a_wildcard(directory: str) -> None:
    for (group, plural), verbs in granted_verbs(directory).items():
        assert "*" not in (group, plural, *verbs), (directory, group, plural, verbs)


def test_the_copies_sweep_is_granted_exactly_the_verbs_it_sends() -> None:
    """On the hub: read, mark and delete each kind NSO copies (what the sweep asks for itself,
    preflight.COPIES_NEEDS); upstream: only reads, never a Secret (not without
    --read-upstream-secrets); Milo: reading projects (preflight.PROJECT_NEEDS), nothing else."""
    hub = granted_verbs("rbac/hub")
    for resource, verbs in preflight.COPIES_NEEDS:
        granted = hub[(resource.group, resource.plural)]
        assert set(verbs) <= granted, (resource.plural, granted)
        if (resource.group, resource.kind) in REPLICATED_KINDS:
            # Read, mark, delete: no create, update or anything broader.
            assert granted == set(preflight.READ_DELETE), (resource.plural, granted)

    upstream = granted_verbs("rbac/upstream")
    for group, kind in REPLICATED_KINDS:
        plural = REPLICATED_PLURALS[(group, kind)]
        if kind == "Secret":
            assert (group, plural) not in upstream  # customers' Secrets: only on opt-in
        else:
            assert upstream[(group, plural)] == {"get", "list"}, plural
    assert {v for verbs in upstream.values() for v in verbs} <= {"get", "list"}  # no writes

    projects = granted_verbs("rbac/projects")
    assert projects == {
        (resource.group, resource.plural): set(verbs) for resource, verbs in preflight.PROJECT_NEEDS
    }
