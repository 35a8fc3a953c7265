"""The deployment in cronjobs/ on real API servers: the rendered hub, upstream and projects
RBAC is exactly enough for a full `--delete` sweep (a deleted project's copies included), one
verb less is refused up front, and every rendered object passes a server-side dry-run apply
and the schemas of a current release.

This module starts its own hub and upstream (once), because it needs a token-file user that
only the rendered RBAC binds: `gcjob`, the subject cronjobs/rbac binds. The upstream stands for
Milo too (testbed/milo.py): it serves the Project API, and a proxy serves each project's
control plane at its Milo path.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gcjob.cli import cli
from gcjob.domain import GATEWAY_SYNC_LABEL
from testbed import servers
from testbed.cluster import TestCluster, wait_for
from testbed.endpoints import UPSTREAM_CLUSTER, started
from testbed.faultproxy import FaultProxy
from testbed.milo import (
    CONNECTORS,
    GATEWAYS,
    HTTPPROXIES,
    HUB_COPY_CRDS,
    MILO_CRDS,
    NET,
    SECRETS,
    anchor,
    copy,
    delete_project,
    install,
    labels,
    live_owner,
    make_project,
    milo_kubeconfig,
    milo_proxy,
    present,
    project_name,
    template,
)
from testbed.objects import binding, companion, gateway, route, upstream_route, workload
from testbed.report import run_gcjob
from testbed.servers import HUB_CRDS, UPSTREAM_CRDS, ApiServer

ROOT = Path(__file__).parents[2]
CRONJOBS = ROOT / "cronjobs"
GCJOB_TOKEN = "gcjob-token"
GCJOB_USER = ("gcjob-token", "gcjob", "gcjob-sweepers")


def render(directory: str, *components: str) -> str:
    """What `directory` renders, with cronjobs/components/`components` added to it as an
    install's own kustomization adds them (docs/install.md)."""
    with tempfile.TemporaryDirectory() as work:
        root = CRONJOBS / directory
        if components:
            shutil.copytree(CRONJOBS, Path(work) / "cronjobs")
            root = Path(work) / "mine"
            root.mkdir()
            listed = ", ".join(f"../cronjobs/components/{c}" for c in components)
            (root / "kustomization.yaml").write_text(
                f"resources: [../cronjobs/{directory}]\ncomponents: [{listed}]\n"
            )
        done = subprocess.run(
            [servers.kubectl(), "kustomize", str(root)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
    return done.stdout


def kubectl(kubeconfig: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [servers.kubectl(), "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


@dataclass
class Side:
    """One server: an administrator's kubeconfig (for setting up), the proxy gcjob talks
    through, and the kubeconfig of the `gcjob` user through that proxy."""

    server: ApiServer
    admin: Path
    proxy: FaultProxy
    gcjob: Path
    cluster: TestCluster

    def apply(self, manifests: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return kubectl(self.admin, "apply", "-f", "-", *extra, stdin=manifests)

    def allowed(
        self,
        verb: str,
        resource: str,
        namespace: str = "",
        name: str = "",
        token: str = GCJOB_TOKEN,
    ) -> bool:
        """Asked as the gcjob user (or `token`'s), straight to the server; `resource` is
        plural.group."""
        plural, _, group = resource.partition(".")
        attributes = {"verb": verb, "resource": plural, "group": group}
        if namespace:
            attributes["namespace"] = namespace
        if name:
            attributes["name"] = name
        answer = self.server.request(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            {"spec": {"resourceAttributes": attributes}},
            token=token,
        )
        return bool(answer["status"].get("allowed"))


@contextlib.contextmanager
def started_side(name: str, crds: tuple[str, ...], context: str, work: Path) -> Iterator[Side]:
    work = work / name  # each proxy writes its own CA file here
    work.mkdir()
    with started(
        work, f"rbac-{name}", context, crds, users=[GCJOB_USER], token=GCJOB_TOKEN
    ) as endpoint:
        server = endpoint.server
        assert server is not None
        admin = server.write_kubeconfig(work / f"{name}-admin", context=context)
        gcjob = Path(endpoint.kubeconfig)
        cluster = TestCluster(str(admin), context, collects_garbage=endpoint.collects_garbage)
        yield Side(server, admin, endpoint.proxy, gcjob, cluster)


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Side, Side]]:
    """A hub and an upstream, each with the rendered RBAC applied, started once per module."""
    work = tmp_path_factory.mktemp("rbac")
    with (
        started_side("hub", HUB_CRDS, "rbac-hub", work) as hub,
        started_side("upstream", UPSTREAM_CRDS, UPSTREAM_CLUSTER, work) as upstream,
    ):
        install(hub.cluster, HUB_COPY_CRDS)
        install(upstream.cluster, MILO_CRDS)
        for side, rbac in (
            (hub, "rbac/hub"),
            (upstream, "rbac/upstream"),
            (upstream, "rbac/projects"),
        ):
            done = side.apply(render(rbac), "--server-side")
            assert done.returncode == 0, done.stderr
        wait_for(lambda: hub.allowed("delete", "secrets", "any"))
        wait_for(lambda: upstream.allowed("list", "gateways.gateway.networking.k8s.io", "any"))
        wait_for(lambda: upstream.allowed("get", "projects.resourcemanager.miloapis.com"))
        yield hub, upstream


@dataclass
class Milo:
    """The upstream server as Milo: the proxy serving projects' control planes, and the
    `gcjob` user's kubeconfig through it (its old contexts kept: routes name one)."""

    proxy: FaultProxy
    gcjob: Path


@pytest.fixture(scope="module")
def milo_module(
    sides: tuple[Side, Side], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Milo]:
    work = tmp_path_factory.mktemp("milo")
    proxy = milo_proxy(sides[1].proxy.target, work)
    try:
        yield Milo(proxy, Path(milo_kubeconfig(str(sides[1].gcjob), proxy, work / "gcjob")))
    finally:
        proxy.stop()


@pytest.fixture
def milo(milo_module: Milo) -> Iterator[Milo]:
    milo_module.proxy.clear_requests()
    yield milo_module
    milo_module.proxy.clear_faults()


@pytest.fixture
def hub_side(sides: tuple[Side, Side]) -> Iterator[Side]:
    hub = sides[0]
    hub.proxy.clear_requests()
    yield hub
    hub.cluster.cleanup()


CONNECTORS_PLURAL = "connectors.networking.datumapis.com"  # one of the copies' kinds


@pytest.fixture
def copies_enforced(hub_side: Side) -> Iterator[Side]:
    """The hub RBAC with cronjobs/components/enforce-copies, for this test; as shipped after."""
    done = hub_side.apply(render("rbac/hub", "enforce-copies"), "--server-side")
    assert done.returncode == 0, done.stderr
    wait_for(lambda: hub_side.allowed("delete", CONNECTORS_PLURAL, "any"))
    try:
        yield hub_side
    finally:
        restored = hub_side.apply(render("rbac/hub"), "--server-side")
        assert restored.returncode == 0, restored.stderr
        wait_for(lambda: not hub_side.allowed("delete", CONNECTORS_PLURAL, "any"))


@pytest.fixture
def upstream_side(sides: tuple[Side, Side]) -> Iterator[Side]:
    upstream = sides[1]
    upstream.proxy.clear_requests()
    yield upstream
    upstream.cluster.cleanup()


def seed(hub: TestCluster, upstream: TestCluster) -> dict[str, tuple[str, str, str]]:
    """One orphan for every sweep and a healthy neighbour of each; returns the orphans as
    kind -> (namespace, name, what deletes it)."""
    ns = hub.namespace()
    hub.create(workload(ns, "web"))
    orphans: dict[str, tuple[str, str, str]] = {}
    for kind, name, referrers in (
        ("ConfigMap", "orphan-config", ["default/gone"]),
        ("Secret", "orphan-creds", ["default/gone"]),
        ("ConfigMap", "live-config", ["default/web"]),
    ):
        hub.create_with_binding(companion(kind, ns, name, referrers))
    hub.create(binding(ns, "gone-configmap", kind="ConfigMap", target="gone"))
    project = upstream.project("gw-live")
    upstream.create(upstream_route(project, "live-route", ("gw-live",)))
    label = f"cluster-{UPSTREAM_CLUSTER}"
    for name, parent in (("orphan-route", "gw-gone"), ("live-route", "gw-live")):
        hub.create(
            route(
                ns,
                name,
                cluster_label=label,
                upstream_namespace=project,
                parents=[{"name": parent}],
            )
        )
    orphans["ConfigMap"] = (ns, "orphan-config", "companions")
    orphans["Secret"] = (ns, "orphan-creds", "companions")
    orphans["ResourceBinding"] = (ns, "gone-configmap", "bindings")
    orphans["HTTPRoute"] = (ns, "orphan-route", "routes")
    return orphans


def gcjob_args(hub: Side, upstream: Side) -> list[str]:
    return [
        "--hub-kubeconfig",
        str(hub.gcjob),
        "--upstream-kubeconfig",
        str(upstream.gcjob),
        "--min-age",
        "0s",
        "--grace",
        "0s",
        "--delete",
    ]


def test_a_full_delete_sweep_needs_nothing_but_the_rendered_rbac(
    hub_side: Side, upstream_side: Side
) -> None:
    orphans = seed(hub_side.cluster, upstream_side.cluster)

    first = run_gcjob(*gcjob_args(hub_side, upstream_side))
    again = run_gcjob(*gcjob_args(hub_side, upstream_side))

    for result in (first, again):
        assert result.exit_code == 0, result.stderr
        assert {s: v["status"] for s, v in result.summary["sweeps"].items()} == {
            "companions": "completed",
            "bindings": "completed",
            "routes": "completed",
            "copies": "completed",
        }
    for kind, (ns, name, sweep) in orphans.items():
        assert hub_side.cluster.gone(kind, ns, name), (kind, name)
        assert first.item(kind, name) is not None
        assert first.item(kind, name)["sweep"] == sweep  # type: ignore[index]
        assert first.outcome(kind, name)[0] == "deleted", first.item(kind, name)  # type: ignore[index]
    ns = orphans["ConfigMap"][0]
    assert hub_side.cluster.present("ConfigMap", ns, "live-config")
    assert hub_side.cluster.present("HTTPRoute", ns, "live-route")
    hub_log = [(r.method, r.path, r.status) for r in hub_side.proxy.requests]
    upstream_log = [(r.method, r.path, r.status) for r in upstream_side.proxy.requests]
    assert not [r for r in hub_log + upstream_log if r[2] in (401, 403)]
    assert not [r for r in hub_log + upstream_log if r[2] is None or r[2] >= 500]
    # The run used every kind of write the RBAC grants: deletes, the Lease's create and update.
    assert any(m == "DELETE" and "/secrets/" in p for m, p, _ in hub_log)
    assert any(m == "POST" and p.endswith("/leases") for m, p, _ in hub_log)
    assert any(m == "PUT" and "/leases/" in p for m, p, _ in hub_log)
    assert not [r for r in upstream_log if r[0] != "GET"]
    # Its Events too (issue 34 item 8): one for each mark and each delete, on their namespaces.
    posted = [(p, status) for m, p, status in hub_log if m == "POST" and p.endswith("/events")]
    assert posted and all(status == 201 for _, status in posted), posted


def test_without_the_events_permission_a_delete_run_warns_and_deletes_as_before(
    hub_side: Side, upstream_side: Side
) -> None:
    """issue 34 item 8: Events are a courtesy: an identity that may not post them gets a
    warning, no Event request, and the run's marks and deletes, exit 0."""
    orphans = seed(hub_side.cluster, upstream_side.cluster)
    rendered = render("rbac/hub")
    done = hub_side.apply(without_verb(rendered, "events", "create"), "--server-side")
    assert done.returncode == 0, done.stderr
    try:
        wait_for(lambda: not hub_side.allowed("create", "events.events.k8s.io", "default"))
        hub_side.proxy.clear_requests()

        result = run_gcjob(*gcjob_args(hub_side, upstream_side))
    finally:
        restored = hub_side.apply(rendered, "--server-side")
        assert restored.returncode == 0, restored.stderr
        wait_for(lambda: hub_side.allowed("create", "events.events.k8s.io", "default"))

    assert result.exit_code == 0, result.stderr
    assert "no Events this run" in result.stderr
    assert "'create' on events.events.k8s.io" in result.stderr
    for kind, (ns, name, _) in orphans.items():
        assert hub_side.cluster.gone(kind, ns, name), (kind, name)
    assert not [r for r in hub_side.proxy.requests if r.path.endswith("/events")]


def test_explain_needs_nothing_but_the_rendered_rbac(hub_side: Side, upstream_side: Side) -> None:
    orphans = seed(hub_side.cluster, upstream_side.cluster)
    short = {
        "ConfigMap": "cm",
        "Secret": "secret",
        "ResourceBinding": "rb",
        "HTTPRoute": "httproute",
    }
    args = gcjob_args(hub_side, upstream_side)[:-1]  # no --delete: explain never deletes

    for kind, (ns, name, _) in orphans.items():
        result = CliRunner().invoke(
            cli, ["explain", f"{short[kind]}/{ns}/{name}", "--output", "json", *args]
        )
        assert result.exit_code == 0, (kind, result.stdout, result.stderr)
        assert json.loads(result.stdout)["verdict"]["action"] == "would-delete", kind

    logs = [*hub_side.proxy.requests, *upstream_side.proxy.requests]
    assert not [(r.path, r.status) for r in logs if r.status in (401, 403)]
    assert {r.method for r in logs} == {"GET"}


def without_verb(manifests: str, resource: str, verb: str) -> str:
    """The rendered RBAC with `verb` taken away from `resource` (and nothing else)."""
    docs = list(yaml.safe_load_all(manifests))
    for doc in docs:
        if doc["kind"] not in ("ClusterRole", "Role"):
            continue
        rules = []
        for rule in doc["rules"]:
            if resource in rule["resources"] and verb in rule["verbs"]:
                others = [r for r in rule["resources"] if r != resource]
                if others:
                    rules.append({**rule, "resources": others})
                verbs = [v for v in rule["verbs"] if v != verb]
                if verbs:
                    rules.append({**rule, "resources": [resource], "verbs": verbs})
            else:
                rules.append(rule)
        doc["rules"] = rules
    return yaml.safe_dump_all(docs)


@pytest.mark.parametrize(
    ("resource", "verb", "namespace"),
    [
        ("secrets", "delete", "any"),
        ("configmaps", "patch", "any"),
        ("workloaddeployments.compute.datumapis.com", "list", "any"),
        ("leases.coordination.k8s.io", "create", "default"),
    ],
)
def test_one_verb_less_is_refused_up_front_and_nothing_is_deleted(
    hub_side: Side, upstream_side: Side, resource: str, verb: str, namespace: str
) -> None:
    orphans = seed(hub_side.cluster, upstream_side.cluster)
    rendered = render("rbac/hub")
    plural = resource.partition(".")[0]
    done = hub_side.apply(without_verb(rendered, plural, verb), "--server-side")
    assert done.returncode == 0, done.stderr
    try:
        wait_for(lambda: not hub_side.allowed(verb, resource, namespace))
        hub_side.proxy.clear_requests()

        result = run_gcjob(*gcjob_args(hub_side, upstream_side))
    finally:
        restored = hub_side.apply(rendered, "--server-side")
        assert restored.returncode == 0, restored.stderr
        wait_for(lambda: hub_side.allowed(verb, resource, namespace))

    assert result.exit_code == 2, result.stderr
    message = [line for line in result.stderr.splitlines() if line.startswith("gcjob: error:")]
    assert len(message) == 1, result.stderr
    assert f"'{verb}' on {resource}" in message[0]  # as preflight names it: plural.group
    assert result.summary["exit_code"] == 2
    assert not result.items
    assert not [
        r
        for r in hub_side.proxy.requests
        if r.method in ("DELETE", "PUT", "POST") and "selfsubjectaccessreviews" not in r.path
    ]
    for kind, (ns, name, _) in orphans.items():
        assert hub_side.cluster.present(kind, ns, name), (kind, name)


@pytest.mark.parametrize(
    ("directory", "expected"),
    [
        ("overlays/dry-run", ["CronJob", "ServiceAccount"]),
        ("overlays/enforce", ["CronJob", "ServiceAccount"]),
        ("rollout", ["Job"]),
        ("once", ["Job"]),
        ("restore", ["Job"]),
        ("storage", ["PersistentVolumeClaim", "PersistentVolumeClaim"]),
        ("rbac/hub-restore", ["ClusterRole", "ClusterRoleBinding", "ServiceAccount"]),
        ("rbac/hub-without-secrets", ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]),
    ],
)
def test_every_rendered_object_passes_a_server_side_dry_run(
    hub_side: Side, directory: str, expected: list[str]
) -> None:
    rendered = render(directory)
    kinds = sorted(doc["kind"] for doc in yaml.safe_load_all(rendered))

    done = hub_side.apply(rendered, "--dry-run=server", "--namespace", "default")

    assert done.returncode == 0, done.stderr
    assert kinds == expected
    assert done.stdout.count("(server dry run)") == len(kinds), done.stdout
    created = kubectl(
        hub_side.admin, "get", "cronjobs,jobs", "--namespace", "default", "-o", "name"
    )
    assert created.returncode == 0 and not created.stdout.strip()  # a dry run created nothing


@dataclass
class Projects:
    """A deleted project's objects on the hub (copies and anchors by owner) and a live one's."""

    ns: str
    gone: str
    copies: list[tuple[str, str]]  # (kind, name), the deleted project's copies
    anchors: dict[tuple[str, str], str]  # each copy -> the name of the anchor that owns it
    live_copy: tuple[str, str]
    live_anchor: str


def seed_projects(hub: TestCluster, upstream: TestCluster, milo: FaultProxy) -> Projects:
    """A deleted project (four owners of four kinds, a Secret among them, each with its anchor
    and copy, and a route) and a live project (an owner that exists, its anchor and copy)."""
    live, gone = project_name(), project_name()
    make_project(upstream, live)
    make_project(upstream, gone)
    upstream_ns = upstream.namespace("app")
    ns = hub.namespace("copies")
    owned: dict[tuple[str, str], str] = {}
    for group, kind, collection, api_version, name in (
        (NET, "Connector", CONNECTORS, f"{NET}/v1alpha1", "tunnel"),
        (NET, "HTTPProxy", HTTPPROXIES, f"{NET}/v1alpha", "proxy"),
        ("gateway.networking.k8s.io", "Gateway", GATEWAYS, "gateway.networking.k8s.io/v1", "edge"),
        ("", "Secret", SECRETS, "v1", "tls"),
    ):
        found = labels(gone, group, kind, upstream_ns, name)
        made = anchor(hub, ns, str(uuid.uuid4()), found)
        synced = {GATEWAY_SYNC_LABEL: "true"} if kind == "Secret" else {}  # NSO copies only these
        copy(hub, ns, collection, api_version, kind, name, found | synced, made)
        owned[(kind, name)] = made["metadata"]["name"]
    upstream.create(gateway(upstream_ns, "edge"))
    upstream.create(upstream_route(upstream_ns, "live-project-route", ("edge",)))
    kept = labels(live, NET, "Connector", upstream_ns, "web")
    live_anchor = anchor(hub, ns, live_owner(upstream, upstream_ns, "web"), kept)
    copy(hub, ns, CONNECTORS, f"{NET}/v1alpha1", "Connector", "web", kept, live_anchor)
    # A project is proven gone only while the same API answers for another: the live one's
    # route (its Gateway exists) is read in the same run.
    for name, project in (("gone-project-route", gone), ("live-project-route", live)):
        hub.create(
            route(
                ns,
                name,
                cluster_label=f"cluster-{project}",
                upstream_namespace=upstream_ns,
                parents=[{"name": "edge"}],
            )
        )
    delete_project(upstream, milo, gone)
    return Projects(
        ns, gone, list(owned), owned, ("Connector", "web"), live_anchor["metadata"]["name"]
    )


ALL_SWEEPS = ("companions", "bindings", "routes", "copies")


def enforced(hub: Side, milo: Milo) -> list[str]:
    """A --delete run through Milo, every sweep enforced (the defaults and copies)."""
    args = [
        *("--hub-kubeconfig", str(hub.gcjob), "--upstream-kubeconfig", str(milo.gcjob)),
        *("--upstream-server-template", template(milo.proxy)),
        *("--min-age", "0s", "--grace", "0s", "--clock-skew", "0s", "--delete"),
    ]
    for sweep in ALL_SWEEPS:
        args += ["--enforce", sweep]
    return args


def test_as_shipped_the_copies_sweep_may_not_delete_and_a_default_run_needs_no_delete(
    hub_side: Side, upstream_side: Side, milo: Milo
) -> None:
    """issue 51 item 6: cronjobs/rbac/hub grants the report-only copies sweep no `delete`. A
    --delete run enforcing as by default sends every request it needs and none is refused (the
    deleted project's copies are marked and reported would-delete, not deleted); a run that
    enforces copies without cronjobs/components/enforce-copies is told what to grant, and the
    copies sweep deletes nothing."""
    projects = seed_projects(hub_side.cluster, upstream_side.cluster, milo.proxy)
    assert not hub_side.allowed("delete", CONNECTORS_PLURAL, projects.ns)
    default = [a for a in enforced(hub_side, milo) if a not in ("--enforce", *ALL_SWEEPS)]

    report_only = run_gcjob(*default)
    log = [(r.method, r.path, r.status) for r in hub_side.proxy.requests]
    hub_side.proxy.clear_requests()
    enforcing = run_gcjob(*enforced(hub_side, milo))

    assert report_only.exit_code == 0, report_only.stderr
    assert report_only.summary["sweeps"]["copies"]["status"] == "completed"
    for kind, name in projects.copies:
        assert report_only.outcome(kind, name) == ("would-delete", "project-gone"), (kind, name)
        assert present(hub_side.cluster, kind, projects.ns, name), (kind, name)
    assert not [r for r in log if r[2] in (401, 403)]
    copies = enforcing.summary["sweeps"]["copies"]
    assert copies["status"] == "not-configured", copies
    assert f"'delete' on {CONNECTORS_PLURAL}" in copies["detail"]
    assert "grant it (cronjobs/components/enforce-copies)" in copies["detail"]  # what to add
    assert not [i for i in enforcing.items if i["sweep"] == "copies"]
    for kind, name in projects.copies:
        assert present(hub_side.cluster, kind, projects.ns, name), (kind, name)


def test_a_deleted_projects_copies_go_with_nothing_but_the_rendered_rbac(
    copies_enforced: Side, upstream_side: Side, milo: Milo
) -> None:
    hub_side = copies_enforced
    orphans = seed(hub_side.cluster, upstream_side.cluster)
    projects = seed_projects(hub_side.cluster, upstream_side.cluster, milo.proxy)

    result = run_gcjob(*enforced(hub_side, milo))

    assert result.exit_code == 0, (
        [(i["kind"], i["name"], i["action"], i["reason"], i.get("detail")) for i in result.items],
        result.summary,
    )
    assert {s: v["status"] for s, v in result.summary["sweeps"].items()} == dict.fromkeys(
        ALL_SWEEPS, "completed"
    )
    deleted = [(i["kind"], i["name"]) for i in result.items if i["action"] == "deleted"]
    for kind, name in projects.copies:
        anchor_name = projects.anchors[(kind, name)]
        assert result.outcome(kind, name) == ("deleted", "project-gone"), (kind, name)
        assert result.outcome("ConfigMap", anchor_name) == ("deleted", "project-gone")
        assert deleted.index((kind, name)) < deleted.index(("ConfigMap", anchor_name))
        assert not present(hub_side.cluster, kind, projects.ns, name), (kind, name)
        assert not present(hub_side.cluster, "ConfigMap", projects.ns, anchor_name)
    assert result.outcome("HTTPRoute", "gone-project-route") == ("deleted", "project-gone")
    assert hub_side.cluster.gone("HTTPRoute", projects.ns, "gone-project-route")
    found = {state: n for state, n in result.summary["projects"].items() if n}
    assert found == {"gone": 1, "present": 1}  # asked by both sweeps, counted once each
    assert hub_side.cluster.present("HTTPRoute", projects.ns, "live-project-route")
    # The live project's copy and anchor stay, healthy; the other sweeps' orphans went too.
    live_kind, live_name = projects.live_copy
    assert present(hub_side.cluster, live_kind, projects.ns, live_name)
    assert present(hub_side.cluster, "ConfigMap", projects.ns, projects.live_anchor)
    assert result.outcome(*projects.live_copy) is None
    for kind, (ns, name, _) in orphans.items():
        assert hub_side.cluster.gone(kind, ns, name), (kind, name)
    logs = [*hub_side.proxy.requests, *upstream_side.proxy.requests, *milo.proxy.requests]
    assert not [(r.method, r.path, r.status) for r in logs if r.status in (401, 403)]
    # The Project API was asked (a list, and the gone project by name), and nothing upstream
    # was written.
    asked = [r.path for r in milo.proxy.requests if "/control-plane" not in r.path]
    assert any(p.endswith("/projects") or "/projects?" in p for p in asked), asked
    assert any(p.endswith(f"/projects/{projects.gone}") for p in asked), asked
    upstream_writes = [*upstream_side.proxy.requests, *milo.proxy.requests]
    assert not [
        (r.method, r.path)
        for r in upstream_writes
        if r.method != "GET" and "selfsubjectaccessreviews" not in r.path
    ]


@pytest.mark.parametrize(
    ("side", "rbac", "resource", "verb", "namespace"),
    [
        ("hub", "rbac/hub", CONNECTORS_PLURAL, "list", "any"),
        ("milo", "rbac/projects", "projects.resourcemanager.miloapis.com", "get", ""),
    ],
)
def test_one_verb_less_for_the_copies_sweep_leaves_it_not_configured_and_deletes_none_of_it(
    copies_enforced: Side,
    upstream_side: Side,
    milo: Milo,
    side: str,
    rbac: str,
    resource: str,
    verb: str,
    namespace: str,
) -> None:
    hub_side = copies_enforced
    projects = seed_projects(hub_side.cluster, upstream_side.cluster, milo.proxy)
    where = hub_side if side == "hub" else upstream_side
    rendered = render(rbac, "enforce-copies") if side == "hub" else render(rbac)
    plural = resource.partition(".")[0]
    done = where.apply(without_verb(rendered, plural, verb), "--server-side")
    assert done.returncode == 0, done.stderr
    try:
        wait_for(lambda: not where.allowed(verb, resource, namespace))
        hub_side.proxy.clear_requests()

        result = run_gcjob(*enforced(hub_side, milo))
    finally:
        restored = where.apply(rendered, "--server-side")
        assert restored.returncode == 0, restored.stderr
        wait_for(lambda: where.allowed(verb, resource, namespace))

    copies = result.summary["sweeps"]["copies"]
    assert copies["status"] == "not-configured", copies
    assert f"'{verb}' on {resource}" in copies["detail"]
    assert rbac in copies["detail"]  # what to grant
    assert not [i for i in result.items if i["sweep"] == "copies"]
    for kind, name in projects.copies:
        assert present(hub_side.cluster, kind, projects.ns, name), (kind, name)
        assert present(hub_side.cluster, "ConfigMap", projects.ns, projects.anchors[(kind, name)])
    kinds = {"/connectors/", "/httpproxies/", "/gateways/", "/secrets/", "/configmaps/"}
    assert not [
        (r.method, r.path)
        for r in hub_side.proxy.requests
        if r.method in ("DELETE", "PATCH")
        and any(k in r.path for k in kinds)
        and f"/namespaces/{projects.ns}/" in r.path
    ]
    # The other sweeps ran as ever: the deleted project's route is the routes sweep's, proven
    # gone only where the Project API may be read.
    route_outcome = result.outcome("HTTPRoute", "gone-project-route")
    if side == "hub":
        assert route_outcome == ("deleted", "project-gone")
    else:
        assert route_outcome == ("skipped", "upstream-unavailable")
        assert hub_side.cluster.present("HTTPRoute", projects.ns, "gone-project-route")


def test_without_secrets_a_routes_run_needs_nothing_more_and_any_other_sweep_is_refused(
    hub_side: Side, upstream_side: Side
) -> None:
    """cronjobs/rbac/hub-without-secrets on the real server: a `--delete` run with the
    component's `--sweep=routes` deletes its orphaned route and never asks for a Secret; a run
    of the other sweeps with that identity is refused up front, naming the Secrets it may not
    read, and deletes nothing."""
    orphans = seed(hub_side.cluster, upstream_side.cluster)
    rendered = render("rbac/hub")
    narrowed = render("rbac/hub-without-secrets")
    done = hub_side.apply(narrowed, "--server-side")
    assert done.returncode == 0, done.stderr
    try:
        wait_for(lambda: not hub_side.allowed("list", "secrets", "any"))
        assert hub_side.allowed("delete", "httproutes.gateway.networking.k8s.io", "any")
        hub_side.proxy.clear_requests()
        routes = run_gcjob(*gcjob_args(hub_side, upstream_side), "--sweep=routes")
        routes_log = list(hub_side.proxy.requests)
        hub_side.proxy.clear_requests()
        others = run_gcjob(*gcjob_args(hub_side, upstream_side))
        others_log = list(hub_side.proxy.requests)
    finally:
        restored = hub_side.apply(rendered, "--server-side")
        assert restored.returncode == 0, restored.stderr
        wait_for(lambda: hub_side.allowed("list", "secrets", "any"))

    assert routes.exit_code == 0, routes.stderr
    assert {s: v["status"] for s, v in routes.summary["sweeps"].items()} == {"routes": "completed"}
    ns, name, _ = orphans["HTTPRoute"]
    assert routes.outcome("HTTPRoute", name) == ("deleted", "upstream-gateways-gone")
    assert hub_side.cluster.gone("HTTPRoute", ns, name)
    assert not [(r.method, r.path) for r in routes_log if "/secrets" in r.path]
    assert not [(r.method, r.path, r.status) for r in routes_log if r.status in (401, 403)]

    assert others.exit_code == 2, others.stderr
    [message] = [line for line in others.stderr.splitlines() if line.startswith("gcjob: error:")]
    assert "'list' on secrets" in message
    assert not [
        r
        for r in others_log
        if r.method in ("DELETE", "PATCH", "PUT", "POST")
        and "selfsubjectaccessreviews" not in r.path
    ]
    for kind in ("ConfigMap", "Secret", "ResourceBinding"):
        ns, name, _ = orphans[kind]
        assert hub_side.cluster.present(kind, ns, name), (kind, name)


SHARDS = 4  # cronjobs/overlays/sharded's COUNT, which cronjobs/rbac/hub-sharded grants
LEASES = "leases.coordination.k8s.io"


def test_a_sharded_delete_sweep_needs_nothing_but_the_sharded_rbac_and_is_refused_without_it(
    hub_side: Side, upstream_side: Side
) -> None:
    """issue 33 item 5's left-over: a shard's preflight asks for the Leases it takes, reads and
    releases (its own, the run's, its siblings'). Without cronjobs/rbac/hub-sharded (the plain
    hub RBAC grants the run's Lease only) every shard is refused up front, exit 2, naming its
    own Lease, and writes nothing; with it, the four shards one after the other delete every
    orphan, and no request is refused."""
    orphans = seed(hub_side.cluster, upstream_side.cluster)
    args = gcjob_args(hub_side, upstream_side)
    hub_side.proxy.clear_requests()

    refused = [run_gcjob(*args, "--shard", f"{i}/{SHARDS}") for i in range(SHARDS)]

    for index, result in enumerate(refused):
        assert result.exit_code == 2, result.stderr
        [message] = [line for line in result.stderr.splitlines() if "gcjob: error:" in line]
        own = f"gcjob-shard-{index}-of-{SHARDS}"
        assert f"'get' on leases.coordination.k8s.io named {own} in namespace default" in message
        assert f"'update' on leases.coordination.k8s.io named {own}" in message
        assert "cronjobs/rbac/hub-sharded" in message  # what to grant
        assert "named gcjob in" not in message  # the run's Lease is granted: not named
        assert not result.items
    assert not [
        (r.method, r.path)
        for r in hub_side.proxy.requests
        if r.method in ("DELETE", "PATCH", "PUT", "POST")
        and "selfsubjectaccessreviews" not in r.path
    ]
    for kind, (ns, name, _) in orphans.items():
        assert hub_side.cluster.present(kind, ns, name), (kind, name)

    rendered, sharded = render("rbac/hub"), render("rbac/hub-sharded")
    done = hub_side.apply(sharded, "--server-side")
    assert done.returncode == 0, done.stderr
    try:
        wait_for(
            lambda: hub_side.allowed("update", LEASES, "default", f"gcjob-shard-3-of-{SHARDS}")
        )
        hub_side.proxy.clear_requests()
        shards = [run_gcjob(*args, "--shard", f"{i}/{SHARDS}") for i in range(SHARDS)]
        log = [(r.method, r.path, r.status) for r in hub_side.proxy.requests]
    finally:
        restored = hub_side.apply(rendered, "--server-side")
        assert restored.returncode == 0, restored.stderr
        wait_for(
            lambda: not hub_side.allowed("update", LEASES, "default", f"gcjob-shard-3-of-{SHARDS}")
        )

    assert [r.exit_code for r in shards] == [0] * SHARDS, [r.stderr for r in shards]
    for kind, (ns, name, _) in orphans.items():
        assert hub_side.cluster.gone(kind, ns, name), (kind, name)
        [deleted] = [r.outcome(kind, name) for r in shards if r.outcome(kind, name)]
        assert deleted[0] == "deleted", (kind, name)
    assert not [r for r in log if r[2] in (401, 403)]
    for index in range(SHARDS):  # each shard took its own Lease, and let it go
        assert any(
            m == "PUT" and p.endswith(f"/leases/gcjob-shard-{index}-of-{SHARDS}") for m, p, _ in log
        )
        lease = hub_side.cluster.get("Lease", "default", f"gcjob-shard-{index}-of-{SHARDS}")
        assert lease is not None and not lease["spec"].get("holderIdentity")
    run_lease = hub_side.cluster.get("Lease", "default", "gcjob")
    assert run_lease is not None and not run_lease["spec"].get("holderIdentity")


def test_a_run_by_hand_in_another_lock_namespace_is_told_which_namespace_first(
    hub_side: Side, upstream_side: Side
) -> None:
    """issue 51 item 10: the rendered RBAC grants Leases in the lock namespace only; a run by
    hand that names another is told to use that namespace before being told what to grant,
    and touches nothing."""
    orphans = seed(hub_side.cluster, upstream_side.cluster)

    elsewhere = orphans["ConfigMap"][0]  # a namespace the RBAC grants no Lease in

    result = run_gcjob(*gcjob_args(hub_side, upstream_side), "--lock-namespace", elsewhere)

    assert result.exit_code == 2, result.stderr
    [line] = [line for line in result.stderr.splitlines() if "error:" in line]
    said = f"--lock-namespace {elsewhere}: the hub identity may not take the lock there ("
    assert said in line
    assert "run with the lock namespace its RBAC grants Leases in" in line
    assert line.index("the lock namespace its RBAC") < line.index("or grant it")
    assert result.items == []
    for kind, (ns, name, _) in orphans.items():
        assert hub_side.cluster.present(kind, ns, name), (kind, name)


LOCK_NAMESPACE = "gcjob-system"  # an install's own, as docs/install.md's settings block sets it


@dataclass(frozen=True)
class Documented:
    """One hub RBAC docs/install.md or docs/operating.md names: what an install's overlay of it
    lists (docs/install.md "Your overlays": the clone's kustomization, a copy of the settings
    and the settings component, and these components), whose identity (a ServiceAccount token,
    or the user `gcjob`), and what the run it is for adds to its arguments."""

    stands_on: str
    components: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    shards: int = 0  # a run of each shard (cronjobs/overlays/sharded), one after the other

    @property
    def serviceaccount(self) -> bool:
        return "serviceaccount" in self.stands_on


ENFORCE_ALL = tuple(a for sweep in ALL_SWEEPS for a in ("--enforce", sweep))
NAMED_ALL = tuple(f"--sweep={sweep}" for sweep in ALL_SWEEPS)
DOCUMENTED = (
    Documented("rbac/hub"),  # install.md 3b
    Documented("rbac/hub-serviceaccount"),  # install.md 3a
    Documented("rbac/hub-without-secrets", args=("--sweep=routes",)),  # install.md 3c
    Documented("rbac/hub-serviceaccount", ("without-secrets",), ("--sweep=routes",)),
    Documented("rbac/hub", ("enforce-copies",), ENFORCE_ALL),  # install.md 8
    Documented("rbac/hub-serviceaccount", ("enforce-copies",), ENFORCE_ALL),
    # The namespaces sweep, named (it runs only so), its reads an optional component's
    Documented("rbac/hub", ("namespaces",), (*NAMED_ALL, "--sweep=namespaces")),  # rules.md
    Documented("rbac/hub-serviceaccount", ("namespaces",), (*NAMED_ALL, "--sweep=namespaces")),
    Documented("rbac/hub-sharded", shards=SHARDS),  # operating.md "Sharding"
    Documented("rbac/hub-sharded-serviceaccount", shards=SHARDS),
)


def own_overlay(work: Path, documented: Documented) -> str:
    """What an install's own overlay of `documented` renders, with a lock namespace of its own."""
    shutil.copytree(CRONJOBS, work / "gcjob" / "cronjobs")
    settings = work / "my-gcjob" / "settings"
    shutil.copytree(CRONJOBS / "settings", settings)
    values = settings / "settings.yaml"
    values.write_text(
        re.sub(
            r"(?m)^  lockNamespace: .*$", f"  lockNamespace: {LOCK_NAMESPACE}", values.read_text()
        )
    )
    hub = work / "my-gcjob" / "hub"
    hub.mkdir()
    components = ", ".join(
        f"../../gcjob/cronjobs/components/{c}" for c in ("settings", *documented.components)
    )
    (hub / "kustomization.yaml").write_text(
        f"resources: [../../gcjob/cronjobs/{documented.stands_on}, ../settings]\n"
        f"components: [{components}]\n"
    )
    done = subprocess.run(
        [servers.kubectl(), "kustomize", str(hub)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


def with_token(kubeconfig: Path, token: str, path: Path) -> Path:
    """`kubeconfig` with each user's token replaced by `token`."""
    config = yaml.safe_load(kubeconfig.read_text())
    for user in config["users"]:
        user["user"]["token"] = token
    path.write_text(yaml.safe_dump(config))
    return path


def serviceaccount_token(side: Side, namespace: str) -> str:
    """A TokenRequest API token of the ServiceAccount `gcjob` in `namespace`."""
    answer = side.server.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/gcjob/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    return str(answer["status"]["token"])


@pytest.mark.parametrize(
    "documented",
    DOCUMENTED,
    ids=[f"{d.stands_on}+{'+'.join(d.components) or 'as-is'}" for d in DOCUMENTED],
)
def test_every_documented_rbac_applied_as_documented_lets_its_run_through(
    hub_side: Side, upstream_side: Side, milo: Milo, tmp_path: Path, documented: Documented
) -> None:
    """issue 51 item 7: each hub RBAC the docs name, in an install's own overlay (a lock
    namespace of its own), applied to the real hub; the upstream's and Milo's of the same kind
    of identity (a ServiceAccount's: install.md section 5 and cronjobs/rbac/projects-serviceaccount;
    else the user's). A --delete run of what that RBAC is for, as that identity (a TokenRequest
    token of the ServiceAccount, or the user's), finishes every sweep it runs (exit 0), the
    copies sweep proving a deleted project's copies gone through Milo, with no request refused."""
    orphans = seed(hub_side.cluster, upstream_side.cluster)
    # A deleted project is proven gone only beside a project that answers; a shard may judge
    # one without the other (issue 51 item 1): the shards' runs are of the hub's orphans.
    projects = (
        None
        if documented.shards
        else seed_projects(hub_side.cluster, upstream_side.cluster, milo.proxy)
    )
    hub_side.cluster.ensure_namespace(LOCK_NAMESPACE)
    hub_rbac = own_overlay(tmp_path, documented)
    upstream_rbac = (
        ("rbac/upstream-serviceaccount", "rbac/projects-serviceaccount")
        if documented.serviceaccount
        else ("rbac/upstream", "rbac/projects")
    )
    hub_config, upstream_config = hub_side.gcjob, upstream_side.gcjob
    try:
        done = hub_side.apply(hub_rbac, "--server-side")
        assert done.returncode == 0, done.stderr
        for rbac in upstream_rbac:
            done = upstream_side.apply(render(rbac), "--server-side")
            assert done.returncode == 0, done.stderr
        hub_token = upstream_token = GCJOB_TOKEN
        if documented.serviceaccount:
            hub_token = serviceaccount_token(hub_side, LOCK_NAMESPACE)
            upstream_token = serviceaccount_token(upstream_side, "default")
            hub_config = with_token(hub_side.gcjob, hub_token, tmp_path / "hub")
            upstream_config = with_token(upstream_side.gcjob, upstream_token, tmp_path / "up")
        # What was just applied is the servers' before the run.
        wait_for(lambda: hub_side.allowed("create", LEASES, LOCK_NAMESPACE, token=hub_token))
        last = f"gcjob-shard-{documented.shards - 1}-of-{documented.shards}"
        if documented.shards:
            wait_for(lambda: hub_side.allowed("update", LEASES, LOCK_NAMESPACE, last, hub_token))
        if "enforce-copies" in documented.components:
            wait_for(lambda: hub_side.allowed("delete", CONNECTORS_PLURAL, "x", token=hub_token))
        projects_api = "projects.resourcemanager.miloapis.com"
        wait_for(lambda: upstream_side.allowed("get", projects_api, token=upstream_token))
        via_milo = milo_kubeconfig(str(upstream_config), milo.proxy, tmp_path / "milo")
        args = [
            *("--hub-kubeconfig", str(hub_config), "--upstream-kubeconfig", via_milo),
            *("--upstream-server-template", template(milo.proxy)),
            *("--min-age", "0s", "--grace", "0s", "--clock-skew", "0s", "--delete"),
            *("--lock-namespace", LOCK_NAMESPACE, *documented.args),
        ]
        for log in (hub_side.proxy, upstream_side.proxy, milo.proxy):
            log.clear_requests()
        shards = [["--shard", f"{i}/{documented.shards}"] for i in range(documented.shards)]
        results = [run_gcjob(*args, *shard) for shard in shards or [[]]]
        requests = [*hub_side.proxy.requests, *upstream_side.proxy.requests, *milo.proxy.requests]
    finally:
        for side, rbac in (
            (hub_side, "rbac/hub"),
            (upstream_side, "rbac/upstream"),
            (upstream_side, "rbac/projects"),
        ):
            restored = side.apply(render(rbac), "--server-side")
            assert restored.returncode == 0, restored.stderr
        wait_for(lambda: hub_side.allowed("list", "secrets", "any"))
        wait_for(lambda: upstream_side.allowed("get", "projects.resourcemanager.miloapis.com"))

    for result in results:
        items = [(i["kind"], i["name"], i["action"], i["reason"]) for i in result.items]
        assert result.exit_code == 0, (items, result.summary.get("sweeps"))
        statuses = {s: v["status"] for s, v in result.summary["sweeps"].items()}
        assert set(statuses.values()) == {"completed"}, statuses
    assert not [(r.method, r.path, r.status) for r in requests if r.status in (401, 403)]
    sweeps = {s for result in results for s in result.summary["sweeps"]}
    named = {a.removeprefix("--sweep=") for a in documented.args if a.startswith("--sweep=")}
    assert sweeps == (named or set(ALL_SWEEPS))
    outcomes = [r.outcome("HTTPRoute", orphans["HTTPRoute"][1]) for r in results]
    assert ("deleted", "upstream-gateways-gone") in outcomes
    if projects is not None and "copies" in sweeps:  # Milo's projects read as this identity
        copies = {r.outcome(*projects.copies[0]) for r in results} - {None}
        enforced = "enforce-copies" in documented.components
        assert copies == {("deleted" if enforced else "would-delete", "project-gone")}
