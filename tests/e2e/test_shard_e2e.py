"""End to end (issue 33 item 5): `--shard INDEX/COUNT` on the real servers.

Four shards run at once, as an Indexed Job's pods run, give exactly one run's decisions: every
item one unsharded run reports on the same world, once, with the same action and reason, and
their deletions are exactly its would-deletes. A shard that fails (its upstream clusters
unreachable through the fault proxy, or killed in the middle of its run) leaves the others'
work standing; its own part waits for its next run. The Leases: each shard its own, the run's
held by the shards of one COUNT together, excluding an unsharded run, a drain and another COUNT.

Many upstream clusters (projects) are served by the one upstream server through the clusters
proxy of tests/e2e/test_upstream_concurrency_e2e.py (`/clusters/<name>` stripped).
"""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gcjob.domain import GATEWAY_SYNC_LABEL
from gcjob.shard import Shard, shard_of
from testbed.cluster import TestCluster
from testbed.faultproxy import Fault, FaultProxy
from testbed.milo import (
    CONFIGMAPS,
    CONNECTORS,
    NET,
    SECRETS,
    connector_group,
    copy,
    delete_project,
    labels,
    live_owner,
    make_project,
    owned_by,
    project_name,
)
from testbed.objects import companion, route, upstream_route, workload
from testbed.report import Result, records_of, run_gcjob, start_gcjob
from tests.e2e.test_copies_e2e import args as copies_args
from tests.e2e.test_copies_e2e import milo, milo_kubeconfig, served
from tests.e2e.test_upstream_concurrency_e2e import clusters_proxy, template_kubeconfig

# The fixtures this module uses, from the modules that define them.
__all__ = ["clusters_proxy", "milo", "milo_kubeconfig", "served", "template_kubeconfig"]

COUNT = 4
CLUSTERS = tuple(f"c-{i}" for i in range(8))  # sha256 puts at least one in every shard
SWEEPS = ("--sweep", "companions", "--sweep", "bindings", "--sweep", "routes")
Item = tuple[str, str, str, str, str, str]


def test_the_clusters_fall_in_every_shard() -> None:
    assert {shard_of(cluster, COUNT) for cluster in CLUSTERS} == set(range(COUNT))


class World:
    """Hub namespaces (at least one in every shard) each with a live and an orphaned companion
    (its binding too), and for every cluster an orphaned and a live route, spread over them."""

    def __init__(self, hub: TestCluster, upstream: TestCluster) -> None:
        project = upstream.project("gw-live")
        self.namespaces: list[str] = []
        while {shard_of(ns, COUNT) for ns in self.namespaces} != set(range(COUNT)):
            assert len(self.namespaces) < 40
            self.namespaces.append(hub.namespace("shard"))
        for ns in self.namespaces:
            hub.create(workload(ns, "web"))
            hub.create(companion("ConfigMap", ns, "live", ["default/web"]))
            hub.create_with_binding(companion("ConfigMap", ns, "orphan", ["default/gone"]))
        for i, cluster in enumerate(CLUSTERS):
            upstream.create(upstream_route(project, f"{cluster}-live", ("gw-live",)))
            ns = self.namespaces[i % len(self.namespaces)]
            for name, parent in ((f"{cluster}-orphan", "gw-gone"), (f"{cluster}-live", "gw-live")):
                hub.create(
                    route(
                        ns,
                        name,
                        cluster_label=f"cluster-{cluster}",
                        upstream_namespace=project,
                        parents=[{"name": parent}],
                    )
                )
        self.lock_namespace = self.namespaces[0]

    def route_ns(self, cluster: str) -> str:
        return self.namespaces[CLUSTERS.index(cluster) % len(self.namespaces)]


@pytest.fixture
def args_of(
    hub: TestCluster, hub_kubeconfig: str, template_kubeconfig: str, clusters_proxy: FaultProxy
) -> Callable[[World], list[str]]:
    def args(world: World) -> list[str]:
        found = [
            *("--hub-kubeconfig", hub_kubeconfig, "--min-age", "0s", "--grace", "0s"),
            *("--lock-namespace", world.lock_namespace, "--timeout", "90s"),
            *("--upstream-kubeconfig", template_kubeconfig),
            *("--upstream-server-template", clusters_proxy.url + "/clusters/{cluster}"),
            *SWEEPS,
        ]
        for ns in world.namespaces:
            found += ["--namespace", ns]
        return [*found, "--hub-context", hub.context] if hub.context else found

    return args


