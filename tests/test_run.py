"""gcjob/run.py: whole runs over random worlds (hypothesis), in memory.

Whatever the labels, annotations and references, a run never chooses to delete an object
that is in use, never itemises a reserved namespace, and never crashes.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gcjob.act.deleter import Deleter
from gcjob.act.mark_writer import Marker
from gcjob.brakes import Pending
from gcjob.budget import RunBudget
from gcjob.domain import is_reserved_namespace
from gcjob.kube.snapshot import SnapshotStore, SnapshotUpstreams
from gcjob.kube.transport import RequestStats
from gcjob.model import Action, ObjectRef, Outcome, ProjectCall, ProjectState, Sweep, Verdict
from gcjob.report.emitter import Reporter
from gcjob.run import Run, RunContext, SweepState
from gcjob.settings import Settings
from gcjob.sweeps import execute
from gcjob.times import HubClock

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
NAMESPACES = ["ns-a", "ns-b", "kube-system", "karmada-es-member1"]
WD_NAMES = ["web", "api", "db"]
GW_NAMES = ["gw-1", "gw-2", "gw-3"]
OBJ_NAMES = ["app", "creds", "configmap.app", "web", "x-secret"]

OLD = NOW - timedelta(days=3)
# Weighted towards plausible objects, so that every sweep reaches its deletions too.
stamp = st.sampled_from([OLD, OLD, OLD, OLD, NOW - timedelta(seconds=30), None])
junk = st.one_of(
    st.text(max_size=12),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
        max_leaves=4,
    ).map(json.dumps),
)
referrer_keys = st.lists(
    st.sampled_from([*(f"default/{n}" for n in WD_NAMES), "default/gone", "p/gone-2", "Bad/Key"]),
    min_size=1,
    max_size=3,
).map(json.dumps)


def route_labels(name: str, cluster: str, upstream_namespace: str) -> dict[str, str]:
    return {
        "meta.datumapis.com/upstream-cluster-name": cluster,
        "meta.datumapis.com/upstream-group": "gateway.networking.k8s.io",
        "meta.datumapis.com/upstream-kind": "HTTPRoute",
        "meta.datumapis.com/upstream-name": name,
        "meta.datumapis.com/upstream-namespace": upstream_namespace,
    }


def meta(draw: Any, namespace: str, name: str, **extra: Any) -> dict[str, Any]:
    created = draw(stamp)
    out: dict[str, Any] = {"namespace": namespace, "name": name, **extra}
    if draw(st.integers(0, 9)):
        out["uid"] = f"uid-{namespace}-{name}-{draw(st.integers(0, 9))}"
        out["resourceVersion"] = "1"
    if created is not None:
        out["creationTimestamp"] = created.isoformat().replace("+00:00", "Z")
    if draw(st.integers(0, 9)) == 0:
        out["deletionTimestamp"] = NOW.isoformat().replace("+00:00", "Z")
    if draw(st.integers(0, 9)) == 0:
        out.setdefault("annotations", {})["gcjob.datumapis.com/protect"] = "true"
    return out


@st.composite
def worlds(draw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    hub: list[dict[str, Any]] = []
    upstream: list[dict[str, Any]] = []
    for ns in NAMESPACES:
        for wd in draw(st.sets(st.sampled_from(WD_NAMES), max_size=2)):
            hub.append(
                {
                    "apiVersion": "compute.datumapis.com/v1alpha",
                    "kind": "WorkloadDeployment",
                    "metadata": meta(draw, ns, wd),
                }
            )
        for name in draw(st.sets(st.sampled_from(OBJ_NAMES), max_size=3)):
            kind = draw(st.sampled_from(["ConfigMap", "Secret"]))
            m = meta(draw, ns, name)
            if draw(st.integers(0, 4)):
                m["labels"] = {"compute.datumapis.com/referenced-data": "true"}
            raw = draw(st.one_of(st.none(), referrer_keys, referrer_keys, referrer_keys, junk))
            if raw is not None:
                m.setdefault("annotations", {})["compute.datumapis.com/referenced-by"] = raw
            hub.append({"apiVersion": "v1", "kind": kind, "metadata": m})
        for target in draw(st.sets(st.sampled_from(OBJ_NAMES), max_size=3)):
            suffix = draw(st.sampled_from(["configmap", "secret", "workloaddeployment"]))
            m = meta(draw, ns, f"{target}-{suffix}")
            policy = draw(st.sampled_from(["city-dfw", "other", None]))
            where = draw(st.sampled_from(["annotations", "labels", "cluster"]))
            if policy is not None:
                key = (
                    "clusterpropagationpolicy.karmada.io/name"
                    if where == "cluster"
                    else "propagationpolicy.karmada.io/name"
                )
                m.setdefault("labels" if where == "labels" else "annotations", {})[key] = policy
            kind = {"configmap": "ConfigMap", "secret": "Secret"}.get(suffix, "WorkloadDeployment")
            hub.append(
                {
                    "apiVersion": "work.karmada.io/v1alpha2",
                    "kind": "ResourceBinding",
                    "metadata": m,
                    "spec": {
                        "resource": {
                            "apiVersion": "v1",
                            "kind": kind,
                            "name": draw(st.sampled_from([target, "someone-else"])),
                        }
                    },
                }
            )
        # A plausible candidate per namespace; whether it is in use is left to the world.
        hub.append(
            {
                "apiVersion": "v1",
                "kind": draw(st.sampled_from(["ConfigMap", "Secret"])),
                "metadata": {
                    **meta(draw, ns, "planted"),
                    "labels": {"compute.datumapis.com/referenced-data": "true"},
                    "annotations": {"compute.datumapis.com/referenced-by": draw(referrer_keys)},
                },
            }
        )
        planted = route_labels("planted", "cluster-single", draw(st.sampled_from(["p1", "p2"])))
        hub.append(
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "HTTPRoute",
                "metadata": meta(draw, ns, "planted", labels=planted),
                "spec": {
                    "parentRefs": [
                        {"name": g}
                        for g in draw(st.sets(st.sampled_from(GW_NAMES), min_size=1, max_size=2))
                    ]
                },
            }
        )
        for index in range(draw(st.integers(0, 3))):
            labels = {
                "meta.datumapis.com/upstream-cluster-name": draw(
                    st.sampled_from(
                        ["cluster-single"] * 3 + ["cluster-_single", "cluster-gone", "single", ""]
                    )
                ),
                "meta.datumapis.com/upstream-group": "gateway.networking.k8s.io",
                "meta.datumapis.com/upstream-kind": draw(
                    st.sampled_from(["HTTPRoute"] * 4 + ["Other"])
                ),
                "meta.datumapis.com/upstream-name": f"r{index}",
                "meta.datumapis.com/upstream-namespace": draw(st.sampled_from(["p1", "p2"])),
            }
            if draw(st.integers(0, 4)) == 0:
                del labels[draw(st.sampled_from(sorted(labels)))]
            if draw(st.integers(0, 5)) == 0:
                labels["meta.datumapis.com/http01-solver"] = "true"
            parents = draw(
                st.lists(
                    st.fixed_dictionaries(
                        {"name": st.sampled_from(GW_NAMES)},
                        optional={
                            "group": st.sampled_from(["gateway.networking.k8s.io"] * 3 + ["", "x"]),
                            "kind": st.sampled_from(["Gateway"] * 3 + ["Service"]),
                            "namespace": st.sampled_from([ns, ns, ns, "elsewhere", ""]),
                        },
                    ),
                    max_size=3,
                )
            )
            m = meta(draw, ns, f"r{index}", labels=labels)
            hub.append(
                {
                    "apiVersion": "gateway.networking.k8s.io/v1",
                    "kind": "HTTPRoute",
                    "metadata": m,
                    "spec": {"parentRefs": parents},
                }
            )
    for up_ns in draw(st.sets(st.sampled_from(["p1", "p2"]))):
        upstream.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": up_ns}})
        for gw in draw(st.sets(st.sampled_from(GW_NAMES), max_size=2)):
            upstream.append(
                {
                    "apiVersion": "gateway.networking.k8s.io/v1",
                    "kind": "Gateway",
                    "metadata": {"namespace": up_ns, "name": gw},
                }
            )
    return hub, upstream


def run_world(hub_objects: list[dict[str, Any]], upstream_objects: list[dict[str, Any]]):
    hub = SnapshotStore("hub", [], every_kind=True)
    for obj in hub_objects:
        hub.add(obj)
    upstream = SnapshotStore("single", [], every_kind=True)
    for obj in upstream_objects:
        upstream.add(obj)
    config = Settings(
        max_deletions=10**6, max_delete_percent=100, suspect_min_routes=0, grace=timedelta(0)
    )
    budget = RunBudget(None)
    out = io.StringIO()
    reporter = Reporter(
        run_id="r",
        dry_run=True,
        log_format="json",
        report_healthy=False,
        report_file=None,
        stream=out,
    )
    context = RunContext(
        config,
        hub,
        Deleter(None, dry_run=True, budget=budget, qps=0),
        reporter,
        budget,
        RequestStats(),
        SnapshotUpstreams({"single": upstream}),
        "r",
        Marker(None, dry_run=True, budget=budget),
    )
    run = Run(context, HubClock(NOW))
    execute(run)
    items = [json.loads(line) for line in out.getvalue().splitlines()]
    return run, items


def by_name(objects: list[dict[str, Any]], kind: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objects
        if o["kind"] == kind
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_a_run_never_chooses_an_object_in_use(world: Any) -> None:
    hub_objects, upstream_objects = world
    run, items = run_world(hub_objects, upstream_objects)

    assert run.exit_code() in (0, 1)
    workloads = by_name(hub_objects, "WorkloadDeployment")
    gateways = by_name(upstream_objects, "Gateway")
    objects = {
        **{("ConfigMap", *k): v for k, v in by_name(hub_objects, "ConfigMap").items()},
        **{("Secret", *k): v for k, v in by_name(hub_objects, "Secret").items()},
    }
    routes = by_name(hub_objects, "HTTPRoute")
    for item in items:
        assert not is_reserved_namespace(item["namespace"]), item
        if item["action"] != "would-delete":
            continue
        ns, name = item["namespace"], item["name"]
        if item["sweep"] == Sweep.COMPANIONS and item["kind"] != "ResourceBinding":
            keys = item["referrers"]
            assert keys and all((ns, k.split("/", 1)[1]) not in workloads for k in keys), item
        elif item["kind"] == "ResourceBinding" and item["reason"] == "orphaned":
            kind = "ConfigMap" if name.endswith("-configmap") else "Secret"
            target = name.rsplit("-", 1)[0]
            assert (kind, ns, target) not in objects, item
        elif item["kind"] == "HTTPRoute":
            route = routes[(ns, name)]
            labels = route["metadata"]["labels"]
            up_ns = labels["meta.datumapis.com/upstream-namespace"]
            assert item["cluster"] == "single"
            for parent in route["spec"]["parentRefs"]:
                assert parent.get("group", "gateway.networking.k8s.io") == (
                    "gateway.networking.k8s.io"
                )
                assert parent.get("kind", "Gateway") == "Gateway"
                assert parent.get("namespace", ns) == ns
                assert (up_ns, parent["name"]) not in gateways, item
            assert "meta.datumapis.com/http01-solver" not in labels


def test_a_quiet_world_reports_nothing_and_exits_zero() -> None:
    run, items = run_world([], [])
    assert items == []
    assert run.exit_code() == 0
    assert {s.status for s in run.tally.sweeps.values()} == {"completed"}


def test_the_summary_never_carries_userinfo_or_a_token() -> None:
    """issue 12 A: `server:` with user:password@, and an exception's header value."""
    run, _ = run_world([], [])
    hub = SnapshotStore("https://admin:hunter2@hub.example:6443", [], every_kind=True)
    run.context = replace(run.context, hub=hub)
    error = "internal error: ValueError: Invalid header value b'Bearer s3cr3t\\n'\nsecond line"
    summary = run.summary(run.exit_code(), error)
    text = json.dumps(summary)
    assert "hunter2" not in text and "s3cr3t" not in text
    assert summary["hub"] == "https://***@hub.example:6443"
    assert "\n" not in summary["exit_reason"]


