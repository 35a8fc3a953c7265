"""gcjob/sweeps/driver.py: which outcomes of acting on the grace rule say when the orphan goes
(`on_its_way`, `would_delete_at`) and which never promise a time (issue 23 item 2); and a sweep
declared as a new folder would declare it, run by the one driver (issue 32 item 1)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any

import pytest

from gcjob.act.deleter import Deleter
from gcjob.decide.common import Claims
from gcjob.decide.grace import Graced, grace_call
from gcjob.domain import KARMADA_PROTECTED
from gcjob.enumerate.owners import ProjectReads
from gcjob.exitcodes import ExitCode
from gcjob.kube.access import DeleteResult
from gcjob.kube.errors import ApiError, Stopped
from gcjob.kube.resources import CONFIGMAPS, Resource
from gcjob.kube.snapshot import SnapshotStore
from gcjob.marks import Rule, companion_evidence
from gcjob.model import (
    PROJECT_COUNTED_AS,
    Action,
    ObjectRef,
    Outcome,
    OwnerRef,
    ProjectCall,
    ProjectState,
    Sweep,
    Verdict,
)
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.sweeps.driver import (
    Candidates,
    Counted,
    Declaration,
    Exits,
    Healthy,
    Incomplete,
    Judged,
    Named,
    NotConfigured,
    Planned,
    Projects,
    RoundProjects,
    Scan,
    Step,
    Unswept,
    drive,
    on_its_way,
)
from testbed.model import HUB_NS, NOW, ref
from testbed.runs import snapshot_run

AT = NOW + timedelta(minutes=10)
TOY = Sweep("toy")  # the driver's toy sweep: none of the shipped ones


def _outcome(action: Action, reason: str) -> Outcome:
    return Outcome(Sweep.COMPANIONS, ref("ConfigMap", "app-config"), action, reason, "gone")


@pytest.mark.parametrize(
    "action,reason",
    [
        (Action.WOULD_MARK, Reason.ORPHANED),  # a dry run: enforcing marks it now
        (Action.MARKED, Reason.ORPHANED),
        (Action.WOULD_MARK, Reason.COMPANION_ORPHANED),  # a companion's binding, with it
        (Action.SKIPPED, Reason.GRACE_PERIOD),  # marked, waiting
        (Action.WOULD_DELETE, Reason.ORPHANED),  # a dry run, or a sweep not enforced
    ],
)
def test_an_orphan_left_in_place_on_its_way_says_when_it_goes(action: Action, reason: str) -> None:
    [said] = on_its_way([_outcome(action, reason)], AT)
    assert said.would_delete_at == AT


@pytest.mark.parametrize(
    "action,reason",
    [
        (Action.WOULD_DELETE, Reason.BRAKE),  # the deletion brake held it back
        (Action.WOULD_MARK, Reason.BRAKE),  # the marks or write brake
        (Action.DELETED, Reason.ORPHANED),  # gone: nothing left to go
        (Action.ALREADY_GONE, Reason.ALREADY_GONE),
        (Action.FAILED, Reason.DELETE_FAILED),
        (Action.FAILED, Reason.MARK_FAILED),
        (Action.SKIPPED, Reason.REFERRER_APPEARED),  # kept on a second look
        (Action.SKIPPED, Reason.CHANGED_SINCE_OBSERVED),
        (Action.SKIPPED, Reason.STOPPED),
    ],
)
def test_no_time_is_promised_for_what_was_held_back_failed_kept_or_gone(
    action: Action, reason: str
) -> None:
    [said] = on_its_way([_outcome(action, reason)], AT)
    assert said.would_delete_at is None


def test_no_time_from_the_rule_leaves_every_outcome_as_it_was() -> None:
    outcomes = [_outcome(Action.MARKED, Reason.ORPHANED)]
    assert on_its_way(outcomes, None) == outcomes


# -- gcjob.sweeps.driver.drive: a sweep declared, run by the one driver ------------------------


class Toy(Declaration[Verdict, None]):
    """A sweep as a new folder would declare it, under a name of its own (`Sweep` is open):
    its scan's steps, its plan and its delete. Nothing of the driver changes for it."""

    sweep = TOY
    rule = Rule.COMPANION

    def __init__(
        self, run: Run, steps: list[Step[Verdict, None]], unswept: Unswept | None = None
    ) -> None:
        super().__init__(run)
        self.steps = steps
        self.unswept = unswept
        self.deleted: list[str] = []
        self.marked: list[str] = []
        # What each object carries of the rules every sweep obeys (by name): none, unless set.
        self.claims: dict[str, Claims | None] = {}

    def scan(self) -> Scan[Verdict, None]:
        yield from self.steps
        if self.unswept is not None:
            raise self.unswept

    def plan(self, judged: Verdict) -> Planned[None]:
        if judged.ref.name == "plan-raises":
            raise ZeroDivisionError("one judgement's bad luck")
        evidence = companion_evidence('["default/web"]') if judged.delete else None
        run = self.run
        call = grace_call(self.rule, judged, evidence, run.now, run.settings.grace)
        return Planned(judged, evidence, call, None, self.claims.get(judged.ref.name, Claims()))

    def resource(self, graced: Graced[None]) -> Resource:
        return CONFIGMAPS

    def delete(self, graced: Graced[None], deleter: Deleter) -> list[Outcome]:
        self.deleted.append(graced.verdict.ref.name)
        return [deleter.delete(self.sweep, graced.verdict, CONFIGMAPS)]

    def mark(self, graced: Graced[None]) -> list[Outcome]:
        # Its objects are not on the snapshot's hub: the mark is said, not patched.
        self.marked.append(graced.verdict.ref.name)
        return [Outcome.of(self.sweep, graced.verdict, Action.WOULD_MARK)]