def items(result: Result) -> Counter[Item]:
    return Counter(
        (i["sweep"], i["kind"], i["namespace"], i["name"], i["action"], i["reason"])
        for i in result.items
    )


def at_once(args: list[str], *more: str, count: int = COUNT) -> list[Result]:
    """COUNT shards started together, as the Indexed Job's pods are, each its own process."""
    processes = [start_gcjob(*args, *more, "--shard", f"{i}/{count}") for i in range(count)]
    results = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=240)
        results.append(Result(process.returncode, records_of(stdout), stdout, stderr))
    return results


def as_one_run(args: list[str]) -> tuple[Result, list[Result]]:
    """One run, then COUNT shards at once, each exit 0: together they report each of the one
    run's items once, in one shard, with its action and reason."""
    one = run_gcjob(*args)
    shards = at_once(args)
    assert one.exit_code == 0, one.stderr
    assert [r.exit_code for r in shards] == [0] * COUNT, [r.stderr for r in shards]
    together: Counter[Item] = Counter()
    for result in shards:
        together.update(items(result))
    assert together == items(one)
    return one, shards


def holder(hub: TestCluster, ns: str, name: str) -> str | None:
    lease = hub.get("Lease", ns, name)
    return None if lease is None else lease["spec"].get("holderIdentity")


def test_four_shards_at_once_give_exactly_one_runs_decisions(
    hub: TestCluster, upstream: TestCluster, args_of: Callable[[World], list[str]]
) -> None:
    world = World(hub, upstream)
    args = args_of(world)

    one, shards = as_one_run(args)  # dry runs: the world stays as it is

    would = {i[:4] for i in items(one) if i[4] == "would-delete"}
    assert len(would) == 2 * len(world.namespaces) + len(CLUSTERS)  # orphans, bindings, routes
    for index, result in enumerate(shards):
        summary = result.summary
        assert (summary["shard"]["index"], summary["shard"]["count"]) == (index, COUNT)
        mine = {c for c in CLUSTERS if shard_of(c, COUNT) == index}
        assert summary["shard"]["clusters_read"]["routes"] == len(mine)
        routes = {i["name"] for i in result.items if i["kind"] == "HTTPRoute"}
        assert {name.removesuffix("-orphan") for name in routes} == mine  # its projects' only
    for sweep, state in one.summary["sweeps"].items():
        parts = [r.summary["sweeps"][sweep] for r in shards]
        assert sum(p["in_scope"] for p in parts) == state["in_scope"], sweep

    deleting = at_once(args, "--delete")

    assert [r.exit_code for r in deleting] == [0] * COUNT, [r.stderr for r in deleting]
    deleted: Counter[Item] = Counter()
    for result in deleting:
        deleted.update(
            (*i[:4], "would-delete" if i[4] == "deleted" else i[4], i[5])
            for i in items(result)
            if i[4] in ("deleted", "would-delete")
        )
    assert deleted == Counter(i for i in items(one) if i[4] == "would-delete")
    for sweep, kind, ns, name in would:
        assert hub.gone(kind, ns, name), (sweep, kind, ns, name)
    for ns in world.namespaces:
        assert hub.present("ConfigMap", ns, "live")
    for cluster in CLUSTERS:
        assert hub.present("HTTPRoute", world.route_ns(cluster), f"{cluster}-live")
    # Every Lease free again: the shards', and the run's (the last shard out released it).
    ns = world.lock_namespace
    assert not holder(hub, ns, "gcjob")
    for index in range(COUNT):
        assert not holder(hub, ns, Shard(index, COUNT).lease_name("gcjob"))


