"""Milo's Project API, on the real server pair: listed once a run for the routes and copies
sweeps together, looked at again by one GET of one project before each delete, and never taken
for a fact it did not answer (issue 30 items 3 and 4).

The upstream server stands for Milo (testbed/milo.py): it serves the Project CRD, and the
proxy in front of it serves every project's control plane and the Project API, and injects
the Project API's answers: a 503 after the first answers, a slow answer, a refusal.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gcjob.cli import cli
from gcjob.lifecycle import UPSTREAM_RETRY
from gcjob.publish.metrics import registry_of
from testbed import schemas
from testbed.cluster import ApiFailure, TestCluster
from testbed.faultproxy import Fault, FaultProxy, RecordedRequest
from testbed.milo import (
    MILO,
    connector_group,
    delete_project,
    live_owner,
    make_project,
    present,
    project_name,
    template,
)
from testbed.objects import gateway, route, upstream_route
from testbed.report import Result, run_gcjob
from tests.e2e.test_copies_e2e import (  # noqa: F401  (fixtures: the Milo proxy and its CRDs)
    milo,
    milo_kubeconfig,
    served,
)

# The Project API's own paths (its list, one project), not a project's control plane.
PROJECT_API = rf"^{re.escape(MILO)}(/[^/]+)?$"
FILLER_LABEL = "gcjob.test/filler"


def is_project_api(request: RecordedRequest) -> bool:
    return re.search(PROJECT_API, request.path) is not None


def project_lists(proxy: FaultProxy) -> list[RecordedRequest]:
    return [r for r in proxy.requests if r.method == "GET" and r.path == MILO]


def gets_of(proxy: FaultProxy, project: str) -> list[RecordedRequest]:
    return [r for r in proxy.requests if r.method == "GET" and r.path == f"{MILO}/{project}"]


@dataclass
class World:
    """A live project (a Connector copy and a route, each with its live upstream owner) and a
    gone one (`groups` Connector copies with their anchors, and one route) on the hub."""

    ns: str
    live: str
    gone: str
    groups: int

    def args(self, hub_args: list[str], kubeconfig: str, proxy: FaultProxy) -> list[str]:
        return [
            *hub_args,
            *("--upstream-kubeconfig", kubeconfig, "--upstream-server-template", template(proxy)),
            *("--sweep", "routes", "--sweep", "copies", "--namespace", self.ns),
            *("--clock-skew", "0s"),
            *("--delete", "--enforce", "routes", "--enforce", "copies"),
            # A whole project's groups at once: past the brakes, deliberately (the brakes
            # have their own tests).
            *("--max-deletions", "1000", "--max-delete-percent", "100"),
        ]


def make_world(hub: TestCluster, upstream: TestCluster, proxy: FaultProxy, groups: int) -> World:
    live, gone = project_name(), project_name()
    make_project(upstream, live)
    make_project(upstream, gone)
    upstream_ns = upstream.namespace("app")
    upstream.create(gateway(upstream_ns, "gw-live"))
    upstream.create(upstream_route(upstream_ns, "live-route", ("gw-live",)))
    ns = hub.namespace("ns")
    connector_group(hub, ns, live, upstream_ns, "other", live_owner(upstream, upstream_ns, "other"))
    for i in range(groups):
        connector_group(hub, ns, gone, upstream_ns, f"web-{i}", str(uuid.uuid4()))
    for name, cluster in (("live-route", live), ("gone-route", gone)):
        hub.create(
            route(
                ns,
                name,
                cluster_label=f"cluster-{cluster}",
                upstream_namespace=upstream_ns,
                parents=[{"name": "gw-live"}],
            )
        )
    delete_project(upstream, proxy, gone)
    return World(ns, live, gone, groups)


def metric(result: Result, name: str, **labels: str) -> float | None:
    """A sample of what the run pushes to the Pushgateway (where the alerts look)."""
    registry = registry_of(result.summary, duration=1.0, finished=0.0)
    return registry.get_sample_value(name, labels or None)


def test_a_project_api_that_fails_after_its_first_answers_is_a_lookup_failure_exit_1(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    """As reproduced: the list and the GET that proved the project gone answered, then 503
    for every later request. The copies are kept, as a read that failed, never as
    `owner-appeared`, and the run exits 1, in its summary and its metrics."""
    world = make_world(hub, upstream, milo, groups=2)
    milo.add_fault(Fault(method="GET", path=PROJECT_API, times=2))  # the list, the GET
    milo.add_fault(Fault(path=PROJECT_API, status=503, times=None))
    milo.clear_requests()

    result = run_gcjob(*world.args(gcjob_hub_args, milo_kubeconfig, milo))

    assert result.exit_code == 1, result.stderr
    for i in range(world.groups):
        item = result.item("Connector", f"web-{i}")
        assert item is not None and (item["action"], item["reason"]) == (
            "skipped",
            "lookup-failed",
        )
        assert "503" in item["detail"], item
        assert present(hub, "Connector", world.ns, f"web-{i}")
    kept_route = result.item("HTTPRoute", "gone-route")
    assert kept_route is not None and kept_route["reason"] == "lookup-failed", kept_route
    assert hub.present("HTTPRoute", world.ns, "gone-route")
    assert not [i for i in result.items if i["reason"] == "owner-appeared"]
    assert not [i for i in result.items if i["action"] == "deleted"]
    for sweep in ("copies", "routes"):
        assert "the Project API could not be read" in result.summary["sweeps"][sweep]["detail"]
    assert metric(result, "gcjob_run_exit_code") == 1
    counted = metric(
        result, "gcjob_run_objects", sweep="copies", action="skipped", reason="lookup-failed"
    )
    assert counted == world.groups
    assert len(project_lists(milo)) == 1


@pytest.fixture
def thousands_of_projects(upstream: TestCluster) -> Iterator[str]:
    """3,000 projects in the Project API beside the test's own, removed afterwards."""
    yield from filler_projects(upstream, 3000)


