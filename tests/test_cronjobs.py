"""cronjobs/ as `kubectl kustomize` renders it: valid against the schemas of current
Kubernetes releases, a pod that passes the restricted Pod Security level, and deadlines that
agree with gcjob's own --timeout and the schedule. (Server-side dry runs and the RBAC on a
real server: tests/e2e/test_rbac_e2e.py.)"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from gcjob import preflight, restore
from gcjob.domain import REPLICATED_KINDS, REPLICATED_PLURALS
from gcjob.kube.connect import check_server_template, project_api_from_template
from gcjob.kube.resources import NAMESPACES
from gcjob.model import Sweep
from gcjob.settings import NEVER_ENFORCED, Settings, parse_duration
from gcjob.shard import Shard
from gcjob.sweeps import PREFLIGHT, REGISTRY, copies
from testbed import servers

CRONJOBS = Path(__file__).parents[1] / "cronjobs"
RENDERED = (
    "overlays/dry-run",
    "overlays/enforce",
    "overlays/sharded",
    "rollout",
    "once",
    "restore",
    "storage",
    "rbac/hub",
    "rbac/hub-sharded",
    "rbac/hub-sharded-serviceaccount",
    "rbac/hub-serviceaccount",
    "rbac/hub-without-secrets",
    "rbac/hub-restore",
    "rbac/upstream",
    "rbac/upstream-serviceaccount",
    "rbac/projects",
    "rbac/projects-serviceaccount",
)
SWEEPING = (
    "overlays/dry-run",
    "overlays/enforce",
    "rollout",
    "once",
    "overlays/sharded",
)  # `gcjob sweep` pods
# The kustomizations an install's own overlays stand on (docs/install.md, "Your overlays"), and
# what of each they render: with a copy of cronjobs/settings, and cronjobs/components/settings.
INSTALLED = (
    *SWEEPING[:3],
    "restore",
    "rbac/hub",
    "rbac/hub-serviceaccount",
    "rbac/hub-sharded-serviceaccount",
    "rbac/hub-restore",
)
READ_TIMEOUT = 15  # gcjob's --read-timeout default: the request in flight when it stops
SCHEDULE_PERIOD = 300  # */5 * * * *


def render(directory: str, root: Path = CRONJOBS) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(servers.kubectl()), "kustomize", str(root / directory)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def job_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]
    return spec["jobTemplate"]["spec"] if obj["kind"] == "CronJob" else spec


def workloads(directories: tuple[str, ...] = SWEEPING) -> list[tuple[str, dict[str, Any]]]:
    return [(d, obj) for d in directories for obj in render(d) if obj["kind"] in ("CronJob", "Job")]


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


@pytest.mark.parametrize(("directory", "workload"), workloads((*SWEEPING, "restore")))
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
        assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
        args = container["args"]
        if directory == "restore":
            assert args[0] == "restore"
            secrets = ("/etc/gcjob/restore",)
        else:
            assert args[0] == "sweep"
            secrets = ("/etc/gcjob/hub", "/etc/gcjob/upstream")
        for path in secrets:
            assert mounts[path]["readOnly"] is True
            assert "secret" in volumes[mounts[path]["name"]]
        # Never the pod's in-cluster identity: that would sweep the management cluster.
        assert flag(args, "hub-kubeconfig") == f"{secrets[0]}/kubeconfig"
        # Writable: /tmp, and the deletion record's claim where the run records to it.
        writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
        assert writable <= {"/tmp", flag(args, "record-deletions")}


@pytest.mark.parametrize(("directory", "workload"), workloads())
def test_the_deadline_leaves_room_for_timeout_and_the_request_in_flight(
    directory: str, workload: dict[str, Any]
) -> None:
    spec = job_spec(workload)
    args = spec["template"]["spec"]["containers"][0]["args"]
    timeout = parse_duration(flag(args, "timeout") or "4m").total_seconds()
    # No pod retry: the next schedule runs again. An Indexed Job's shards each fail on their
    # own (backoffLimit would fail the whole Job, and stop the other shards, at the first).
    if spec.get("completionMode") == "Indexed":
        assert "backoffLimit" not in spec and spec["backoffLimitPerIndex"] == 0
    else:
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


def test_only_enforce_the_rollout_and_a_one_off_delete_and_only_the_rollout_drains() -> None:
    args = {
        d: obj_args
        for d, w in workloads()
        for obj_args in [job_spec(w)["template"]["spec"]["containers"][0]["args"]]
    }
    assert "--delete" not in args["overlays/dry-run"]
    assert "--delete" in args["overlays/enforce"]
    assert "--delete" in args["rollout"]
    assert "--delete" in args["once"]  # the enforcing CronJob's
    for directory in ("overlays/dry-run", "overlays/enforce"):
        assert flag(args[directory], "max-deletions") is None  # the defaults suit 5 minutes
    assert "--drain" in args["rollout"] and "--drain" not in args["overlays/enforce"]
    # Sized for a backlog and named, never switched off.
    assert flag(args["rollout"], "max-deletions") == "200"
    # The breaker weighs every orphan pending: the rollout Job says, in its arguments, that it
    # clears a backlog of any share (issue 46 item 10); the CronJob's runs keep the default.
    assert flag(args["rollout"], "max-delete-percent") == "100"
    assert flag(args["rollout"], "drain-pace") == "50"
    for directory in ("overlays/dry-run", "overlays/enforce"):
        assert flag(args[directory], "max-delete-percent") is None
    assert flag(args["rollout"], "max-marks") == "5000"
    assert flag(args["rollout"], "max-writes") == "20000"


def pod_args(obj: dict[str, Any]) -> list[str]:
    args: list[str] = job_spec(obj)["template"]["spec"]["containers"][0]["args"]
    return args


def test_nothing_renders_the_settings_themselves() -> None:
    assert render("settings") == []  # local to kustomize
    for directory in RENDERED:
        assert not [o for o in render(directory) if o["metadata"]["name"] == "gcjob-settings"]


def own_overlays(tmp_path: Path, edit: dict[str, str] | None = None) -> Path:
    """docs/install.md's layout: the clone's cronjobs/ under gcjob/, and beside it my-gcjob/ with
    a copy of cronjobs/settings (its values changed as `edit` says) and one overlay for each
    of INSTALLED, named like it, listing that copy and cronjobs/components/settings."""
    shutil.copytree(CRONJOBS, tmp_path / "gcjob" / "cronjobs")
    mine = tmp_path / "my-gcjob"
    shutil.copytree(CRONJOBS / "settings", mine / "settings")
    settings = mine / "settings" / "settings.yaml"
    text = settings.read_text()
    for key, value in (edit or {}).items():
        text, count = re.subn(rf"(?m)^  {key}: .*$", f"  {key}: {value}", text)
        assert count == 1, key
    settings.write_text(text)
    for directory in INSTALLED:
        overlay = mine / directory
        overlay.mkdir(parents=True, exist_ok=True)
        up = "../" * (directory.count("/") + 2)
        (overlay / "kustomization.yaml").write_text(
            f"resources: [{up}gcjob/cronjobs/{directory}, {up[3:]}settings]\n"
            f"components: [{up}gcjob/cronjobs/components/settings]\n"
        )
    return mine


def test_the_shipped_settings_are_what_cronjobs_renders_without_them(tmp_path: Path) -> None:
    """A copy of cronjobs/settings left as it is changes nothing: its values are the ones the
    manifests carry (so an install's overlays differ from cronjobs/ only by what it set)."""
    mine = own_overlays(tmp_path)
    for directory in INSTALLED:
        assert render(directory, mine) == render(directory), directory


@pytest.mark.parametrize("namespace", ["default", "gcjob-system"])
def test_the_settings_move_the_lease_role_the_identities_and_the_argument_together(
    tmp_path: Path, namespace: str
) -> None:
    image = "registry.example.com/gcjob@sha256:" + "0" * 64
    mine = own_overlays(tmp_path, {"lockNamespace": namespace, "image": image})

    hub_rbac = ("rbac/hub", "rbac/hub-serviceaccount", "rbac/hub-sharded-serviceaccount")
    for directory in (*hub_rbac, "rbac/hub-restore"):
        rendered = render(directory, mine)
        namespaced = {
            (o["kind"], o["metadata"]["name"]): o["metadata"]["namespace"]
            for o in rendered
            if o["kind"] in ("Role", "RoleBinding", "ServiceAccount")
        }
        assert namespaced and set(namespaced.values()) == {namespace}, (directory, namespaced)
        for obj in rendered:
            if obj["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            for subject in obj["subjects"]:
                if directory == "rbac/hub":
                    assert subject == {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "User",
                        "name": "gcjob",
                    }
                else:
                    assert subject["kind"] == "ServiceAccount"
                    assert subject["namespace"] == namespace, (directory, obj)
    for directory in ("overlays/dry-run", "overlays/enforce", "rollout", "restore"):
        [workload] = [o for o in render(directory, mine) if o["kind"] in ("CronJob", "Job")]
        [container] = job_spec(workload)["template"]["spec"]["containers"]
        assert container["image"] == image, directory
        locks = [a for a in pod_args(workload) if a.startswith("--lock-namespace")]
        expected = [] if directory == "restore" else [f"--lock-namespace={namespace}"]
        assert locks == expected, directory
    # The management cluster's ServiceAccount keeps the namespace `-n` gives it.
    [account] = [o for o in render("overlays/dry-run", mine) if o["kind"] == "ServiceAccount"]
    assert "namespace" not in account["metadata"]


def with_components(tmp_path: Path, directory: str, *components: str) -> list[dict[str, Any]]:
    """What `directory` renders in a kustomization of one's own that adds
    cronjobs/components/`components` to it."""
    if not (tmp_path / "cronjobs").exists():
        shutil.copytree(CRONJOBS, tmp_path / "cronjobs")
    mine = tmp_path / "mine" / "-".join(components) / directory
    mine.mkdir(parents=True, exist_ok=True)
    up = "../" * (directory.count("/") + 3)
    listed = ", ".join(f"{up}cronjobs/components/{c}" for c in components)
    (mine / "kustomization.yaml").write_text(
        f"resources: [{up}cronjobs/{directory}]\ncomponents: [{listed}]\n"
    )
    return render(directory, tmp_path / "mine" / "-".join(components))


def with_component(tmp_path: Path, directory: str, component: str) -> dict[str, Any]:
    """The CronJob or Job of `directory` with cronjobs/components/`component` added to it."""
    rendered = with_components(tmp_path, directory, component)
    [workload] = [o for o in rendered if o["kind"] in ("CronJob", "Job")]
    return workload


def test_the_upstream_secret_is_optional_and_without_routes_drops_its_flag(
    tmp_path: Path,
) -> None:
    for _, workload in workloads():
        volumes = {v["name"]: v for v in job_spec(workload)["template"]["spec"]["volumes"]}
        assert volumes["upstream-kubeconfig"]["secret"]["optional"] is True
        assert volumes["hub-kubeconfig"]["secret"].get("optional") is not True
    for directory in ("overlays/enforce", "rollout"):
        workload = with_component(tmp_path, directory, "without-routes")
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
    """docs/install.md's overlay for --upstream-server-template, rendered as written, in the
    layout it is written for (my-gcjob/ beside the clone gcjob/)."""
    install = (CRONJOBS.parent / "docs" / "install.md").read_text(encoding="utf-8")
    found = re.search(r"```yaml\n# my-gcjob/cronjob/kustomization.yaml\n(.*?)```", install, re.S)
    assert found
    mine = own_overlays(tmp_path)
    (mine / "cronjob").mkdir()
    (mine / "cronjob" / "kustomization.yaml").write_text(found.group(1))

    [cronjob] = [o for o in render("cronjob", mine) if o["kind"] == "CronJob"]

    template = flag(pod_args(cronjob), "upstream-server-template")
    assert template is not None
    check_server_template(template)  # raises ConfigError on a template gcjob refuses
    assert project_api_from_template(template) == "https://milo.example"


def test_the_documented_overlays_without_secrets_render_routes_alone_and_no_secret(
    tmp_path: Path,
) -> None:
    """docs/install.md's overlay of section c, as written for the hub and for the CronJob."""
    install = (CRONJOBS.parent / "docs" / "install.md").read_text(encoding="utf-8")
    found = re.search(r"```yaml\n# my-gcjob/hub/kustomization.yaml.*?\n(.*?)```", install, re.S)
    assert found
    mine = own_overlays(tmp_path)
    for name, stands_on in (
        ("hub", "rbac/hub-serviceaccount"),
        ("cronjob", "overlays/enforce"),
        ("rollout", "rollout"),
    ):
        (mine / name).mkdir(exist_ok=True)
        text = found.group(1).replace("cronjobs/rbac/hub-serviceaccount", f"cronjobs/{stands_on}")
        (mine / name / "kustomization.yaml").write_text(text)
    hub = render("hub", mine)
    assert not [
        rule
        for obj in hub
        if obj["kind"] in ("ClusterRole", "Role")
        for rule in obj["rules"]
        if "secrets" in rule["resources"]
    ]
    for name in ("cronjob", "rollout"):
        [workload] = [o for o in render(name, mine) if o["kind"] in ("CronJob", "Job")]
        assert flag(pod_args(workload), "sweep") == "routes"
        assert [a for a in pod_args(workload) if a.startswith("--sweep")] == ["--sweep=routes"]


def granted_verbs(directory: str) -> dict[tuple[str, str], set[str]]:
    """(group, plural) -> the verbs the rendered ClusterRoles and Roles grant on it."""
    return granted_by(render(directory))


def granted_by(rendered: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    """(group, plural) -> the verbs these ClusterRoles and Roles grant on it."""
    verbs: dict[tuple[str, str], set[str]] = {}
    for doc in rendered:
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


def test_the_copies_sweep_is_granted_exactly_the_verbs_it_sends(tmp_path: Path) -> None:
    """On the hub: read and mark each kind NSO copies (what the sweep asks for itself, its
    REGISTERED needs), and delete them only with cronjobs/components/enforce-copies (its
    `enforcing` needs: issue 51 item 6, the report-only sweep deletes nothing); upstream: only
    reads, never a Secret (not without --read-upstream-secrets); Milo: reading projects
    (preflight.PROJECT_NEEDS), nothing else."""
    hub = granted_verbs("rbac/hub")
    enforcing = granted_by(with_components(tmp_path, "rbac/hub", "enforce-copies"))
    others = {  # what another sweep deletes: granted whatever copies does
        (r.group, r.plural)
        for registered in REGISTRY
        if registered is not copies.REGISTERED
        for r, verbs in registered.needs
        if "delete" in verbs
    }
    for resource, verbs in copies.REGISTERED.needs:
        key = (resource.group, resource.plural)
        assert set(verbs) <= hub[key], (resource.plural, hub[key])
        if (resource.group, resource.kind) in REPLICATED_KINDS and key not in others:
            # Read and mark: no delete, create, update or anything broader.
            assert hub[key] == set(preflight.READ_MARK), (resource.plural, hub[key])
            assert enforcing[key] == set(preflight.READ_DELETE), (resource.plural, enforcing[key])
    for resource, verbs in copies.REGISTERED.enforcing:
        assert set(verbs) <= enforcing[(resource.group, resource.plural)], resource.plural
    # Nothing else changes: the component adds the copies' deletes and only those.
    assert {k: v for k, v in enforcing.items() if v != hub.get(k)} == {
        (r.group, r.plural): set(preflight.READ_DELETE)
        for r, _ in copies.REGISTERED.enforcing
        if (r.group, r.plural) not in others
    }

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


def test_enforce_copies_enforces_every_sweep_in_the_cronjob_and_the_rollout(tmp_path: Path) -> None:
    """`--enforce` names every sweep a run enforces: the component adds the copies sweep to the
    ones enforced by default, never enforcing copies alone."""
    wanted = [f"--enforce={s.value}" for s in (*Settings().enforce, copies.REGISTERED.name)]
    for directory in ("overlays/enforce", "rollout"):
        workload = with_component(tmp_path, directory, "enforce-copies")
        [plain] = [o for o in render(directory) if o["kind"] in ("CronJob", "Job")]
        assert pod_args(workload) == pod_args(plain) + wanted, directory


def test_the_documented_overlays_enforcing_copies_grant_its_deletes_and_enforce_it(
    tmp_path: Path,
) -> None:
    """docs/install.md's overlay of section 8 that enforces copies, for the hub (both
    identities), the CronJob and the rollout Job."""
    text = documented_yaml("install.md", "my-gcjob/hub/kustomization.yaml, copies enforced")
    mine = own_overlays(tmp_path)
    for name, stands_on in (
        ("hub", "rbac/hub-serviceaccount"),
        ("hub-user", "rbac/hub"),
        ("cronjob", "overlays/enforce"),
        ("rollout", "rollout"),
    ):
        (mine / name).mkdir(exist_ok=True)
        written = text.replace("cronjobs/rbac/hub-serviceaccount", f"cronjobs/{stands_on}")
        (mine / name / "kustomization.yaml").write_text(written)
    for name in ("hub", "hub-user"):
        granted = granted_by(render(name, mine))
        for resource, verbs in copies.REGISTERED.enforcing:
            assert set(verbs) <= granted[(resource.group, resource.plural)], resource.plural
    for name in ("cronjob", "rollout"):
        [workload] = [o for o in render(name, mine) if o["kind"] in ("CronJob", "Job")]
        enforced = {a for a in pod_args(workload) if a.startswith("--enforce")}
        assert enforced == {f"--enforce={r.name.value}" for r in REGISTRY if r.enforced} | {
            "--enforce=copies"
        }


@pytest.mark.parametrize(
    ("user", "serviceaccount"),
    [
        ("rbac/hub", "rbac/hub-serviceaccount"),
        ("rbac/hub-sharded", "rbac/hub-sharded-serviceaccount"),
        ("rbac/upstream", "rbac/upstream-serviceaccount"),
        ("rbac/projects", "rbac/projects-serviceaccount"),
    ],
)
def test_each_serviceaccount_variant_grants_its_users_rbac_to_the_serviceaccount(
    user: str, serviceaccount: str
) -> None:
    """issue 51 item 7: every RBAC bound to the user `gcjob` has its ServiceAccount variant
    (install.md section 5's upstream identity is one: Milo's projects too), granting the same
    roles, every binding's subject the ServiceAccount `gcjob` it renders itself."""

    def roles(rendered: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {k: v for k, v in o.items() if k != "metadata"} | {"name": o["metadata"]["name"]}
            for o in rendered
            if o["kind"] in ("ClusterRole", "Role")
        ]

    plain, variant = render(user), render(serviceaccount)
    assert roles(variant) == roles(plain)
    [account] = [o for o in variant if o["kind"] == "ServiceAccount"]
    assert account["metadata"]["name"] == "gcjob"
    bindings = [o for o in variant if o["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    assert len(bindings) == len([o for o in plain if o["kind"].endswith("RoleBinding")])
    for binding in bindings:
        assert binding["subjects"] == [
            {
                "kind": "ServiceAccount",
                "name": "gcjob",
                "namespace": account["metadata"]["namespace"],
            }
        ]


def rbac_table() -> dict[str, dict[tuple[str, str], set[str]]]:
    """docs/operating.md's "What gcjob needs (RBAC)" table: for each RBAC it names, (group,
    plural) -> the verbs it says that RBAC grants."""
    page = (CRONJOBS.parent / "docs" / "operating.md").read_text(encoding="utf-8")
    table: dict[str, dict[tuple[str, str], set[str]]] = {}
    for line in page.splitlines():
        if not line.startswith("| `cronjobs/"):
            continue
        rbac, resources, verbs, _ = (cell.strip() for cell in line.strip("|").split("|"))
        granted = table.setdefault(rbac.strip("`").removeprefix("cronjobs/"), {})
        for resource in re.findall(r"`([^`]+)`", resources):
            plural, _, group = resource.partition(".")
            granted.setdefault((group, plural), set()).update(re.findall(r"`([^`]+)`", verbs))
    return table


def test_operating_md_lists_exactly_what_each_rbac_grants_and_the_sweeps_send(
    tmp_path: Path,
) -> None:
    """issue 51 item 8: the doc's table is each rendered RBAC, verb for verb, and its hub rows
    are what the registered sweeps declare they send (their `needs`; the copies sweep's
    `enforcing` in the component that enforces it), the Events, the Lease and namespaces."""
    table = rbac_table()
    hub = granted_verbs("rbac/hub")
    enforcing = granted_by(with_components(tmp_path, "rbac/hub", "enforce-copies"))
    added = {k: v - hub.get(k, set()) for k, v in enforcing.items() if v != hub.get(k)}
    rendered = {
        "rbac/hub": hub,
        "components/enforce-copies": added,
        "rbac/upstream": granted_verbs("rbac/upstream"),
        "rbac/projects": granted_verbs("rbac/projects"),
        "rbac/hub-restore": granted_verbs("rbac/hub-restore"),
    }
    assert table == rendered

    def sent(*needs: preflight.Needs) -> dict[tuple[str, str], set[str]]:
        verbs: dict[tuple[str, str], set[str]] = {}
        for resource, asked in (need for each in needs for need in each):
            verbs.setdefault((resource.group, resource.plural), set()).update(asked)
        return verbs

    lease = preflight.lease_needs(Settings(delete=True))
    # The namespaces sweep's reads are its optional component's (cronjobs/components/namespaces)
    hub_sweeps = [r for r in REGISTRY if r.name.value not in NEVER_ENFORCED]
    declared = sent(
        *(r.needs for r in hub_sweeps),
        preflight.EVENT_NEEDS,
        tuple((p.resource, (p.verb,)) for p in lease),
        # `get`: a --namespace that does not exist is warned of; --record-deletions' kube-system.
        ((NAMESPACES, ("get",)),),
    )
    assert table["rbac/hub"] == declared
    with_enforcing = sent(*(r.needs for r in hub_sweeps), *(r.enforcing for r in hub_sweeps))
    for key, verbs in table["components/enforce-copies"].items():
        assert verbs <= with_enforcing[key] - table["rbac/hub"][key], key


def test_the_deletion_record_is_on_where_runs_delete_each_workload_on_a_claim_of_its_own() -> None:
    """cronjobs/components/record-deletions: the enforcing CronJob (and so a one-off run) and the
    rollout Job record to a claim of cronjobs/storage each (ReadWriteOnce: a shared one could
    leave one pod Pending on another node); a dry run records nothing."""
    claims = {o["metadata"]["name"]: o["spec"] for o in render("storage")}
    assert set(claims) == {"gcjob-deletions", "gcjob-rollout-deletions"}
    for spec in claims.values():
        assert spec["accessModes"] == ["ReadWriteOnce"]
        assert "storageClassName" not in spec  # the cluster's default class (docs/undo.md)
    [restore] = [o for o in render("restore") if o["kind"] == "Job"]
    restore_pod = restore["spec"]["template"]["spec"]
    restore_claims = {
        v["name"]: v["persistentVolumeClaim"]["claimName"]
        for v in restore_pod["volumes"]
        if "persistentVolumeClaim" in v
    }
    restore_mounts = {
        restore_claims[m["name"]]: m["mountPath"]
        for m in restore_pod["containers"][0]["volumeMounts"]
        if m["name"] in restore_claims
    }
    assert set(restore_mounts) == set(claims)
    used: dict[str, str] = {}
    for directory, workload in workloads():
        pod = job_spec(workload)["template"]["spec"]
        [container] = pod["containers"]
        where = flag(container["args"], "record-deletions")
        if directory == "overlays/dry-run":
            assert where is None
            assert not [v for v in pod["volumes"] if "persistentVolumeClaim" in v]
            continue
        [mount] = [m for m in container["volumeMounts"] if m["mountPath"] == where]
        assert not mount.get("readOnly")
        [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
        used[directory] = volume["persistentVolumeClaim"]["claimName"]
        # The restore Job mounts this claim at this very path: the file a run's log names
        # ("recording deletions in PATH") is the RECORD to give restore (docs/undo.md).
        assert restore_mounts[used[directory]] == where, directory
    assert used == {
        "overlays/enforce": "gcjob-deletions",
        "once": "gcjob-deletions",
        "rollout": "gcjob-rollout-deletions",
        # Instead of the enforcing CronJob: its claim, its shards' pods on one node (the claim
        # is ReadWriteOnce), each run's record a file of its own.
        "overlays/sharded": "gcjob-deletions",
    }
    [sharded] = [w for d, w in workloads() if d == "overlays/sharded"]
    template = job_spec(sharded)["template"]
    [term] = template["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= template["metadata"]["labels"].items()


def test_the_one_off_job_is_the_enforcing_cronjobs_pod_with_its_own_arguments_appended() -> None:
    [cronjob] = [o for o in render("overlays/enforce") if o["kind"] == "CronJob"]
    rendered = render("once")
    assert [o["kind"] for o in rendered] == ["Job"]  # the CronJob and its account only read
    [once] = rendered
    expected = copy.deepcopy(cronjob["spec"]["jobTemplate"]["spec"]["template"])
    appended = pod_args(once)[len(pod_args(cronjob)) :]
    expected["spec"]["containers"][0]["args"] += appended
    assert once["spec"]["template"] == expected
    assert appended == ["--max-delete-percent=80"]  # cronjobs/once's one place
    deadline = cronjob["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"]
    assert once["spec"]["activeDeadlineSeconds"] == deadline
    assert once["spec"]["backoffLimit"] == 0


def test_the_restore_job_reads_the_records_and_reaches_the_hub_as_the_restore_identity() -> None:
    [job] = render("restore")
    pod = job["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert container["args"][:1] == ["restore"]
    assert "--apply" not in container["args"]  # a dry run until your overlay says otherwise
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
    assert mounts["/etc/gcjob/restore"]["secret"]["secretName"] == "gcjob-restore-kubeconfig"
    claims = {o["metadata"]["name"] for o in render("storage")}
    records = {
        path: volume["persistentVolumeClaim"]
        for path, volume in mounts.items()
        if "persistentVolumeClaim" in volume
    }
    assert {c["claimName"] for c in records.values()} == claims
    assert all(c["readOnly"] for c in records.values())
    assert all(m.get("readOnly") for m in container["volumeMounts"] if m["mountPath"] in records)


def test_the_restore_identity_is_granted_exactly_what_restore_sends_and_no_secret() -> None:
    """gcjob/restore.py: a GET of kube-system, and for each kind it restores a GET of the name
    and a create, and a GET of each owner kind it re-points to; a Secret never (refused); and
    the Event of each object put back."""
    wanted: dict[tuple[str, str], set[str]] = {("", "namespaces"): {"get"}}
    for resource in restore.KNOWN_OWNERS.values():
        if not resource.sensitive:
            wanted.setdefault((resource.group, resource.plural), set()).add("get")
    for resource in restore.RESTORABLE.values():
        if not resource.sensitive:
            wanted[(resource.group, resource.plural)].add("create")
    # An Event on each object put back, as a delete's (issue 51 item 13).
    for resource, verbs in preflight.EVENT_NEEDS:
        wanted[(resource.group, resource.plural)] = set(verbs)
    assert granted_verbs("rbac/hub-restore") == wanted
    [binding] = [o for o in render("rbac/hub-restore") if o["kind"] == "ClusterRoleBinding"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gcjob-restore", "namespace": "default"}
    ]


def test_without_secrets_grants_no_secret_and_exactly_what_a_routes_only_run_sends() -> None:
    """Every sweep but routes reads Secrets on the hub (each sweep's REGISTERED needs, the
    copies sweep's among them), so the variant is for `--sweep=routes`, which its component adds
    to the workloads; its ClusterRole grants what preflight asks of such a run, and what
    --namespace and --record-deletions read (namespaces), nothing else."""
    secrets = ("", "secrets")
    for registered in REGISTRY:
        if registered.name.value in NEVER_ENFORCED:
            continue  # report-only, granted by an optional component (cronjobs/components)
        reads = {(r.group, r.plural) for r, _ in registered.needs}
        assert (secrets in reads) is (registered.name is not Sweep.ROUTES), registered.name

    granted = granted_verbs("rbac/hub-without-secrets")
    assert secrets not in granted
    settings = Settings(sweeps=(Sweep.ROUTES,), namespaces=("ns-a",), delete=True)
    for permission in preflight.needed(settings, PREFLIGHT):
        resource = permission.resource
        assert permission.verb in granted[(resource.group, resource.plural)], permission
    cluster = {k: v for k, v in granted.items() if k[1] != "leases"}
    assert cluster == {
        ("gateway.networking.k8s.io", "httproutes"): set(preflight.READ_DELETE),
        ("", "namespaces"): {"get"},
        ("events.k8s.io", "events"): {"create"},
    }
    assert (
        granted["coordination.k8s.io", "leases"]
        == granted_verbs("rbac/hub")["coordination.k8s.io", "leases"]
    )


def test_without_secrets_sweeps_routes_alone_in_the_cronjob_and_the_rollout(tmp_path: Path) -> None:
    for directory in ("overlays/enforce", "rollout"):
        workload = with_component(tmp_path, directory, "without-secrets")
        [plain] = [o for o in render(directory) if o["kind"] in ("CronJob", "Job")]
        assert pod_args(workload) == [*pod_args(plain), "--sweep=routes"]


def documented_yaml(page: str, header: str) -> str:
    text = (CRONJOBS.parent / "docs" / page).read_text(encoding="utf-8")
    found = re.search(rf"```yaml\n# {re.escape(header)}[^\n]*\n(.*?)```", text, re.S)
    assert found, (page, header)
    return found.group(1)


def test_the_documented_one_off_overlay_is_your_cronjob_once_with_the_limit_raised(
    tmp_path: Path,
) -> None:
    """docs/operating.md's my-gcjob/once, over an enforcing my-gcjob/cronjob of docs/install.md."""
    image = "registry.example.com/gcjob@sha256:" + "1" * 64
    mine = own_overlays(tmp_path, {"lockNamespace": "gcjob-system", "image": image})
    (mine / "cronjob").mkdir()
    (mine / "cronjob" / "kustomization.yaml").write_text(
        "resources: [../../gcjob/cronjobs/overlays/enforce, ../settings]\n"
        "components: [../../gcjob/cronjobs/components/settings]\n"
    )
    (mine / "once").mkdir()
    (mine / "once" / "kustomization.yaml").write_text(
        documented_yaml("operating.md", "my-gcjob/once/kustomization.yaml")
    )
    [cronjob] = [o for o in render("cronjob", mine) if o["kind"] == "CronJob"]

    [once] = render("once", mine)

    assert once["kind"] == "Job" and once["metadata"]["name"] == "gcjob-once"
    [container] = once["spec"]["template"]["spec"]["containers"]
    assert container["image"] == image
    assert container["args"] == [*pod_args(cronjob), "--max-delete-percent=80"]
    assert "--lock-namespace=gcjob-system" in container["args"]


def test_the_documented_storage_overlay_names_a_class_for_both_claims(tmp_path: Path) -> None:
    """docs/undo.md's my-gcjob/storage, for a cluster without a default StorageClass."""
    mine = own_overlays(tmp_path)
    (mine / "storage").mkdir()
    (mine / "storage" / "kustomization.yaml").write_text(
        documented_yaml("undo.md", "my-gcjob/storage/kustomization.yaml")
    )
    claims = render("storage", mine)
    assert {c["metadata"]["name"] for c in claims} == {"gcjob-deletions", "gcjob-rollout-deletions"}
    assert {c["spec"]["storageClassName"] for c in claims} == {"standard-rwo"}


@pytest.mark.parametrize("directory", ["rbac/hub", "rbac/hub-without-secrets"])
def test_the_hub_identity_may_post_exactly_the_events_a_delete_run_asks_for(directory: str) -> None:
    """issue 34 item 8: `create` on events.k8s.io events (preflight.EVENT_NEEDS), nothing more of
    them: no update, no delete, no read of anyone's Events."""
    granted = granted_verbs(directory)
    for resource, verbs in preflight.EVENT_NEEDS:
        assert granted[(resource.group, resource.plural)] == set(verbs)
    assert ("", "events") not in granted


def test_the_sharded_cronjob_runs_count_shards_at_once_each_with_its_lease() -> None:
    """cronjobs/overlays/sharded: an Indexed Job of COUNT pods at once, each pod the shard of
    its own index (Kubernetes expands $(JOB_COMPLETION_INDEX)); the hub's Lease Role of
    cronjobs/rbac/hub-sharded grants every shard's Lease for that COUNT."""
    [cronjob] = [obj for obj in render("overlays/sharded") if obj["kind"] == "CronJob"]
    spec = job_spec(cronjob)
    args = spec["template"]["spec"]["containers"][0]["args"]
    shard = flag(args, "shard")
    assert shard is not None
    index, _, count = shard.partition("/")
    assert index == "$(JOB_COMPLETION_INDEX)"
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == int(count)
    assert "--delete" in args and flag(args, "record-deletions")
    settings = Settings(shard=Shard(0, int(count)), lock_name=flag(args, "lock-name") or "gcjob")
    [role] = [obj for obj in render("rbac/hub-sharded") if obj["kind"] == "Role"]
    named = {name for rule in role["rules"] for name in rule.get("resourceNames", [])}
    leases = {Shard(i, int(count)).lease_name(settings.lock_name) for i in range(int(count))}
    assert named == {settings.lock_name, *leases}


def lease_grants(directory: str) -> set[tuple[str, str | None]]:
    """(verb, Lease name or None for any) the Lease Role of a rendered hub RBAC grants."""
    [role] = [obj for obj in render(directory) if obj["kind"] == "Role"]
    return {
        (verb, name)
        for rule in role["rules"]
        if "leases" in rule["resources"]
        for verb in rule["verbs"]
        for name in rule.get("resourceNames") or [None]
    }


@pytest.mark.parametrize(
    "directory", ["rbac/hub-sharded", "rbac/hub-sharded-serviceaccount", "rbac/hub"]
)
def test_each_shard_of_the_overlay_asks_for_exactly_the_leases_the_sharded_rbac_grants(
    directory: str,
) -> None:
    """The preflight of every shard of cronjobs/overlays/sharded (gcjob/preflight.py
    `lease_needs`) asks for Leases cronjobs/rbac/hub-sharded grants, all of them between the
    shards; the unsharded cronjobs/rbac/hub denies every shard some."""
    [cronjob] = [obj for obj in render("overlays/sharded") if obj["kind"] == "CronJob"]
    args = job_spec(cronjob)["template"]["spec"]["containers"][0]["args"]
    count = int((flag(args, "shard") or "").partition("/")[2])
    grants = lease_grants(directory)
    asked: set[tuple[str, str | None]] = set()
    for index in range(count):
        settings = Settings(delete=True, shard=Shard(index, count))
        needs = {(p.verb, p.name) for p in preflight.lease_needs(settings)}
        asked |= needs
        if directory == "rbac/hub":
            assert needs - grants, index
        else:
            assert needs <= grants, needs - grants
    if directory != "rbac/hub":
        assert asked == grants  # and nothing granted that no shard asks for