def test_a_shard_whose_upstreams_fail_leaves_the_others_work_standing(
    hub: TestCluster,
    upstream: TestCluster,
    args_of: Callable[[World], list[str]],
    clusters_proxy: FaultProxy,
) -> None:
    world = World(hub, upstream)
    failing = 1
    down = [c for c in CLUSTERS if shard_of(c, COUNT) == failing]
    clusters_proxy.add_fault(Fault(path=rf"^/clusters/({'|'.join(down)})/", status=503, times=None))

    results = at_once(args_of(world), "--delete")

    codes = [r.exit_code for r in results]
    assert codes[failing] == 1, results[failing].stderr  # an upstream it could not read
    assert [c for i, c in enumerate(codes) if i != failing] == [0] * (COUNT - 1), codes
    for cluster in CLUSTERS:
        orphan = (world.route_ns(cluster), f"{cluster}-orphan")
        if cluster in down:
            assert hub.present("HTTPRoute", *orphan)
            assert results[failing].outcome("HTTPRoute", orphan[1]) == (
                "skipped",
                "upstream-unavailable",
            )
        else:
            assert hub.gone("HTTPRoute", *orphan)
    for ns in world.namespaces:  # the companions go by namespace: every shard did its own
        assert hub.gone("ConfigMap", ns, "orphan")


def test_a_killed_shard_leaves_the_others_work_standing_and_its_lease_keeps_its_part(
    hub: TestCluster,
    upstream: TestCluster,
    args_of: Callable[[World], list[str]],
    clusters_proxy: FaultProxy,
) -> None:
    world = World(hub, upstream)
    args = [*args_of(world), "--delete"]
    killed = 2
    mine = [c for c in CLUSTERS if shard_of(c, COUNT) == killed]
    held = threading.Event()
    clusters_proxy.add_fault(Fault(path=rf"^/clusters/({'|'.join(mine)})/", hold=held, times=None))
    victim = start_gcjob(*args, "--shard", f"{killed}/{COUNT}")
    try:
        deadline = time.monotonic() + 60
        while not any(r.path.startswith(f"/clusters/{mine[0]}/") for r in clusters_proxy.requests):
            assert time.monotonic() < deadline, "the shard never asked its upstream"
            time.sleep(0.1)
        victim.send_signal(signal.SIGKILL)  # in the middle of its run, its Leases held
        victim.communicate(timeout=30)
    finally:
        held.set()
    ns = world.lock_namespace
    own = Shard(killed, COUNT).lease_name("gcjob")
    assert holder(hub, ns, own)  # the dead shard's, until it expires

    others = [start_gcjob(*args, "--shard", f"{i}/{COUNT}") for i in range(COUNT) if i != killed]
    outs = [p.communicate(timeout=240) for p in others]
    assert [p.returncode for p in others] == [0] * (COUNT - 1), [err for _, err in outs]
    for cluster in CLUSTERS:
        orphan = (world.route_ns(cluster), f"{cluster}-orphan")
        if cluster in mine:
            assert hub.present("HTTPRoute", *orphan)
        else:
            assert hub.gone("HTTPRoute", *orphan)
    # A sibling's Lease is live: the run's stays held by the shards, against an unsharded run.
    assert holder(hub, ns, "gcjob") == f"shards/{COUNT}"
    unsharded = run_gcjob(*args)
    assert unsharded.exit_code == 6, unsharded.stderr
    assert f"shards/{COUNT}" in unsharded.summary["exit_reason"]
    again = run_gcjob(*args, "--shard", f"{killed}/{COUNT}")
    assert again.exit_code == 6  # its twin's Lease, until it expires

    _expire(hub, ns, own)
    again = run_gcjob(*args, "--shard", f"{killed}/{COUNT}")

    assert again.exit_code == 0, again.stderr
    for cluster in mine:
        assert hub.gone("HTTPRoute", world.route_ns(cluster), f"{cluster}-orphan")
    assert not holder(hub, ns, "gcjob")  # the last shard out released the run's Lease


def _expire(hub: TestCluster, ns: str, name: str) -> None:
    """A Lease's renewal moved back past its duration: it has expired (the passing of time
    played on the Lease, never by a clock of the run)."""
    lease = hub.get("Lease", ns, name)
    assert lease is not None
    past = datetime.now(UTC) - timedelta(seconds=lease["spec"]["leaseDurationSeconds"] + 60)
    stamp = past.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    hub.patch("Lease", ns, name, {"spec": {"renewTime": stamp, "acquireTime": stamp}})


def _lease(ns: str, name: str, holder: str) -> dict[str, Any]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    spec = {"holderIdentity": holder, "leaseDurationSeconds": 600, "renewTime": now}
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": ns},
        "spec": {**spec, "acquireTime": now},
    }