def filler_projects(upstream: TestCluster, count: int) -> Iterator[str]:
    """`count` projects in the Project API beside the test's own (labelled with the batch
    this yields), removed afterwards."""
    batch = uuid.uuid4().hex[:8]

    def make(i: int) -> None:
        upstream.create_at(
            MILO,
            {
                "apiVersion": "resourcemanager.miloapis.com/v1alpha1",
                "kind": "Project",
                "metadata": {"name": f"f-{batch}-{i:04d}", "labels": {FILLER_LABEL: batch}},
            },
        )

    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(make, range(count)))
        yield batch
    finally:
        status, body = upstream._call("DELETE", f"{MILO}?labelSelector={FILLER_LABEL}%3D{batch}")
        if status != 200:
            raise ApiFailure(f"deleting the filler projects: {status} {body}")


def test_3000_projects_and_20_copies_of_a_gone_one_list_the_api_once(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
    thousands_of_projects: str,
) -> None:
    """As reproduced: 3,000 projects, one gone with 20 Connector copies. Before, every group's
    second look listed every project again (17 lists), until --upstream-max-items ran out and
    5 copies were kept as `owner-appeared`, exit 0. Now: one list for both sweeps, one GET of
    the gone project to prove it gone and one before each group's and the route's delete;
    everything goes, exit 0. Then with a time budget that the second looks outrun: those
    that could not be read are kept as lookup failures naming the budget, exit 1."""
    world = make_world(hub, upstream, milo, groups=20)
    run = world.args(gcjob_hub_args, milo_kubeconfig, milo)
    milo.clear_requests()

    result = run_gcjob(*run)

    assert result.exit_code == 0, (result.stderr, result.summary["sweeps"])
    deleted = [i for i in result.items if i["action"] == "deleted"]
    assert {(i["kind"], i["reason"]) for i in deleted} == {
        ("Connector", "project-gone"),
        ("ConfigMap", "project-gone"),
        ("HTTPRoute", "project-gone"),
    }
    assert len(deleted) == 2 * world.groups + 1
    assert len(project_lists(milo)) == 1
    # One GET proves it gone (the list does not show it); one for each group, one for the route.
    assert len(gets_of(milo, world.gone)) == 1 + world.groups + 1
    assert not gets_of(milo, world.live)  # listed: no GET
    listed = project_lists(milo)[0]
    assert listed.status == 200 and listed.response_body.count(b'"name"') > 3000

    # The budget case: each second look answers slowly, and the Project API may spend 3 s in
    # all waiting on answers; the run says which budget ran out.
    world = make_world(hub, upstream, milo, groups=20)
    milo.add_fault(Fault(method="GET", path=rf"^{MILO}/{world.gone}$", delay=0.5, times=None))
    milo.clear_requests()
    result = run_gcjob(
        *world.args(gcjob_hub_args, milo_kubeconfig, milo), "--upstream-max-time", "3s"
    )

    assert result.exit_code == 1, result.stderr
    copies = [result.item("Connector", f"web-{i}") for i in range(world.groups)]
    assert all(c is not None for c in copies)
    went = [c for c in copies if c and c["action"] == "deleted"]
    kept = [c for c in copies if c and c["action"] != "deleted"]
    assert kept, "the budget never ran out: the test proves nothing"
    for item in kept:
        assert item["reason"] == "lookup-failed", item
        assert "read budget ran out" in item["detail"] and "--upstream-max-time" in item["detail"]
        assert present(hub, "Connector", world.ns, item["name"])
    assert not [i for i in result.items if i["reason"] == "owner-appeared"]
    assert "read budget ran out" in result.summary["sweeps"]["copies"]["detail"]
    assert len(project_lists(milo)) == 1
    # Every copy deleted had its second look answered: 404, one GET each.
    answered = [r for r in gets_of(milo, world.gone) if r.status == 404]
    assert len(answered) >= 1 + len(went)