def toy_run(**settings: Any) -> Any:
    """A snapshot run of the toy sweep, enforced unless `enforce` says otherwise (as the
    shipped sweeps a --delete run enforces by default)."""
    settings.setdefault("enforce", (TOY,))
    return snapshot_run(TOY, **settings)


def _orphan(name: str, uid: str) -> Verdict:
    return Verdict(ref("ConfigMap", name, uid=uid), True, Reason.ORPHANED, "no referrer")


def _kept(name: str, uid: str) -> Verdict:
    return Verdict(ref("ConfigMap", name, uid=uid), False, Reason.REFERRER_LIVE, "in use")


def _ref_of(verdict: Verdict) -> ObjectRef:
    return verdict.ref


def _drive(
    grace: timedelta, steps: list[Step[Verdict, None]], unswept: Unswept | None = None
) -> Any:
    ran = toy_run(grace=grace)
    toy = Toy(ran.run, steps, unswept)
    drive(ran.run, toy)
    return ran, toy


def test_a_declared_sweep_is_judged_planned_and_acted_on_by_the_driver() -> None:
    steps: list[Step[Verdict, None]] = [
        Counted(5, 3),
        Judged([_kept("in-use", "u1"), _orphan("orphan", "u2")], _ref_of),
        Healthy(Counter({Reason.REFERRER_LIVE: 2})),
    ]
    ran, toy = _drive(timedelta(minutes=10), steps)
    assert ran.outcomes()[("ConfigMap", HUB_NS, "in-use")] == ("skipped", "referrer-live")
    # A new orphan is marked (a dry run: would-mark), as the plan says; nothing deleted.
    assert ran.outcomes()[("ConfigMap", HUB_NS, "orphan")] == ("would-mark", "orphaned")
    assert (toy.marked, toy.deleted) == (["orphan"], [])
    state = ran.run.tally.sweeps[TOY]
    assert (state.status, state.scanned, state.in_scope) == ("completed", 5, 3)


def test_a_due_orphan_goes_through_the_declared_delete() -> None:
    steps: list[Step[Verdict, None]] = [Counted(1, 1), Judged([_orphan("due", "u3")], _ref_of)]
    ran, toy = _drive(timedelta(0), steps)
    assert toy.deleted == ["due"]
    assert ran.outcomes()[("ConfigMap", HUB_NS, "due")] == ("would-delete", "orphaned")
    assert ran.run.tally.deleted == 1


def test_a_plan_that_raises_keeps_that_object_and_the_sweep_goes_on() -> None:
    steps: list[Step[Verdict, None]] = [
        Counted(2, 2),
        Judged([_orphan("plan-raises", "u4"), _orphan("neighbour", "u5")], _ref_of),
    ]
    ran, _ = _drive(timedelta(minutes=10), steps)
    assert ran.outcomes()[("ConfigMap", HUB_NS, "plan-raises")] == ("skipped", "internal-error")
    assert ran.outcomes()[("ConfigMap", HUB_NS, "neighbour")] == ("would-mark", "orphaned")
    assert ran.run.tally.sweeps[TOY].status == "incomplete"