@pytest.mark.parametrize(
    ("lease", "holder_identity", "code"),
    [
        ("gcjob", "other-pod/run-1", 6),  # an unsharded run holds it
        ("gcjob", "shards/2", 6),  # the shards of another COUNT
        ("gcjob", "drain/rollout-pod/run-2", 0),  # the rollout Job: skipped, as a CronJob run
        ("gcjob-shard-1-of-4", "twin-pod/run-3", 6),  # the same shard runs already
    ],
)
def test_a_shard_is_kept_out_by_another_holder(
    hub: TestCluster,
    upstream: TestCluster,
    args_of: Callable[[World], list[str]],
    lease: str,
    holder_identity: str,
    code: int,
) -> None:
    world = World(hub, upstream)
    ns = world.lock_namespace
    hub.create(_lease(ns, lease, holder_identity))

    result = run_gcjob(*args_of(world), "--delete", "--shard", f"1/{COUNT}")

    assert result.exit_code == code, result.stderr
    assert not [i for i in result.items if i["action"] == "deleted"]
    if code == 0:
        assert "rollout holds the lock" in result.summary["skipped"]
    else:
        assert holder_identity in result.summary["exit_reason"]
    assert holder(hub, ns, lease) == holder_identity  # untouched
    if lease != "gcjob":
        assert not holder(hub, ns, "gcjob")  # its own first: the run's never joined


def test_the_shards_keep_an_unsharded_run_and_a_drain_out(
    hub: TestCluster, upstream: TestCluster, args_of: Callable[[World], list[str]]
) -> None:
    world = World(hub, upstream)
    ns = world.lock_namespace
    hub.create(_lease(ns, "gcjob", f"shards/{COUNT}"))  # shards are running
    args = [*args_of(world), "--delete"]

    unsharded = run_gcjob(*args)
    drain = run_gcjob(*args, "--drain")

    for result in (unsharded, drain):
        assert result.exit_code == 6, result.stderr
        assert not [i for i in result.items if i["action"] == "deleted"]
    assert holder(hub, ns, "gcjob") == f"shards/{COUNT}"


# -- the copies sweep: by project, and the projects brake over the whole hub -----------------

# Past the split limits: a shard whose part holds most of the orphans would hold back, past its
# share of --max-deletions or by the percent brake, where one run does not (fail closed; the
# split limits' own tests are above).
UNBRAKED = ("--max-deletions", "400", "--max-delete-percent", "100")


def test_four_shards_judge_the_copies_and_the_projects_brake_as_one_run(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,
    milo_kubeconfig: str,
) -> None:
    """Live projects in every shard (each a group whose owner exists, every other one a group
    whose owner is gone too) and two deleted projects: four shards report what one run does; with
    `--max-projects-gone 1` every shard counts the whole hub's two and holds them all, as one
    run does, whichever shard the deleted projects fall in."""
    names: list[str] = []
    while {shard_of(name, COUNT) for name in names} != set(range(COUNT)):
        assert len(names) < 60
        names.append(project_name())
    for name in names:
        make_project(upstream, name)
    ns = hub.namespace("copies-shard")
    upstream_ns = upstream.namespace("app")
    for i, name in enumerate(names):
        owner = live_owner(upstream, upstream_ns, f"api-{i}")
        connector_group(hub, ns, name, upstream_ns, f"api-{i}", owner)
        if i % 2 == 0:
            connector_group(hub, ns, name, upstream_ns, f"gone-{i}", str(uuid.uuid4()))
    # Deleted beside them: every shard keeps a live project, whose answer vouches for the
    # Project API (each shard trusts it on its own projects only).
    deleted = [project_name(), project_name()]
    for i, name in enumerate(deleted):
        make_project(upstream, name)
        connector_group(hub, ns, name, upstream_ns, f"web-{i}", str(uuid.uuid4()))
        delete_project(upstream, milo, name)

    def compare(*more: str) -> tuple[Result, list[Result]]:
        # The names are random: past 24 or so the hub holds --brake-min-objects, and a shard
        # whose part holds most of the orphans would trip the percent brake (UNBRAKED).
        given = copies_args(gcjob_hub_args, milo_kubeconfig, milo, ns, *UNBRAKED, *more)
        one = run_gcjob(*given)
        shards = at_once(given)
        together: Counter[Item] = Counter()
        for result in shards:
            together.update(items(result))
        assert together == items(one)
        return one, shards

    one, shards = compare()
    assert one.exit_code == 0, one.stderr
    assert [r.exit_code for r in shards] == [0] * COUNT, [r.stderr for r in shards]
    reasons = Counter(i[5] for i in items(one) if i[4] == "would-delete")
    assert reasons["project-gone"] >= 2 * len(deleted) and reasons["owner-gone"] > 0, reasons
    assert sum(len(r.items) > 0 for r in shards) >= 2  # the world is split, not in one shard
    for result in shards:
        assert result.summary["projects"]["gone"] == sum(
            shard_of(name, COUNT) == result.summary["shard"]["index"] for name in deleted
        )

    one, shards = compare("--max-projects-gone", "1")
    for result in (one, *shards):
        assert result.summary["sweeps"]["copies"]["status"] == "braked", result.summary
        assert "projects brake: 2 projects" in result.summary["sweeps"]["copies"]["detail"]
        assert not [i for i in result.items if i["reason"] == "project-gone"]


