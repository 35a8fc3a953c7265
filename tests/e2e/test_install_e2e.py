"""docs/install.md followed on the real server pair: its blocks marked `<!-- tested: NAME -->`
are run here as written (bash, kubectl, openssl), so the install steps cannot drift from what
works.

A ServiceAccount on the hub and on the upstream, bound by the rendered RBAC; tokens from the
TokenRequest API; the kubeconfig Secrets written from them; the CronJob applied; then gcjob
run with the arguments of that CronJob, as read back from the server, and the Secrets as its
pod mounts them: a dry run, then a `--delete` sweep as those identities. The lock namespace
is the documented setting (`gcjob-system`, not the default), and the Lease is taken there.
Without routes: the component's CronJob, with no upstream Secret at all. The client
certificate: the request made with openssl, created and approved; a bare API server has no
signer (kube-controller-manager's csrsigning), so no certificate is ever issued, and the
test stops at Approved.

The contexts the docs name: `hub` and `upstream-a` are the two servers, each behind its fault
proxy (whose request log shows every answer gcjob got); `management`, where the Secrets and
the CronJob go, is the hub server too (no pod runs: a bare server has no controllers).
"""

from __future__ import annotations

import base64
import contextlib
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gcjob.cli import cli
from testbed.cluster import TestCluster, wait_for
from testbed.endpoints import started
from testbed.faultproxy import FaultProxy
from testbed.objects import binding, companion, route, upstream_route, workload
from testbed.report import Result, run_gcjob
from testbed.servers import ADMIN_TOKEN, HUB_CRDS, UPSTREAM_CRDS, ApiServer, EnvtestError

# The module's own servers (a pair, a lone hub) start within its first tests' time: 68 s and
# 75 s of setup measured on a loaded machine, beside a 45 s test; 120 s was too close.
pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).parents[2]
INSTALL = ROOT / "docs" / "install.md"
UNDO = ROOT / "docs" / "undo.md"
IMAGE = "registry.example.com/gcjob:0.1.0"  # the docs' settings block
UPSTREAM = "upstream-a"  # the upstream's context, as the docs name it
LOCK_NAMESPACE = "gcjob-system"  # the docs' settings block
ORPHANS = (("ConfigMap", "orphan-config"), ("Secret", "orphan-creds"))
BASH = shutil.which("bash")


def documented(*names: str) -> str:
    """The blocks of these names (docs/install.md's, and undo.md's restore from inside the
    cluster), in this order, as one script."""
    blocks: dict[str, str] = {}
    for page in (INSTALL, UNDO):
        text = page.read_text(encoding="utf-8")
        found = dict(re.findall(r"<!-- tested: ([\w-]+) -->\n```sh\n(.*?)\n```\n", text, re.S))
        assert not set(found) & set(blocks), "a block name used twice"
        blocks.update(found)
    missing = [n for n in names if n not in blocks]
    assert not missing, f"docs/install.md and docs/undo.md have no tested block {missing}"
    return "\n".join(blocks[n] for n in names)


@dataclass
class Cluster:
    """One server as the install sees it: the server, the proxy in front of it, and a
    TestCluster acting as its administrator through the proxy."""

    server: ApiServer
    proxy: FaultProxy
    admin: TestCluster

    def get(self, path: str) -> Any:
        return self.server.request("GET", path)


def tree(root: Path) -> dict[str, bytes]:
    return {str(f.relative_to(root)): f.read_bytes() for f in root.rglob("*") if f.is_file()}