def test_a_stop_while_judging_candidates_acts_on_nothing_and_says_so() -> None:
    def judge(verdict: Verdict) -> list[Planned[None]]:
        raise Stopped("--timeout reached")

    steps: list[Step[Verdict, None]] = [
        Counted(2, 2),
        Judged([_orphan("judged-first", "u6")], _ref_of),
        Candidates([_orphan("unread", "u7")], _ref_of, judge, "stopped while reading"),
    ]
    ran, toy = _drive(timedelta(0), steps)
    state = ran.run.tally.sweeps[TOY]
    assert state.status == "stopped"
    assert state.detail == "stopped while reading: --timeout reached"
    assert toy.deleted == [] and ran.items() == []


def test_a_scan_that_could_not_read_all_acts_on_nothing_and_says_why() -> None:
    steps: list[Step[Verdict, None]] = [Judged([_orphan("read", "u8")], _ref_of)]
    failed = ApiError(500, "InternalError", "etcd is away", "configmaps")
    ran, toy = _drive(timedelta(0), steps, Incomplete("cannot list ConfigMaps", failed))
    # What was judged before it is neither written nor reported.
    assert toy.deleted == [] and toy.marked == [] and ran.items() == []
    state = ran.run.tally.sweeps[TOY]
    assert state.status == "incomplete"
    assert state.detail.startswith("cannot list ConfigMaps: ")
    assert state.detail.endswith("; nothing deleted")
    assert ExitCode.INCOMPLETE in ran.run.tally.codes


def test_a_sweep_that_cannot_run_here_says_so_and_reads_nothing_more() -> None:
    ran, toy = _drive(timedelta(0), [], NotConfigured("no upstream configured"))
    state = ran.run.tally.sweeps[TOY]
    assert (state.status, state.detail) == ("not-configured", "no upstream configured")
    assert toy.deleted == [] and ran.items() == []


def test_what_the_project_api_said_and_the_exit_codes_a_scan_calls_for_reach_the_run() -> None:
    gone = ProjectCall(ProjectState.GONE, "project gone")
    steps: list[Step[Verdict, None]] = [
        Projects({"proj-a": gone}, "", "timed out"),
        Exits(ExitCode.ITEM_FAILED),
    ]
    ran, _ = _drive(timedelta(0), steps)
    assert ran.run.tally.project_counts == {"proj-a": PROJECT_COUNTED_AS[ProjectState.GONE]}
    assert "the Project API could not be read: timed out" in (ran.run.tally.sweeps[TOY].detail)
    assert ExitCode.ITEM_FAILED in ran.run.tally.codes


# -- --enforce, held by the driver for every sweep (issue 46 item 1) ---------------------------