def two_sweeps(*more: str) -> tuple[str, ...]:
    """The companions sweep beside the copies sweep, past the split limits."""
    return ("--sweep", "companions", *more, *UNBRAKED)


def projects_apart(ns: str) -> tuple[int, list[str]]:
    """The shard of hub namespace `ns`, and project names in every other shard (none in its)."""
    home = shard_of(ns, COUNT)
    projects: list[str] = []
    while len({shard_of(p, COUNT) for p in projects}) < COUNT - 1:
        name = project_name()
        if shard_of(name, COUNT) != home:
            projects.append(name)
    return home, projects


def companion_anchor_group(
    hub: TestCluster, ns: str, project: str, upstream_ns: str, name: str
) -> dict[str, Any]:
    """A Connector copy of a gone owner `name` and its anchor, the anchor also labelled and
    annotated as a companion whose workload is gone; returns the anchor."""
    found = labels(project, NET, "Connector", upstream_ns, name)
    made = hub.create_at(
        CONFIGMAPS.format(namespace=ns),
        companion("ConfigMap", ns, f"anchor-{uuid.uuid4()}", ["default/gone"], labels=found),
    )
    copy(hub, ns, CONNECTORS, f"{NET}/v1alpha1", "Connector", name, found, made)
    return made


def test_an_object_in_two_sweeps_is_judged_once_in_each_by_the_shard_of_its_key(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,
    milo_kubeconfig: str,
) -> None:
    """Objects that are companions and copies at once, in one hub namespace, of projects whose
    shards are not the namespace's: an anchor (a ConfigMap) and NSO's copy of a Secret, each
    labelled and annotated as a companion whose workload is gone. The companions sweep keys
    them by the namespace, the copies sweep by the project: four shards at once report each
    once in each sweep, the companions item from the namespace's shard and the copies item from
    the project's, as one run reports them: none twice, none dropped."""
    ns = hub.namespace("two-sweeps")
    home, projects = projects_apart(ns)
    upstream_ns = upstream.namespace("app")
    both: dict[tuple[str, str], str] = {}  # (kind, name) -> its project
    for i, project in enumerate(projects):
        make_project(upstream, project)
        made = companion_anchor_group(hub, ns, project, upstream_ns, f"gone-{i}")
        synced = labels(project, "", "Secret", upstream_ns, f"tls-{i}") | {
            GATEWAY_SYNC_LABEL: "true"
        }
        secret = companion("Secret", ns, f"tls-{i}", ["default/gone"], labels=synced)
        secret["metadata"]["ownerReferences"] = owned_by(made)
        hub.create_at(SECRETS.format(namespace=ns), secret)
        both[("ConfigMap", made["metadata"]["name"])] = project
        both[("Secret", f"tls-{i}")] = project
    given = [
        *copies_args(gcjob_hub_args, milo_kubeconfig, milo, ns),
        *two_sweeps("--report-healthy"),
    ]

    one, shards = as_one_run(given)

    for (kind, name), project in both.items():
        judged = {
            (i["sweep"], index)
            for index, result in enumerate(shards)
            for i in result.items
            if (i["kind"], i["name"]) == (kind, name)
        }
        assert judged == {("companions", home), ("copies", shard_of(project, COUNT))}, (kind, name)
    # The companions sweep judged them as companions: the anchor orphaned, the Secret kept for
    # its owner (the anchor); the copies sweep judged them as copies of a gone owner.
    outcomes = {(i[0], i[1], i[3]): i[4:] for i in items(one)}
    for kind, name in both:
        expected = ("would-delete", "orphaned") if kind == "ConfigMap" else ("skipped", "owned")
        assert outcomes[("companions", kind, name)] == expected, (kind, name)
        expected = ("skipped", "anchor-owns-kept-copy" if kind == "ConfigMap" else "owner-not-read")
        assert outcomes[("copies", kind, name)] == expected, (kind, name)