def test_per_cluster_state_leaves_the_summary_for_upstream_records() -> None:
    """issue 13: the summary keeps counts; each upstream cluster is its own record."""
    route = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {
            "namespace": "ns-a",
            "name": "web",
            "uid": "u1",
            "resourceVersion": "1",
            "creationTimestamp": "2026-11-01T00:00:00Z",
            "labels": route_labels("web", "cluster-single", "default"),
        },
        "spec": {"parentRefs": [{"name": "gw-1"}]},
    }
    run, _ = run_world([route], [])
    for target in ["hub"] * 3 + ["upstream/single"] * 2 + ["upstream/(project api)"]:
        run.stats.count(target)
    summary = run.summary(run.exit_code())
    assert "upstream_clusters" not in summary
    assert summary["upstream_counts"] == {"ok": 1}
    assert summary["api_requests"] == {"total": 6, "by_target": {"hub": 3, "upstream": 3}}
    (record,) = run.upstream_records()
    assert (record["record"], record["cluster"], record["status"]) == ("upstream", "single", "ok")
    # A snapshot's clusters are read, never asked (a live cluster's count: test_upstreams).
    assert (record["routes"], record["api_requests"], record["run_id"]) == (1, 0, "r")


def test_projects_are_counted_once_each_by_the_more_cautious_sweeps_call() -> None:
    """issue 22 item 5: the summary's projects, by state, for the gcjob_run_projects gauge."""
    run, _ = run_world([], [])
    assert run.summary(run.exit_code())["projects"] == dict.fromkeys(
        ("brake-held", "not-answered", "terminating", "present", "gone"), 0
    )
    brake = "projects brake: 2 projects found gone in one run exceed --max-projects-gone 1"
    run.count_projects(
        {
            "gone-to-both": ProjectCall(ProjectState.GONE, "not found"),
            "gone-to-routes": ProjectCall(ProjectState.GONE, "not found"),
            "live": ProjectCall(ProjectState.PRESENT, "exists"),
            "ending": ProjectCall(ProjectState.TERMINATING, "being deleted"),
            "a-context": ProjectCall(ProjectState.NOT_A_PROJECT, "not a project"),
        },
        "",
    )
    run.count_projects(
        {
            "gone-to-both": ProjectCall(ProjectState.GONE, "not found"),
            "gone-to-routes": ProjectCall(ProjectState.UNKNOWN, brake),  # the copies sweep's
            "live": ProjectCall(ProjectState.PRESENT, "exists"),
            "unread": ProjectCall(ProjectState.UNKNOWN, "could not be read"),
        },
        brake,
    )

    assert run.summary(run.exit_code())["projects"] == {
        "brake-held": 1,
        "not-answered": 1,
        "terminating": 1,
        "present": 1,
        "gone": 1,
    }


