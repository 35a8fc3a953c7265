"""Property: for random worlds, `explain`'s verdict on each object is the sweep's decision.

A world is a snapshot (hub + one upstream) of random companions, WorkloadDeployments,
bindings, routes and Gateways. The sweep runs over it through the CLI; explain runs over the
same snapshot for every object in it, and each must reach the sweep's action and reason.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import event, given, settings
from hypothesis import strategies as st

from gcjob.cli import cli
from gcjob.domain import (
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    REFERRERS_ANNOTATION,
)
from gcjob.explain import Explainer, Target
from gcjob.kube import reduce
from gcjob.kube.snapshot import Snapshot, SnapshotUpstreams
from gcjob.marks import (
    Evidence,
    binding_evidence,
    companion_binding_evidence,
    companion_evidence,
    route_evidence,
)
from gcjob.model import ObjectRef, RouteTarget
from gcjob.sweeps.routes.judge import route_target
from gcjob.times import HubClock
from testbed import objects

NS = "ns-prop"
CAPTURED = "2026-11-20T12:00:00Z"
AGES = {"old": "2026-11-01T00:00:00Z", "young": "2026-11-20T11:58:00Z", "none": None}
WD_NAMES = ["web", "api", "worker"]
NAMES = ["a", "b", "c"]
GATEWAYS = ["gw1", "gw2"]
SUSPECT_MIN_ROUTES = 2  # low enough that random worlds hold suspect clusters
GRACE = timedelta(minutes=10)
GRACE_FLAG = "10m"

# A mark as a run could have left it: none, this evidence marked long or just ago, other
# evidence, a mark the companions sweep wrote on a binding, a broken one.
MARKS = ["none", "none", "none", "old", "fresh", "other-evidence", "companion-binding", "broken"]
meta_st = st.fixed_dictionaries(
    {
        "age": st.sampled_from(["old"] * 6 + ["young", "none"]),
        "terminating": st.sampled_from([False] * 7 + [True]),
        "protected": st.sampled_from([False] * 7 + [True]),
        "mark": st.sampled_from(MARKS),
    }
)
referrers_st = st.one_of(
    st.none(),
    st.sampled_from(["[]", "not json", '"default/web"', '["Default/web"]']),
    st.lists(st.sampled_from([f"default/{n}" for n in WD_NAMES]), min_size=1, max_size=2),
)
companion_st = st.tuples(
    st.sampled_from(["ConfigMap", "Secret"]),
    st.sampled_from(NAMES),
    referrers_st,
    st.sampled_from([True, True, True, False]),
    meta_st,
)
binding_st = st.tuples(
    st.sampled_from([*NAMES, "d"]),
    st.sampled_from(["ConfigMap", "Secret"]),
    st.sampled_from(["city-dfw", "city-dfw", "other"]),
    st.sampled_from(["annotation", "annotation", "label", "cluster"]),
    st.sampled_from(["match", "match", "other-name", "uid"]),
    meta_st,
)
route_st = st.tuples(
    st.sampled_from(["r1", "r2", "r3"]),
    st.lists(st.sampled_from(GATEWAYS), max_size=2),
    st.sampled_from(["cluster-single", "cluster-single", "cluster-nowhere"]),
    meta_st,
)


def evidence_of(obj: dict[str, Any]) -> Evidence | None:
    """The evidence a sweep would find for this object, were it an orphan."""
    kind = obj["kind"]
    if kind in ("ConfigMap", "Secret"):
        raw = (obj["metadata"].get("annotations") or {}).get(REFERRERS_ANNOTATION)
        return companion_evidence(raw) if raw is not None else None
    if kind == "ResourceBinding":
        bound = obj["spec"]["resource"]
        return binding_evidence(bound["kind"], bound["name"])
    if kind == "HTTPRoute":
        route = reduce.route(obj)
        target = route_target(route)
        if isinstance(target, RouteTarget):
            t = target
            return route_evidence(t.cluster, t.namespace, t.gateways, route.parent_refs)
    return None


def with_mark(obj: dict[str, Any], how: str) -> None:
    m = obj["metadata"]
    evidence = evidence_of(obj)
    digest = evidence.digest if evidence is not None else "companion:0000000000000000"
    since = {"old": "2026-11-20T11:00:00Z", "fresh": "2026-11-20T11:58:00Z"}.get(
        how, "2026-11-20T11:00:00Z"
    )
    if how == "other-evidence":
        digest = digest.split(":")[0] + ":ffffffffffffffff"
    if how == "companion-binding":
        spec = obj.get("spec", {}).get("resource", {"kind": "ConfigMap", "name": "x"})
        ref = ObjectRef("v1", spec["kind"], NS, spec["name"], "", "", None)
        digest = companion_binding_evidence(ref).digest
    m.setdefault("labels", {})[ORPHANED_LABEL] = "true"
    if how != "broken":
        m.setdefault("annotations", {}).update(
            {
                ORPHANED_SINCE_ANNOTATION: since,
                ORPHANED_REASON_ANNOTATION: "orphaned",
                ORPHANED_EVIDENCE_ANNOTATION: digest,
            }
        )


def stamp(obj: dict[str, Any], meta: dict[str, Any], n: int) -> dict[str, Any]:
    if meta.get("mark", "none") != "none":
        with_mark(obj, meta["mark"])
    m = obj["metadata"]
    m["uid"] = f"uid-{obj['kind']}-{m['name']}"
    m["resourceVersion"] = str(100 + n)
    if AGES[meta["age"]] is not None:
        m["creationTimestamp"] = AGES[meta["age"]]
    if meta["terminating"]:
        m["deletionTimestamp"] = "2026-11-20T11:00:00Z"
    if meta["protected"]:
        m.setdefault("annotations", {})["gcjob.datumapis.com/protect"] = "true"
    return obj


def world(
    companions: list[Any],
    workloads: set[str],
    bindings: list[Any],
    routes: list[Any],
    gws: set[str],
    namespace_exists: bool,
) -> list[dict[str, Any]]:
    old = {"age": "old", "terminating": False, "protected": False}
    # The hub namespace itself: a snapshot with no hub objects at all is refused.
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    hub: dict[tuple[str, str], dict[str, Any]] = {("Namespace", NS): stamp(namespace, old, 0)}
    for n, name in enumerate(sorted(workloads)):
        hub[("WorkloadDeployment", name)] = stamp(objects.workload(NS, name), old, n)
    for n, (kind, name, refs, labelled, meta) in enumerate(companions):
        obj = objects.companion(kind, NS, name, refs, labelled=labelled)
        hub[(kind, name)] = stamp(obj, meta, n)
    for n, (name, kind, policy, where, resource, meta) in enumerate(bindings):
        suffix = kind.lower()
        target = name if resource != "other-name" else "elsewhere"
        uid = (
            f"uid-{kind}-{name}" if resource == "match" else ("uid-x" if resource == "uid" else "")
        )
        obj = objects.binding(
            NS,
            f"{name}-{suffix}",
            kind=kind,
            target=target,
            target_uid=uid,
            policy=policy,
            policy_in=where,
        )
        hub[("ResourceBinding", f"{name}-{suffix}")] = stamp(obj, meta, n)
    for n, (name, parents, cluster, meta) in enumerate(routes):
        obj = objects.route(
            NS,
            name,
            cluster_label=cluster,
            upstream_namespace="default",
            parents=[{"name": p} for p in parents],
        )
        hub[("HTTPRoute", name)] = stamp(obj, meta, n)
    upstream = [stamp(objects.gateway("default", g), old, 0) for g in sorted(gws)]
    if gws or namespace_exists:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
        upstream.append(stamp(namespace, old, 0))
    return [*hub.values(), *({"__upstream__": True, **g} for g in upstream)]


def write(directory: Path, objs: list[dict[str, Any]]) -> None:
    (directory / "snapshot.yaml").write_text(f'capturedAt: "{CAPTURED}"\nserver: prop-hub\n')
    (directory / "hub").mkdir()
    (directory / "upstream" / "single").mkdir(parents=True)
    hub = [o for o in objs if "__upstream__" not in o]
    up = [{k: v for k, v in o.items() if k != "__upstream__"} for o in objs if "__upstream__" in o]
    (directory / "hub" / "objects.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": hub})
    )
    (directory / "upstream" / "single" / "gateways.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": up})
    )
    # Every kind is dumped, even with no object of it: a kind not dumped is unknown, not empty.
    for plane, kinds in (("hub", HUB_KINDS), ("upstream/single", UPSTREAM_KINDS)):
        for api_version, kind in kinds:
            (directory / plane / f"{kind.lower()}s.json").write_text(
                json.dumps({"apiVersion": api_version, "kind": f"{kind}List", "items": []})
            )


HUB_KINDS = (
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("compute.datumapis.com/v1alpha", "WorkloadDeployment"),
    ("work.karmada.io/v1alpha2", "ResourceBinding"),
    ("gateway.networking.k8s.io/v1", "HTTPRoute"),
)
UPSTREAM_KINDS = (("gateway.networking.k8s.io/v1", "Gateway"), ("v1", "Namespace"))


@pytest.fixture(autouse=True)
def keep_log_handlers() -> Iterator[None]:
    log = logging.getLogger("gcjob")
    handlers = list(log.handlers)
    yield
    log.handlers[:] = handlers


@settings(max_examples=100, deadline=None)
@given(
    companions=st.lists(companion_st, max_size=4),
    workloads=st.sets(st.sampled_from(WD_NAMES)),
    bindings=st.lists(binding_st, max_size=4),
    routes=st.lists(route_st, max_size=3),
    gws=st.sets(st.sampled_from(GATEWAYS)),
    namespace_exists=st.booleans(),
)
def test_explain_verdict_is_the_sweeps_decision(
    companions: list[Any],
    workloads: set[str],
    bindings: list[Any],
    routes: list[Any],
    gws: set[str],
    namespace_exists: bool,
) -> None:
    objs = world(companions, workloads, bindings, routes, gws, namespace_exists)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write(directory, objs)
        result = CliRunner().invoke(
            cli,
            [
                "sweep",
                "--snapshot",
                tmp,
                "--report-healthy",
                "--max-deletions",
                "1000",
                "--max-delete-percent",
                "100",
                "--suspect-min-routes",
                str(SUSPECT_MIN_ROUTES),
                "--grace",
                GRACE_FLAG,
            ],
            standalone_mode=False,
            catch_exceptions=False,
        )
        records = [json.loads(line) for line in result.stdout.splitlines()]
        swept = {
            (r["kind"], r["name"]): (r["action"], r["reason"])
            for r in records
            if r["record"] == "item"
        }
        snapshot = Snapshot(tmp)
        assert snapshot.captured_at is not None
        for obj in objs:
            kind, name = obj["kind"], obj["metadata"]["name"]
            if kind not in ("ConfigMap", "Secret", "ResourceBinding", "HTTPRoute"):
                continue
            # One explainer per object, as one `gcjob explain` run per object.
            explainer = Explainer(
                snapshot.hub,
                SnapshotUpstreams(snapshot.upstreams),
                HubClock(snapshot.captured_at),
                timedelta(minutes=5),
                suspect_min_routes=SUSPECT_MIN_ROUTES,
                grace=GRACE,
            )
            explained = explainer.explain(Target(kind, NS, name))
            assert explained.verdict is not None
            assert all(traced.step.evidence for traced in explained.steps), (kind, name)
            verdict = (explained.verdict.action, explained.verdict.reason)
            event(f"{kind}: {verdict[0]} {verdict[1]}")
            if (kind, name) in swept:
                assert verdict == swept[(kind, name)], (kind, name)
            else:  # the sweep never looked at it: not its to judge
                assert verdict == ("skipped", "out-of-scope"), (kind, name, verdict)
            if explained.binding is not None:  # what the same run does to a companion's binding
                bound = explained.binding.subject.rpartition("/")[2]
                follows = (explained.binding.action, explained.binding.reason)
                if ("ResourceBinding", bound) in swept:
                    assert follows == swept[("ResourceBinding", bound)], (kind, name, follows)
                else:  # none, or one the bindings sweep does not judge
                    assert follows in {("not-found", "not-found"), ("skipped", "out-of-scope")}