# What the second of two shards that would delete one object says, by when it looks: the
# first's mark moved its resourceVersion, its delete left it Terminating (the `orphan`
# finalizer, until the garbage collector takes it off), or it is gone. Or it was never listed.
AFTER_ANOTHER_SHARD = {
    ("skipped", "changed-since-observed"),
    ("skipped", "terminating"),
    ("already-gone", "already-gone"),
    # The anchor's companions delete orphaned its copy (the collector took the anchor's
    # ownerReference off): the copy changed since the copies shard saw it, so it stays this
    # run, and so does the anchor in that shard's judgement.
    ("skipped", "anchor-owns-kept-copy"),
}


def test_an_object_two_shards_would_delete_at_once_is_deleted_once_and_nothing_fails(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,
    milo_kubeconfig: str,
) -> None:
    """Anchors that are also orphaned companions, each owning only the copy of a gone owner:
    the companions sweep deletes them in the namespace's shard, the copies sweep in their
    project's, four shards at once with --delete. Every write is pinned to what its shard saw
    (uid and resourceVersion), so each anchor is deleted once: the other shard finds it
    changed, Terminating or gone, or no longer lists it; nothing fails, every shard exits 0. A
    copy the anchor's delete changed under its shard (the collector took the ownerReference
    off) is kept that run and deleted by the next: none dropped."""
    ns = hub.namespace("two-deletes")
    _, projects = projects_apart(ns)
    upstream_ns = upstream.namespace("app")
    anchors: list[str] = []
    for i, project in enumerate(projects):
        make_project(upstream, project)
        made = companion_anchor_group(hub, ns, project, upstream_ns, f"gone-{i}")
        anchors.append(made["metadata"]["name"])
    given = [
        *copies_args(gcjob_hub_args, milo_kubeconfig, milo, ns),
        *two_sweeps("--enforce", "copies", "--enforce", "companions"),
    ]
    one = run_gcjob(*given)  # a dry run: both sweeps would delete each anchor
    assert one.exit_code == 0, one.stderr
    for name in anchors:  # reported by both sweeps in one run
        assert {i[0] for i in items(one) if i[3] == name and i[4] == "would-delete"} == {
            "companions",
            "copies",
        }

    shards = at_once(given, "--delete")

    assert [r.exit_code for r in shards] == [0] * COUNT, [r.stderr for r in shards]
    done = Counter(i for r in shards for i in items(r))
    assert not [i for i in done if i[4] == "failed"], done
    for name in anchors:
        actions = Counter(i[4:] for i in done.elements() if i[1] == "ConfigMap" and i[3] == name)
        deleted = [a for a in actions.elements() if a[0] == "deleted"]
        assert len(deleted) == 1, (name, actions)  # once, by one of the two shards
        assert set(actions) - set(deleted) <= AFTER_ANOTHER_SHARD, (name, actions)
        assert hub.gone("ConfigMap", ns, name)
    # A copy that changed under its shard (orphaned by its anchor's delete) is kept this run,
    # never dropped: the next shards' run deletes it.
    copies = {f"gone-{i}" for i in range(len(projects))}
    kept = {
        i[3] for i in done if i[1] == "Connector" and i[4:] == ("skipped", "changed-since-observed")
    }
    again = at_once(given, "--delete") if kept else []
    assert [r.exit_code for r in again] == [0] * len(again), [r.stderr for r in again]
    for name in copies:
        said = [
            i[4:] for r in (*shards, *again) for i in items(r) if i[1:4:2] == ("Connector", name)
        ]
        assert said.count(("deleted", "owner-gone")) == 1, (name, said)
        assert hub.gone("Connector", ns, name)