def test_a_sweep_with_candidates_left_undone_by_a_stop_is_stopped_not_completed() -> None:
    """issue 12 item 14: SIGTERM or --timeout mid-deletions used to say `completed`."""
    run, _ = run_world([], [])
    victim = ObjectRef("v1", "ConfigMap", "ns-a", "app", "u1", "1", NOW - timedelta(days=1))
    verdict = Verdict(victim, True, "orphaned", "no WorkloadDeployment named web in ns-a")
    run.tally.sweeps[Sweep.COMPANIONS] = SweepState()
    run.tally.sweeps[Sweep.BINDINGS] = SweepState()
    run.budget.request_stop("SIGTERM")
    run.record(Outcome.of(Sweep.COMPANIONS, verdict, Action.SKIPPED, "stopped", "left undone"))
    run.record(Outcome.of(Sweep.COMPANIONS, verdict, Action.SKIPPED, "stopped", "left undone"))
    run.completed(Sweep.COMPANIONS)
    run.completed(Sweep.BINDINGS)  # nothing of its own left undone
    companions = run.summary(run.exit_code())["sweeps"]["companions"]
    assert companions["status"] == "stopped"
    assert companions["detail"] == "2 objects left undone: run stopped (SIGTERM)"
    assert run.tally.sweeps[Sweep.BINDINGS].status == "completed"
    assert run.exit_code() == 5