# -- generated sequences of Project API answers, on the real server -------------------------

# What the Project API answers to one request: the server's own answer, the server's answer
# after a wait, a refusal, a 404 that names nothing (a wrong path, a proxy), a reset.
ANSWERS = ("server", "server", "slow", "403", "html-404", "reset")
# What it answers to every request after the sequence: the server, slowly or not, or 503.
AFTER = ("server", "503", "slow")
SLOW = 0.5  # seconds


def fault_for(answer: str, times: int | None = 1) -> Fault:
    if answer == "server":
        return Fault(path=PROJECT_API, times=times)
    if answer == "slow":
        return Fault(path=PROJECT_API, delay=SLOW, times=times)
    if answer == "html-404":
        return Fault(path=PROJECT_API, status=404, body="404 page not found\n", times=times)
    if answer == "reset":
        return Fault(path=PROJECT_API, drop=True, times=times)
    return Fault(path=PROJECT_API, status=int(answer), times=times)


# Answers the transport tries again (RETRYABLE_STATUS, a connection reset).
RETRIED = ("reset", "503")


def logical_reads(asked: list[RecordedRequest], injected: list[str]) -> list[list[str]]:
    """The answers each read gcjob made got, its attempts together: an attempt that follows
    a retried answer to the same request is that request's again."""
    reads: list[list[str]] = []
    for n, (request, answer) in enumerate(zip(asked, injected, strict=True)):
        before = asked[n - 1] if n else None
        again = (
            before is not None
            and (before.method, before.path) == (request.method, request.path)
            and reads[-1][-1] in RETRIED
            and len(reads[-1]) < UPSTREAM_RETRY.attempts
        )
        if again:
            reads[-1].append(answer)
        else:
            reads.append([answer])
    return reads