@dataclass
class Install:
    """The directory the docs are followed in: the clone's cronjobs/ (under gcjob/, as the docs
    clone it), where my-gcjob/ is written; and the administrator's kubeconfig with the contexts
    they name."""

    work: Path
    kubeconfig: Path
    hub: Cluster

    def run(self, *blocks: str, **variables: str) -> subprocess.CompletedProcess[str]:
        """The blocks, as one script (`variables`: what the docs ask to set first); then the
        clone must be as it was checked out (every install step goes into my-gcjob/, none
        edits the clone)."""
        assert BASH is not None
        done = subprocess.run(
            [BASH, "-euo", "pipefail", "-c", documented(*blocks)],
            cwd=self.work,
            env={
                "PATH": "/usr/bin:/bin",
                "HOME": str(self.work),
                "KUBECONFIG": str(self.kubeconfig),
                **variables,
            },
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr
        assert tree(self.work / "gcjob") == {
            f"cronjobs/{name}": data for name, data in tree(ROOT / "cronjobs").items()
        }, "the documented steps changed the clone"
        return done

    def mounted(self) -> dict[str, Path]:
        """The kubeconfig Secrets the docs wrote, as the pods mount them, under work/etc/gcjob/
        instead of /etc/gcjob/: mount path -> file."""
        files = {}
        for secret, mount in (
            ("gcjob-hub-kubeconfig", "/etc/gcjob/hub"),
            ("gcjob-upstream-kubeconfig", "/etc/gcjob/upstream"),
            ("gcjob-restore-kubeconfig", "/etc/gcjob/restore"),
        ):
            with contextlib.suppress(EnvtestError):  # not written: the volume is optional
                found = self.hub.get(f"/api/v1/namespaces/gcjob/secrets/{secret}")
                path = self.work / mount.lstrip("/") / "kubeconfig"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(base64.b64decode(found["data"]["kubeconfig"]))
                files[mount] = path
        return files

    def pod(self, path: str) -> dict[str, Any]:
        """The pod spec of a CronJob or Job as the server stored it."""
        workload = self.hub.get(path)
        spec = workload["spec"]
        if "jobTemplate" in spec:  # a CronJob
            spec = spec["jobTemplate"]["spec"]
        template = spec["template"]
        pod: dict[str, Any] = template["spec"]
        return pod

    def local(self, args: list[str]) -> list[str]:
        """Arguments with the pod's mounts (the Secrets, the deletion record's claims) made
        directories of work/."""
        for claim in ("deletions", "rollout-deletions"):
            (self.work / "var" / "lib" / "gcjob" / claim).mkdir(parents=True, exist_ok=True)
        return [
            a.replace("/etc/gcjob/", f"{self.work}/etc/gcjob/").replace(
                "/var/lib/gcjob/", f"{self.work}/var/lib/gcjob/"
            )
            for a in args
        ]

    def cronjob_args(self) -> list[str]:
        """The CronJob's arguments as the server stored them, the mounts made local."""
        pod = self.pod("/apis/batch/v1/namespaces/gcjob/cronjobs/gcjob")
        args: list[str] = pod["containers"][0]["args"]
        assert args[0] == "sweep"
        return self.local(args[1:])

    def sweep(self, *extra: str) -> Result:
        """gcjob with the CronJob's arguments; `extra`: what a test needs of the ages."""
        return run_gcjob(*self.cronjob_args(), *extra)


@contextlib.contextmanager
def cluster(work: Path, name: str, context: str, crds: tuple[str, ...]) -> Iterator[Cluster]:
    work = work / name  # each proxy writes its own CA file here
    work.mkdir()
    with started(work, f"install-{name}", context, crds) as endpoint:
        assert endpoint.server is not None
        made = TestCluster(endpoint.kubeconfig, context, collects_garbage=endpoint.collects_garbage)
        yield Cluster(endpoint.server, endpoint.proxy, made)


def admin_kubeconfig(path: Path, hub: Cluster, upstream: Cluster | None) -> Path:
    """The contexts the docs use: hub and upstream-a through their proxies, management the
    hub server itself; all as the administrator."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "current-context": "hub"}
    sides = [("hub", hub)] + ([(UPSTREAM, upstream)] if upstream else [])
    sources = [yaml.safe_load(Path(c.admin.kubeconfig).read_text()) for _, c in sides]
    management = hub.server.write_kubeconfig(path.with_suffix(".management"), context="management")
    sources.append(yaml.safe_load(management.read_text()))
    for key in ("clusters", "users", "contexts"):
        merged[key] = [entry for source in sources for entry in source[key]]
    path.write_text(yaml.safe_dump(merged))
    return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Cluster]]:
    work = tmp_path_factory.mktemp("install-pair")
    with (
        cluster(work, "hub", "hub", HUB_CRDS) as hub,
        cluster(work, "upstream", UPSTREAM, UPSTREAM_CRDS) as upstream,
    ):
        yield hub, upstream


@pytest.fixture(scope="module")
def lone_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cluster(tmp_path_factory.mktemp("install-hub"), "hub", "hub", HUB_CRDS) as hub:
        yield hub


def following_the_docs(tmp_path: Path, hub: Cluster, upstream: Cluster | None) -> Install:
    work = tmp_path / "install"
    work.mkdir()
    shutil.copytree(
        ROOT / "cronjobs", work / "gcjob" / "cronjobs", ignore=shutil.ignore_patterns("__pycache__")
    )
    return Install(work, admin_kubeconfig(tmp_path / "admin.yaml", hub, upstream), hub)


def seed_hub(hub: TestCluster) -> str:
    """Two orphaned companions with their bindings, an orphaned binding, a live companion;
    returns the namespace."""
    ns = hub.namespace()
    hub.create(workload(ns, "web"))
    for kind, name in ORPHANS:
        hub.create_with_binding(companion(kind, ns, name, ["default/gone"]))
    hub.create_with_binding(companion("ConfigMap", ns, "live-config", ["default/web"]))
    hub.create(binding(ns, "gone-configmap", kind="ConfigMap", target="gone"))
    return ns


def seed_routes(hub: TestCluster, upstream: TestCluster, ns: str) -> None:
    """A route whose Gateway is gone and one whose Gateway (and upstream route) is there,
    both naming the upstream `upstream-a`."""
    project = upstream.project("gw-live")
    upstream.create(upstream_route(project, "live-route", ("gw-live",)))
    for name, parent in (("orphan-route", "gw-gone"), ("live-route", "gw-live")):
        hub.create(
            route(
                ns,
                name,
                cluster_label=f"cluster-{UPSTREAM}",
                upstream_namespace=project,
                parents=[{"name": parent}],
            )
        )


def allowed_as(server: ApiServer, token: str, verb: str, resource: str, namespace: str) -> bool:
    plural, _, group = resource.partition(".")
    answer = server.request(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {
            "spec": {
                "resourceAttributes": {
                    "verb": verb,
                    "resource": plural,
                    "group": group,
                    "namespace": namespace,
                }
            }
        },
        token=token,
    )
    return bool(answer["status"].get("allowed"))


def token_of(kubeconfig: Path) -> str:
    config = yaml.safe_load(kubeconfig.read_text())
    [user] = config["users"]
    token: str = user["user"]["token"]
    return token


def refused(proxy: FaultProxy) -> list[tuple[str, str, int | None]]:
    return [(r.method, r.path, r.status) for r in proxy.requests if r.status in (401, 403)]


def test_the_documented_install_deletes_orphans_as_its_service_accounts(
    pair: tuple[Cluster, Cluster], tmp_path: Path
) -> None:
    hub, upstream = pair
    install = following_the_docs(tmp_path, hub, upstream)
    ns = seed_hub(hub.admin)
    seed_routes(hub.admin, upstream.admin, ns)

    install.run(
        "settings",
        "hub-token",
        "hub-kubeconfig",
        "upstream-kubeconfig",
        "milo-rbac",
        "secrets",
        "upstream-secret",
        "dry-run",
    )
    mounts = install.mounted()
    hub_token, upstream_token = (
        token_of(mounts[m]) for m in ("/etc/gcjob/hub", "/etc/gcjob/upstream")
    )
    # The Secrets hold the TokenRequest API's tokens (JWTs), not the administrator's token.
    assert hub_token != ADMIN_TOKEN and hub_token.count(".") == 2
    assert upstream_token != ADMIN_TOKEN and upstream_token.count(".") == 2
    assert yaml.safe_load(mounts["/etc/gcjob/upstream"].read_text())["current-context"] == UPSTREAM
    wait_for(lambda: allowed_as(hub.server, hub_token, "delete", "secrets", ns))
    wait_for(
        lambda: allowed_as(
            hub.server, hub_token, "create", "leases.coordination.k8s.io", LOCK_NAMESPACE
        )
    )
    wait_for(
        lambda: allowed_as(
            upstream.server, upstream_token, "list", "gateways.gateway.networking.k8s.io", "x"
        )
    )
    # Milo's Project API (the upstream stands for Milo) lets the same ServiceAccount read the
    # projects (issue 51 item 7: cronjobs/rbac/projects bound only the user gcjob).
    projects = "projects.resourcemanager.miloapis.com"
    wait_for(lambda: allowed_as(upstream.server, upstream_token, "list", projects, ""))
    assert not allowed_as(hub.server, hub_token, "create", "leases.coordination.k8s.io", "default")
    assert f"--lock-namespace={LOCK_NAMESPACE}" in install.cronjob_args()
    hub.proxy.clear_requests()
    upstream.proxy.clear_requests()

    dry = install.sweep("--min-age=0s")

    assert dry.exit_code == 0, dry.stderr
    assert not [
        r
        for r in hub.proxy.requests
        if r.method in ("DELETE", "PATCH", "PUT", "POST") and "accessreviews" not in r.path
    ]  # a dry run writes nothing
    for kind, name in ORPHANS:
        outcome = dry.outcome(kind, name)
        assert outcome is not None and outcome[0].startswith("would-"), (kind, name, outcome)
        assert hub.admin.present(kind, ns, name)

    install.run("enforce")
    assert "--delete" in install.cronjob_args()
    claims = hub.get("/api/v1/namespaces/gcjob/persistentvolumeclaims")["items"]
    assert {c["metadata"]["name"] for c in claims} == {"gcjob-deletions", "gcjob-rollout-deletions"}
    pod = install.pod("/apis/batch/v1/namespaces/gcjob/cronjobs/gcjob")
    assert pod["containers"][0]["image"] == IMAGE  # the settings' image, by the component
    [record] = [v for v in pod["volumes"] if v["name"] == "deletions"]
    assert record["persistentVolumeClaim"] == {"claimName": "gcjob-deletions"}
    first = install.sweep("--min-age=0s", "--grace=0s")
    again = install.sweep("--min-age=0s", "--grace=0s")

    for result in (first, again):
        assert result.exit_code == 0, result.stderr
        assert {s: v["status"] for s, v in result.summary["sweeps"].items()} == dict.fromkeys(
            ("companions", "bindings", "routes", "copies"), "completed"
        )
    for kind, name in (
        *ORPHANS,
        ("ResourceBinding", "gone-configmap"),
        ("HTTPRoute", "orphan-route"),
    ):
        assert (
            first.outcome(kind, name) is not None and first.outcome(kind, name)[0] == "deleted"
        ), (kind, name)  # type: ignore[index]
        assert hub.admin.gone(kind, ns, name), (kind, name)
    assert hub.admin.present("ConfigMap", ns, "live-config")
    assert hub.admin.present("HTTPRoute", ns, "live-route")
    assert not refused(hub.proxy) and not refused(upstream.proxy)
    # The Lease is where the setting put it, and nowhere else.
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{LOCK_NAMESPACE}/leases"
    taken = [(r.method, r.path, r.status) for r in hub.proxy.requests if "/leases" in r.path]
    assert ("POST", leases, 201) in taken
    assert {path for _, path, _ in taken} <= {leases, f"{leases}/gcjob"}
    assert hub.get(f"{leases}/gcjob")["metadata"]["name"] == "gcjob"
    with pytest.raises(EnvtestError, match="404"):
        hub.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/gcjob")
    # Every deletion was recorded on the CronJob's claim (the second run deleted nothing).
    recorded = sorted((install.work / "var/lib/gcjob/deletions").glob("deletions-*.jsonl"))
    assert len(recorded) == 1, recorded
    assert f"recording deletions in {recorded[0]}" in first.stderr

    # Put back from inside the cluster, as undo.md says: the restore identity, its Secret, the
    # Job with the record the run named, then `gcjob restore` with that Job's arguments.
    # gcjob's deletes orphan: on this bare server no garbage collector removes the `orphan`
    # finalizer they leave; its work done here, as a hub's collector does it.
    for kind, name in (("ConfigMap", "orphan-config"), ("HTTPRoute", "orphan-route")):
        if not hub.admin.collects_garbage:
            hub.admin.patch(kind, ns, name, {"metadata": {"finalizers": None}})
    hub.proxy.clear_requests()
    install.run(
        "settings",
        "restore-identity",
        "restore-job",
        RECORD=f"/var/lib/gcjob/deletions/{recorded[0].name}",
    )
    restore_token = token_of(install.mounted()["/etc/gcjob/restore"])
    assert restore_token not in (hub_token, ADMIN_TOKEN) and restore_token.count(".") == 2
    wait_for(lambda: allowed_as(hub.server, restore_token, "create", "configmaps", ns))
    assert not allowed_as(hub.server, restore_token, "get", "secrets", ns)
    assert not allowed_as(hub.server, hub_token, "create", "configmaps", ns)  # the sweep's
    job = install.pod("/apis/batch/v1/namespaces/gcjob/jobs/gcjob-restore")
    [container] = job["containers"]
    assert container["image"] == IMAGE
    assert container["args"][:2] == ["restore", f"/var/lib/gcjob/deletions/{recorded[0].name}"]
    restored = CliRunner().invoke(cli, [*install.local(container["args"]), "--apply"])
    assert restored.exception is None or isinstance(restored.exception, SystemExit), restored
    # (The deleted bindings stay terminating: a bare server has no Karmada controller to drop
    # their finalizer, so restore finds them there and refuses, as it must.)
    # issue 51 item 13: an Event on each object put back, posted as the restore identity.
    events = hub.get(f"/apis/events.k8s.io/v1/namespaces/{ns}/events")["items"]
    put_back = {
        (e["regarding"]["kind"], e["regarding"]["name"]): e
        for e in events
        if e["reason"] == "OrphanRestored"
    }
    for kind, name in (("ConfigMap", "orphan-config"), ("HTTPRoute", "orphan-route")):
        back = hub.admin.get(kind, ns, name)
        assert back is not None, (kind, name, restored.stdout)
        assert back["metadata"]["annotations"]["gcjob.datumapis.com/protect"] == "true"
        event = put_back[(kind, name)]
        assert event["regarding"]["uid"] == back["metadata"]["uid"]
        assert event["action"] == "Restore" and "deleted by gcjob as uid" in event["note"]
    assert set(put_back) == {("ConfigMap", "orphan-config"), ("HTTPRoute", "orphan-route")}
    posted = [r.status for r in hub.proxy.requests if r.method == "POST" and "/events" in r.path]
    assert posted == [201, 201], posted
    assert hub.admin.gone("Secret", ns, "orphan-creds")  # its data was never recorded
    assert not refused(hub.proxy), restored.stdout


def test_without_routes_the_install_needs_no_upstream_secret_and_reads_no_route(
    lone_hub: Cluster, tmp_path: Path
) -> None:
    hub = lone_hub
    install = following_the_docs(tmp_path, hub, None)
    ns = seed_hub(hub.admin)
    hub.admin.create(
        route(
            ns,
            "orphan-route",
            cluster_label="cluster-gone",
            upstream_namespace="p",
            parents=[{"name": "gw"}],
        )
    )

    install.run("settings", "hub-token", "hub-kubeconfig", "secrets", "without-routes")
    assert set(install.mounted()) == {"/etc/gcjob/hub"}  # no upstream Secret at all
    args = install.cronjob_args()
    assert not [a for a in args if a.startswith("--upstream-kubeconfig")]
    assert args[-2:] == ["--sweep=companions", "--sweep=bindings"]
    wait_for(
        lambda: allowed_as(
            hub.server, token_of(install.mounted()["/etc/gcjob/hub"]), "delete", "secrets", ns
        )
    )
    hub.proxy.clear_requests()

    dry = install.sweep("--min-age=0s")
    swept = install.sweep("--min-age=0s", "--grace=0s", "--delete")

    for result in (dry, swept):
        assert result.exit_code == 0, result.stderr
        assert set(result.summary["sweeps"]) == {"companions", "bindings"}
        assert all(v["status"] == "completed" for v in result.summary["sweeps"].values())
        assert not [r for r in result.records if r["record"] == "upstream"]
    for kind, name in ORPHANS:
        assert swept.outcome(kind, name)[0] == "deleted", (kind, name)  # type: ignore[index]
        assert hub.admin.gone(kind, ns, name)
    assert not [r.path for r in hub.proxy.requests if "httproutes" in r.path]  # not even read
    assert not refused(hub.proxy)
    assert hub.admin.present("ConfigMap", ns, "live-config")
    assert hub.admin.present("HTTPRoute", ns, "orphan-route")


def test_the_documented_certificate_request_is_created_and_approved(
    lone_hub: Cluster, tmp_path: Path
) -> None:
    install = following_the_docs(tmp_path, lone_hub, None)

    install.run("settings", "hub-csr")

    csr = lone_hub.get("/apis/certificates.k8s.io/v1/certificatesigningrequests/gcjob")
    assert csr["spec"]["signerName"] == "kubernetes.io/kube-apiserver-client"
    assert csr["spec"]["usages"] == ["client auth"]
    request = base64.b64decode(csr["spec"]["request"]).decode()
    assert request == (install.work / "gcjob.csr").read_text()
    subject = subprocess.run(
        ["openssl", "req", "-noout", "-subject", "-in", str(install.work / "gcjob.csr")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "CN = gcjob" in subject or "CN=gcjob" in subject
    conditions = {c["type"]: c["status"] for c in csr["status"].get("conditions", [])}
    assert conditions == {"Approved": "True"}
    # A bare API server has no signer: approved, never issued.
    assert not csr["status"].get("certificate")
    # The user the certificate names is the one cronjobs/rbac/hub binds (applied by the block).
    binding_ = lone_hub.get("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/gcjob")
    assert binding_["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "gcjob"}
    ]


def test_the_restore_job_block_asks_for_its_record_before_it_writes_anything(
    tmp_path: Path,
) -> None:
    """undo.md's Job block, pasted as it stands: without RECORD set it stops at its first line,
    saying what to set, before it writes a file or reaches a cluster."""
    assert BASH is not None
    done = subprocess.run(
        [BASH, "-euo", "pipefail", "-c", documented("restore-job")],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode != 0
    assert "set RECORD to the file the deleting run named" in done.stderr
    assert list(tmp_path.iterdir()) == []