def test_a_drains_later_rounds_weigh_their_orphans_against_the_collection_it_began_on() -> None:
    """The percent breaker in a --drain run: round 1 found 660 companions (460 of them the
    backlog); each later round's orphans pending are a share of those 660, not of what earlier
    rounds left. Every orphan pending is weighed (issue 46 item 10): the backlog of 460 (70%)
    trips it at the CronJob's 50%, and passes at the 100% the rollout Job says in its
    arguments."""
    run, _ = run_world([], [])
    config = Settings(max_deletions=200, max_delete_percent=50, brake_min_objects=0)
    run.context = replace(run.context, settings=config)
    run.tally.first_scope.clear()
    braked = run.percent_braked(Sweep.COMPANIONS, Pending(new=460), 660)  # round 1: all new
    assert braked is not None and "460 of 660 objects (70%)" in braked
    assert run.percent_braked(Sweep.COMPANIONS, Pending(due=260), 460) is None  # 39% of 660
    braked = run.percent_braked(Sweep.COMPANIONS, Pending(due=200, waiting=140), 460)
    assert braked is not None and "340 of 660 objects (52%)" in braked  # not 74% of 460
    # Another sweep has its own first collection; a single run is its own first round.
    assert run.percent_braked(Sweep.BINDINGS, Pending(due=60), 100) is not None
    run.context = replace(run.context, settings=replace(config, max_delete_percent=100))
    run.tally.first_scope.clear()
    assert run.percent_braked(Sweep.COMPANIONS, Pending(new=460), 660) is None


def test_a_dry_run_a_brake_held_back_exits_zero_but_never_reads_completed() -> None:
    """issue 51 item 9: a dry run is never exit 4, and its last line says the brake a run that
    deletes would have stopped on, not "completed"."""
    run, _ = run_world([], [])
    assert not run.settings.delete
    run.hold_brake(Sweep.COMPANIONS, "deletion brake: 460 of 660 objects (70%)")
    summary = run.summary(run.exit_code())
    assert summary["exit_code"] == 0
    assert summary["sweeps"]["companions"]["status"] == "braked"
    assert summary["exit_reason"] == (
        "dry run: a run that deletes would exit 4, safety brake engaged: "
        "companions sweep: deletion brake: 460 of 660 objects (70%)"
    )