@settings(
    max_examples=max(5, settings().max_examples // 10),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    sequence=st.lists(st.sampled_from(ANSWERS), min_size=1, max_size=6),
    after=st.sampled_from(AFTER),
    budget=st.sampled_from([None, "1.2s", "2s"]),
)
def test_no_reason_claims_what_no_read_of_the_project_api_backs(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
    sequence: list[str],
    after: str,
    budget: str | None,
) -> None:
    """Whatever the Project API answers, in whatever order, slow or not, within its read
    budget or not: nothing is deleted as `project-gone` but on a second look that answered a
    NotFound; nothing is `owner-appeared` (the gone project never answers found); any failed
    read or a budget run out makes the run exit non-zero and say so; and the projects are
    listed once for both sweeps."""
    milo.clear_faults()
    world = make_world(hub, upstream, milo, groups=2)  # its control-plane 404 after the clear
    for answer in sequence:
        milo.add_fault(fault_for(answer))
    milo.add_fault(fault_for(after, times=None))
    milo.clear_requests()
    more = ("--upstream-max-time", budget) if budget else ()

    result = run_gcjob(*world.args(gcjob_hub_args, milo_kubeconfig, milo), *more)

    asked = [r for r in milo.requests if is_project_api(r)]
    injected = [sequence[i] if i < len(sequence) else after for i in range(len(asked))]
    # A read failed when its last attempt got no answer that says anything: a refusal, a
    # 404 naming nothing, a reset, a 503 (the server's own answers, slow or not, do).
    failed = any(read[-1] not in ("server", "slow") for read in logical_reads(asked, injected))
    waited = sum(SLOW for a in injected if a == "slow")
    budget_seconds = float(budget.removesuffix("s")) if budget else None
    said = " ".join(s["detail"] for s in result.summary["sweeps"].values())
    said += " ".join(i["detail"] for i in result.items)
    ran_out = "read budget ran out" in said
    event(f"exit {result.exit_code}" + (", a budget ran out" if ran_out else ""))
    # Facts only on reads that answered.
    assert not [i for i in result.items if i["reason"] == "owner-appeared"]
    gone_deleted = [
        i for i in result.items if i["action"] == "deleted" and i["reason"] == "project-gone"
    ]
    second_looks = len({i["name"] for i in gone_deleted if i["kind"] in ("Connector", "HTTPRoute")})
    if gone_deleted:
        not_found = [
            r
            for r, a in zip(asked, injected, strict=True)
            if r.path == f"{MILO}/{world.gone}" and r.status == 404 and a in ("server", "slow")
        ]
        assert len(not_found) >= 1 + second_looks, (sequence, after, budget)
    # A failed read, or a budget run out, is never a clean run.
    if failed or ran_out or (budget_seconds is not None and waited > budget_seconds):
        assert result.exit_code != 0, (sequence, after, budget, result.summary["sweeps"])
    if budget_seconds is not None and waited > budget_seconds:
        assert ran_out, (sequence, budget)
    if result.exit_code == 0:
        assert len(gone_deleted) == 2 * world.groups + 1  # nothing failed: it all went
    # One list for both sweeps (its attempts, if the first ones failed, in a row).
    lists = [n for n, r in enumerate(asked) if r.method == "GET" and r.path == MILO]
    assert lists == list(range(len(lists))) and 1 <= len(lists) <= UPSTREAM_RETRY.attempts
    for n in lists[:-1]:  # retried only after an answer that can be retried
        assert injected[n] in ("reset", "503"), (sequence, after)
    assert present(hub, "Connector", world.ns, "other")  # the live project's copy stays


@pytest.mark.parametrize(
    ("status", "body"),
    [(404, None), (200, "<html><body>Sign in</body></html>")],
    ids=["not-served", "a-login-page"],
)
def test_a_project_api_that_cannot_be_right_is_refused_at_start_exit_2(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
    status: int,
    body: str | None,
) -> None:
    """issue 34 item 6: a Project API that answers its projects' list with a 404 (a path it
    does not serve) or with something that is not Kubernetes is a configuration error: one
    line, exit 2, before anything is marked or deleted; the run's one list, no second."""
    world = make_world(hub, upstream, milo, groups=1)
    milo.add_fault(Fault(method="GET", path=rf"^{re.escape(MILO)}$", status=status, body=body))
    milo.clear_requests()

    result = run_gcjob(*world.args(gcjob_hub_args, milo_kubeconfig, milo))

    assert result.exit_code == 2, result.stderr
    assert "the Project API" in result.summary["exit_reason"]
    error = [line for line in result.stderr.splitlines() if line.startswith("gcjob: error:")]
    assert len(error) == 1 and "Project API" in error[0]
    assert not result.items  # nothing judged, marked or deleted
    assert present(hub, "Connector", world.ns, "web-0")
    assert len(project_lists(milo)) == 1


def test_a_project_api_that_fails_at_start_leaves_its_projects_not_answered_exit_1(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    """A 5xx on the run's one list: maybe better next run, so no configuration error: the
    projects asked about are not-answered, their copies and routes kept, exit 1, and the
    metric the alert (GcjobProjectsNotAnswered) watches counts them."""
    world = make_world(hub, upstream, milo, groups=1)
    milo.add_fault(Fault(path=PROJECT_API, status=503, times=None))
    milo.clear_requests()

    result = run_gcjob(*world.args(gcjob_hub_args, milo_kubeconfig, milo))

    assert result.exit_code == 1, result.stderr
    assert result.summary["projects"]["not-answered"] == 2  # the live project and the gone one
    assert metric(result, "gcjob_run_projects", state="not-answered") == 2
    assert not [i for i in result.items if i["action"] == "deleted"]
    assert present(hub, "Connector", world.ns, "web-0")
    assert hub.present("HTTPRoute", world.ns, "gone-route")


def hub_route(hub: TestCluster, ns: str, name: str, project: str, upstream_ns: str) -> None:
    """A route NSO copied from `project`, on the Gateway every project's control plane serves
    (they forward to one server)."""
    hub.create(
        route(
            ns,
            name,
            cluster_label=f"cluster-{project}",
            upstream_namespace=upstream_ns,
            parents=[{"name": "gw-live"}],
        )
    )


def routes_and_copies(
    hub_args: list[str], kubeconfig: str, proxy: FaultProxy, ns: str, *more: str
) -> list[str]:
    return [
        *hub_args,
        *("--upstream-kubeconfig", kubeconfig, "--upstream-server-template", template(proxy)),
        *("--sweep", "routes", "--sweep", "copies", "--namespace", ns, "--clock-skew", "0s"),
        *("--delete", "--enforce", "routes", "--enforce", "copies"),
        # Past the deletion brakes, deliberately: the projects brake is what is tried here.
        *("--max-deletions", "1000", "--max-delete-percent", "100"),
        *more,
    ]


def test_two_projects_gone_one_for_each_sweep_are_two_for_the_projects_brake_exit_4(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    """Issue 46 item 3, as reproduced: two projects gone, one with only a route left on the
    hub, one with only a Connector copy, under --max-projects-gone 1. Before, each sweep
    counted its own one: both were deleted, exit 0, the summary said `gone: 2`. The run has
    one count: neither project is taken as gone, in either sweep, nothing of either is
    deleted, exit 4, and the summary and its metric count each project once."""
    live, by_route, by_copy = project_name(), project_name(), project_name()
    for name in (live, by_route, by_copy):
        make_project(upstream, name)
    upstream_ns = upstream.namespace("app")
    upstream.create(gateway(upstream_ns, "gw-live"))
    upstream.create(upstream_route(upstream_ns, "live-route", ("gw-live",)))
    ns = hub.namespace("ns")
    # The live project vouches for the Project API in both sweeps (a copy and a route).
    connector_group(hub, ns, live, upstream_ns, "other", live_owner(upstream, upstream_ns, "other"))
    hub_route(hub, ns, "live-route", live, upstream_ns)
    hub_route(hub, ns, "gone-route", by_route, upstream_ns)
    connector_group(hub, ns, by_copy, upstream_ns, "web", str(uuid.uuid4()))
    delete_project(upstream, milo, by_route)
    delete_project(upstream, milo, by_copy)

    run = routes_and_copies(gcjob_hub_args, milo_kubeconfig, milo, ns)
    result = run_gcjob(*run, "--max-projects-gone", "1")

    assert result.exit_code == 4, (result.stderr, result.summary["sweeps"])
    assert not [i for i in result.items if i["action"] == "deleted"]
    assert hub.present("HTTPRoute", ns, "gone-route")
    assert present(hub, "Connector", ns, "web")
    for kind, name in (("HTTPRoute", "gone-route"), ("Connector", "web")):
        item = result.item(kind, name)
        assert item is not None and item["action"] == "skipped", item
        assert item["reason"] != "project-gone", item
    for sweep in ("routes", "copies"):
        detail = result.summary["sweeps"][sweep]["detail"]
        assert "projects brake: 2 projects found gone in one run" in detail, detail
    counted = result.summary["projects"]
    assert (counted["brake-held"], counted["gone"], counted["present"]) == (2, 0, 1), counted
    assert metric(result, "gcjob_run_projects", state="gone") == 0
    assert metric(result, "gcjob_run_projects", state="brake-held") == 2


def test_a_project_asked_by_both_sweeps_gets_one_verdict(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    """Issue 46 item 3, as an operator's run found it: a deleted project was `project-gone`
    to the routes sweep and not known (`upstream-unavailable`) to the copies sweep in the
    same run. The copies sweep's only project was the gone one, so no control plane of its
    own vouched for the Project API; the routes sweep's live project's did. One judgement of
    the run's projects: the same verdict in both sweeps, both gone, exit 0, the project
    counted once."""
    live, gone = project_name(), project_name()
    make_project(upstream, live)
    make_project(upstream, gone)
    upstream_ns = upstream.namespace("app")
    upstream.create(gateway(upstream_ns, "gw-live"))
    upstream.create(upstream_route(upstream_ns, "live-route", ("gw-live",)))
    ns = hub.namespace("ns")
    hub_route(hub, ns, "live-route", live, upstream_ns)  # the live project: a route only
    hub_route(hub, ns, "gone-route", gone, upstream_ns)
    connector_group(hub, ns, gone, upstream_ns, "web", str(uuid.uuid4()))
    delete_project(upstream, milo, gone)

    result = run_gcjob(*routes_and_copies(gcjob_hub_args, milo_kubeconfig, milo, ns))

    assert result.outcome("HTTPRoute", "gone-route") == ("deleted", "project-gone")
    assert result.outcome("Connector", "web") == ("deleted", "project-gone")
    assert not hub.present("HTTPRoute", ns, "gone-route")
    assert not present(hub, "Connector", ns, "web")
    kept = result.outcome("HTTPRoute", "live-route")
    assert kept is None or kept[0] == "skipped", kept  # healthy: counted, not itemised
    assert result.exit_code == 0, (result.stderr, result.summary["sweeps"])
    counted = result.summary["projects"]
    assert (counted["gone"], counted["present"], counted["not-answered"]) == (1, 1, 0), counted


def test_explain_trusts_the_project_api_as_the_run_does_and_names_the_answers_it_used(
    hub: TestCluster,
    upstream: TestCluster,
    hub_kubeconfig: str,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    """Issue 51 item 2, as the operator met it: a report-only copy of a deleted project, the
    only project the copies name; a live project's route is what vouches for the Project API
    in the run (one judgement of the round's projects). `explain` said "no project's control
    plane answered this run" (exit 3) while the run proved the project gone. Now explain
    judges the projects through the run's own round judgement, over what every sweep names:
    the same verdict as the run, exit 0, and it names the answers it used (the Project
    API's, for the deleted project; its control plane's and the API's, for a live owner)."""
    live, gone = project_name(), project_name()
    make_project(upstream, live)
    make_project(upstream, gone)
    upstream_ns = upstream.namespace("app")
    upstream.create(gateway(upstream_ns, "gw-live"))
    upstream.create(upstream_route(upstream_ns, "live-route", ("gw-live",)))
    ns = hub.namespace("ns")
    hub_route(hub, ns, "live-route", live, upstream_ns)  # the live project: a route only
    connector_group(hub, ns, gone, upstream_ns, "web", str(uuid.uuid4()))
    delete_project(upstream, milo, gone)
    upstream_args = [
        *("--upstream-kubeconfig", milo_kubeconfig, "--upstream-server-template", template(milo)),
        *("--namespace", ns),
    ]

    result = run_gcjob(
        *gcjob_hub_args,
        *upstream_args,
        "--sweep",
        "routes",
        "--sweep",
        "copies",
        "--clock-skew",
        "0s",
    )

    assert result.exit_code == 0, (result.stderr, result.summary["sweeps"])
    assert result.outcome("Connector", "web") == ("would-delete", "project-gone")

    def explained(target: str) -> tuple[int, dict[str, Any], str]:
        said = CliRunner().invoke(
            cli,
            [
                *("explain", target, "--hub-kubeconfig", hub_kubeconfig, *upstream_args),
                *("--min-age", "0s", "--grace", "0s", "--output", "json"),
            ],
            standalone_mode=False,
        )
        doc = json.loads(said.stdout)
        schemas.EXPLAIN.validate(doc)
        (used,) = [s for s in doc["steps"] if s["rule"] == "answers-used"]
        return said.return_value, doc["verdict"], used["evidence"]

    code, verdict, used = explained(f"connector/{ns}/web")
    assert code == 0, (verdict, used)
    assert (verdict["action"], verdict["reason"]) == ("would-delete", "project-gone")
    assert used.startswith("the Project API's answer: "), used
    assert f"project {gone} not found by the Project API" in used, used
    assert "found all 1 projects whose control plane answered" in used, used
    assert "its control plane's not needed (it did not answer: " in used, used
    code, verdict, used = explained(f"httproute/{ns}/live-route")
    assert code == 0, (verdict, used)
    assert verdict["reason"] == "gateway-exists", verdict
    assert used.startswith(f"both: the Project API's answer (project {live} exists)"), used
    assert used.endswith("then its control plane's (it answered)"), used