class Sent:
    """The hub as a deleter sees it: each delete sent is kept (none should be)."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete(self, resource: Resource, namespace: str, name: str, uid: str, rv: str) -> Any:
        self.deleted.append(name)
        return DeleteResult.DELETED


def test_a_sweep_not_enforced_sends_no_delete_whatever_its_writes_do() -> None:
    """The driver hands a sweep not in --enforce a deleter that deletes nothing: the sweep's
    own delete runs (its second looks, its binding), and says `would-delete`; only the copies
    sweep read --enforce before, the others deleted."""
    ran = toy_run(grace=timedelta(0), enforce=(Sweep.COPIES,))
    sent = Sent()
    live = Deleter(sent, dry_run=False, budget=ran.run.budget)  # type: ignore[arg-type]
    ran.run.context = replace(ran.run.context, deleter=live)
    toy = Toy(ran.run, [Counted(1, 1), Judged([_orphan("due", "u3")], _ref_of)])
    drive(ran.run, toy)
    assert toy.deleted == ["due"] and sent.deleted == []
    [item] = ran.items()
    assert (item["action"], item["reason"]) == ("would-delete", "orphaned")
    assert "not deleted: this sweep is not enforced (--enforce toy)" in item["detail"]
    assert "would_delete_if_enforced_at" in item
    # Enforced, the same sweep's delete goes out.
    ran = toy_run(grace=timedelta(0))
    ran.run.context = replace(ran.run.context, deleter=live)
    drive(ran.run, Toy(ran.run, [Counted(1, 1), Judged([_orphan("due", "u3")], _ref_of)]))
    assert sent.deleted == ["due"]


def test_a_sweep_not_enforced_engages_no_brake_and_takes_no_place_in_the_drain_cap() -> None:
    """A report-only sweep's orphans, too many for the breaker: it deletes nothing, so each
    says the brake enforcing it would meet, and no exit 4 fires (a --delete run with the
    copies sweep report-only would exit 4 every five minutes for deletions nobody asked for);
    its would-deletes take no place in the drain cap the enforced sweeps share."""
    ran = toy_run(grace=timedelta(0), enforce=(), delete=True)
    orphans = [_orphan(f"o{i}", f"u{i}") for i in range(60)]
    drive(ran.run, Toy(ran.run, [Counted(60, 60), Judged(orphans, _ref_of)]))
    assert ExitCode.BRAKE not in ran.run.tally.codes and ran.run.tally.brakes == []
    assert ran.run.tally.deleted == 0
    items = ran.items()
    assert len(items) == 60
    for item in items:
        # Its own reason, never `brake`: no brake metric or notification either.
        assert (item["action"], item["reason"]) == ("would-delete", "orphaned")
        assert item["detail"].startswith(
            "not deleted: this sweep is not enforced; were it enforced, deletion brake: 60 of 60"
        )
    assert "were it enforced, deletion brake: 60 of 60" in ran.run.tally.sweeps[TOY].detail
    # Enforced, the same world engages the brake: exit 4.
    ran = toy_run(grace=timedelta(0), delete=True)
    drive(ran.run, Toy(ran.run, [Counted(60, 60), Judged(orphans, _ref_of)]))
    assert ExitCode.BRAKE in ran.run.tally.codes


# -- owned and protected, held by the driver for every sweep (issue 46) -----------------------

FOREIGN = OwnerRef("v1", "ConfigMap", "live-config", controller=True, uid="uid-live")
ANCHOR = OwnerRef("v1", "ConfigMap", "anchor-8a1f0c2e-3b4d-4e5f-9a6b-7c8d9e0f1a2b", True)


@pytest.mark.parametrize(
    "claims,reason",
    [
        (Claims(owners=(FOREIGN,)), "owned"),
        (Claims(owners=(replace(FOREIGN, controller=False),)), "owned"),
        (Claims(protect=(("annotation gcjob.datumapis.com/protect", "true"),)), "protected"),
        (Claims(protect=(("label gcjob.datumapis.com/protect", "yes"),)), "protect-not-understood"),
        (Claims(protect=((KARMADA_PROTECTED, "Always"),)), "deletion-protected"),
        (Claims(protect=((KARMADA_PROTECTED, "always"),)), "deletion-protected-not-understood"),
        (Claims(protect=((KARMADA_PROTECTED, ""),)), "deletion-protected-not-understood"),
        (None, "internal-error"),  # an orphan declared without its claims
    ],
)
@pytest.mark.parametrize("grace", [timedelta(0), timedelta(minutes=10)])
def test_an_orphan_its_sweep_judged_but_another_claims_is_neither_marked_nor_deleted(
    claims: Claims | None, reason: str, grace: timedelta
) -> None:
    """Whatever a declared sweep's judgement says, the driver keeps an orphan that something
    else owns or that is protected: a sixth sweep that forgot the rule deletes nothing."""
    ran = toy_run(grace=grace)
    toy = Toy(
        ran.run, [Counted(2, 2), Judged([_orphan("held", "u1"), _orphan("free", "u2")], _ref_of)]
    )
    toy.claims["held"] = claims
    drive(ran.run, toy)
    assert ran.outcomes()[("ConfigMap", HUB_NS, "held")] == ("skipped", reason)
    assert "held" not in toy.deleted and "held" not in toy.marked
    assert "free" in toy.deleted or "free" in toy.marked  # the rule, not a broken sweep


def test_an_owner_the_sweep_declares_its_own_holds_nothing() -> None:
    ran = toy_run(grace=timedelta(0))
    toy = Toy(ran.run, [Counted(1, 1), Judged([_orphan("anchored", "u1")], _ref_of)])
    toy.claims["anchored"] = Claims(owners=(ANCHOR,), own=(ANCHOR,), controllers_only=True)
    drive(ran.run, toy)
    assert toy.deleted == ["anchored"]


def _milo(*live: str) -> SnapshotStore:
    api = SnapshotStore("milo", [], every_kind=True)
    for name in live:
        api.add(
            {
                "apiVersion": "resourcemanager.miloapis.com/v1alpha1",
                "kind": "Project",
                "metadata": {"name": name, "uid": f"u-{name}"},
            }
        )
    return api


def test_a_rounds_projects_are_judged_once_for_every_sweep_before_either_acts() -> None:
    """Issue 46 item 3: two projects gone, one named only by the routes sweep, one only by the
    copies sweep, --max-projects-gone 1. The first sweep to ask waits for what the other
    names: neither project is taken as gone, in either sweep, and the summary counts each
    project once (before: each sweep counted its one, both were deleted, `gone: 2`). The
    copies sweep's only project is the gone one, so no control plane of its own vouches for
    the API: the routes sweep's does, for the one judgement (before: `project-gone` to one
    sweep, unknown to the other)."""
    ran = toy_run(max_projects_gone=1)  # the toy sweep
    run = ran.run
    run.context = replace(run.context, is_project=lambda name: True)
    reads = ProjectReads(_milo("live"), lambda name: True)
    by_routes = Named(("gone-route", "live"), ("live",))
    by_copies = Named(("gone-copy",), ())
    asked: list[str] = []

    def source(name: str, named: Named) -> Named:
        asked.append(name)
        return named

    sources = [partial(source, "routes", by_routes), partial(source, "copies", by_copies)]
    projects = RoundProjects(run, reads, sources)
    routes = projects.calls(by_routes)
    assert asked == ["routes", "copies"]  # before the routes sweep acts on any of them
    copies = projects.calls(by_copies)
    assert asked == ["routes", "copies"]  # one judgement a round
    assert list(routes) == ["gone-route", "live"] and list(copies) == ["gone-copy"]
    assert "projects brake: 2 projects found gone in one run" in routes.brake
    assert routes.brake == copies.brake
    assert (
        routes["gone-route"]
        == copies["gone-copy"]
        == ProjectCall(ProjectState.UNKNOWN, routes.brake)
    )
    for calls in (routes, copies):
        drive(run, Toy(run, [Projects(calls, calls.brake, "")]))
    counted = run.summary(run.exit_code())["projects"]
    assert (counted["brake-held"], counted["gone"], counted["present"]) == (2, 0, 1)

    # Within the limit, the one judgement vouches for the copies sweep's project too.
    ran = toy_run(max_projects_gone=2)
    ran.run.context = replace(ran.run.context, is_project=lambda name: True)
    projects = RoundProjects(ran.run, reads, [lambda: by_copies])
    assert projects.calls(by_routes)["gone-route"].state is ProjectState.GONE
    assert projects.calls(by_copies)["gone-copy"].state is ProjectState.GONE


def test_the_projects_brake_counts_every_round_of_a_drain_together() -> None:
    """A round of --drain finds one project gone, the next another: two in the run, over
    --max-projects-gone 1. The second round does not take the new one as gone, and the
    summary counts the run's projects (before: each round had its own count of one, and
    cleared the summary's). The first, taken as gone in the first round (its objects may
    have been deleted then), stays gone and is counted so (before: it turned brake-held,
    `gone: 0`, though its objects were deleted)."""
    ran = toy_run(max_projects_gone=1)  # the toy sweep
    run = ran.run
    run.context = replace(run.context, is_project=lambda name: True)
    reads = ProjectReads(_milo("live"), lambda name: True)
    first = RoundProjects(run, reads).calls(Named(("gone-a", "live"), ("live",)))
    assert first["gone-a"].state is ProjectState.GONE and not first.brake
    drive(run, Toy(run, [Projects(first, first.brake, "")]))
    run.next_round(run.clock)
    second = RoundProjects(run, reads).calls(Named(("gone-a", "gone-b", "live"), ("live",)))
    assert "projects brake: 2 projects" in second.brake
    assert second["gone-a"] == first["gone-a"]  # one verdict a run
    assert second["gone-b"] == ProjectCall(ProjectState.UNKNOWN, second.brake)
    drive(run, Toy(run, [Projects(second, second.brake, "")]))
    counted = run.summary(run.exit_code())["projects"]
    assert (counted["brake-held"], counted["gone"], counted["present"]) == (1, 1, 1)
