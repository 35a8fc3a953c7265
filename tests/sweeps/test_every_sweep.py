"""The rules every sweep obeys, held by the driver (gcjob/sweeps/driver.py) for every sweep
gcjob/sweeps/__init__.py declares (`DECLARED`) and for the toy sweep a new folder would
declare (tests/sweeps/test_driver.py `Toy`), over generated worlds (issue 46): a sweep not in
--enforce deletes nothing; an orphan another owner manages, or that carries the protect key,
is never deleted or marked; every delete sent is pinned to the uid and resourceVersion judged.
Declaring a sweep in DECLARED adds it here."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gcjob.act.deleter import Deleter
from gcjob.decide.common import Claims, claimed
from gcjob.domain import DELETION_PROTECTED_LABEL, KARMADA_PROTECTED
from gcjob.kube import reduce
from gcjob.kube.access import DeleteResult
from gcjob.kube.resources import Resource
from gcjob.marks import companion_evidence, new_mark
from gcjob.model import UNREADABLE_OWNER, Deletion, OwnerRef, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.settings import NEVER_ENFORCED
from gcjob.sweeps import DECLARED, execute
from gcjob.sweeps.driver import Counted, Declaration, Judged, drive
from testbed.model import ref
from testbed.runs import DEMO, snapshot_run
from tests.sweeps.test_driver import Toy

# Every declared sweep, and the toy: each driven as that sweep (its name, its grace rule).
SWEEPS: list[type[Declaration[Any, Any]]] = [*DECLARED, Toy]


def test_every_sweep_is_declared() -> None:
    assert {declared.sweep for declared in DECLARED} == set(Sweep)


@dataclass
class Sent:
    """The hub as a deleter sees it: every delete sent, with its preconditions."""

    deletes: list[tuple[str, str, str]]

    def delete(self, resource: Resource, namespace: str, name: str, uid: str, rv: str) -> Any:
        self.deletes.append((name, uid, rv))
        return DeleteResult.DELETED


ANCHOR = OwnerRef("v1", "ConfigMap", "anchor-8a1f0c2e-3b4d-4e5f-9a6b-7c8d9e0f1a2b", True)
TEMPLATE = OwnerRef("v1", "ConfigMap", "app-config", True, uid="uid-template")
owner_st = st.sampled_from(
    [
        OwnerRef("v1", "ConfigMap", "live-config", True, uid="uid-live"),  # issue 46 item 2
        OwnerRef("apps/v1", "Deployment", "web", False, uid="uid-web"),
        OwnerRef("apps/v1", "Deployment", "web", True, uid="uid-web"),
        ANCHOR,
        TEMPLATE,
        UNREADABLE_OWNER,
    ]
)
protect_st = st.lists(
    st.one_of(
        st.tuples(
            st.sampled_from(
                ["annotation gcjob.datumapis.com/protect", "label gcjob.datumapis.com/Protect"]
            ),
            st.sampled_from(["true", "false", "yes", "True", " true", ""]),
        ),
        # Karmada's deletion protection, as read: `Always`, or a value gcjob does not know.
        st.tuples(st.just(KARMADA_PROTECTED), st.sampled_from(["Always", "always", "true", ""])),
    ),
    max_size=2,
).map(tuple)
claims_st = st.one_of(
    st.none(),  # declared without: kept
    st.builds(
        Claims,
        owners=st.lists(owner_st, max_size=3).map(tuple),
        protect=protect_st,
        own=st.sampled_from([(), (ANCHOR,), (TEMPLATE,), (ANCHOR, TEMPLATE)]),
        controllers_only=st.booleans(),
    ),
)


@dataclass(frozen=True)
class Thing:
    """One object of a generated world: an orphan or not, as its sweep judged it, pinnable or
    not, and what it carries of the rules every sweep obeys."""

    orphan: bool
    uid: str
    rv: str
    claims: Claims | None


thing_st = st.builds(
    Thing,
    orphan=st.booleans(),
    uid=st.sampled_from(["", "u"]),
    rv=st.sampled_from(["", "7"]),
    claims=claims_st,
)


def _verdict(index: int, thing: Thing) -> Verdict:
    uid = f"{thing.uid}{index}" if thing.uid else ""
    at = ref("ConfigMap", f"obj-{index}", uid=uid, resource_version=thing.rv)
    if thing.orphan:
        return Verdict(at, True, Reason.ORPHANED, "no referrer")
    return Verdict(at, False, Reason.REFERRER_LIVE, "in use", healthy=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A snapshot of the demo's namespaces alone, at its time: a run's context, read fast
    for each generated world (its objects are the world's, not the snapshot's)."""
    root = tmp_path_factory.mktemp("tiny")
    (root / "hub").mkdir()
    shutil.copy(DEMO / "snapshot.yaml", root / "snapshot.yaml")
    shutil.copy(DEMO / "hub" / "namespaces.yaml", root / "hub" / "namespaces.yaml")
    return root


@pytest.mark.parametrize("declared", SWEEPS, ids=lambda d: d.__name__)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    things=st.lists(thing_st, max_size=8),
    # --enforce refuses a report-only sweep (settings.py NEVER_ENFORCED): never asked for.
    enforce=st.sets(st.sampled_from([s for s in Sweep if s.value not in NEVER_ENFORCED])),
    grace=st.sampled_from([timedelta(0), timedelta(minutes=10)]),
    live=st.booleans(),
)
def test_the_rules_every_sweep_obeys_hold_for_each_declared_sweep(
    tiny: Path,
    declared: type[Declaration[Any, Any]],
    things: list[Thing],
    enforce: set[Sweep],
    grace: timedelta,
    live: bool,
) -> None:
    sweep = declared.sweep
    ran = snapshot_run(sweep, directory=tiny, grace=grace, enforce=tuple(sorted(enforce)))
    sent = Sent([])
    deleter = Deleter(sent, dry_run=not live, budget=ran.run.budget)  # type: ignore[arg-type]
    ran.run.context = replace(ran.run.context, deleter=deleter)
    # The toy, named and ruled as the declared sweep: the driver knows no more of a sweep.
    as_sweep = type(f"As{declared.__name__}", (Toy,), {"sweep": sweep, "rule": declared.rule})
    verdicts = [_verdict(i, t) for i, t in enumerate(things)]
    toy = as_sweep(ran.run, [Counted(len(things), len(things)), Judged(verdicts, _ref)])
    toy.claims = {v.ref.name: t.claims for v, t in zip(verdicts, things, strict=True)}
    drive(ran.run, toy)

    if sweep not in enforce:
        assert sent.deletes == []  # a sweep not in --enforce deletes nothing
    judged = {v.ref.name: v for v in verdicts}
    for name, uid, rv in sent.deletes:  # every delete pinned to what was judged
        assert uid and rv and (uid, rv) == (judged[name].ref.uid, judged[name].ref.resource_version)
    said = ran.outcomes()
    for verdict, thing in zip(verdicts, things, strict=True):
        name = verdict.ref.name
        unpinnable = not verdict.ref.uid or not verdict.ref.resource_version
        held = unpinnable or thing.claims is None or claimed(thing.claims) is not None
        if verdict.delete and held:
            assert name not in toy.deleted and name not in toy.marked, thing
            assert all(sent_name != name for sent_name, _, _ in sent.deletes)
            action, reason = said[("ConfigMap", verdict.ref.namespace, name)]
            assert action == "skipped" and reason in {
                "owned",
                "protected",
                "protect-not-understood",
                "deletion-protected",
                "deletion-protected-not-understood",
                "internal-error",
                "unpinnable",
            }, (action, reason)


def _ref(verdict: Verdict) -> Any:
    return verdict.ref


# A value of Karmada's deletion-protection label, as a hub may hold it: `Always`, its near
# misses, any text, or what is not a string at all.
karmada_value_st = st.one_of(
    st.sampled_from(["Always", "always", "ALWAYS", " Always", "Always ", "true", "", "Never"]),
    st.text(max_size=70),
    st.none(),
    st.integers(),
)


@pytest.mark.parametrize("declared", SWEEPS, ids=lambda d: d.__name__)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=karmada_value_st, protect_key=st.sampled_from([None, "false", "true"]))
def test_karmadas_deletion_protection_label_with_any_value_keeps_the_orphan_in_each_sweep(
    tiny: Path, declared: type[Declaration[Any, Any]], value: Any, protect_key: str | None
) -> None:
    """Fail closed (issue 51): an orphan carrying Karmada's deletion-protection label is kept
    by the driver whatever its value and whatever its sweep's judgement said, neither marked
    nor deleted, in every declared sweep, enforced: `deletion-protected` for exactly
    `Always`, which Karmada refuses to delete, `deletion-protected-not-understood` for any
    other value (`always`, `" Always"`, `true`, empty, not a string), naming the value and
    that Karmada refuses only `Always`. The label is read from the object as every sweep
    reads it (kube/reduce.py `protect`)."""
    sweep = declared.sweep
    # enforced, unless report-only by design (--enforce refuses it: it deletes nothing anyway)
    enforce = () if sweep.value in NEVER_ENFORCED else (sweep,)
    ran = snapshot_run(sweep, directory=tiny, grace=timedelta(0), enforce=enforce)
    sent = Sent([])
    deleter = Deleter(sent, dry_run=False, budget=ran.run.budget)  # type: ignore[arg-type]
    ran.run.context = replace(ran.run.context, deleter=deleter)
    labels: dict[str, Any] = {DELETION_PROTECTED_LABEL: value}
    if protect_key is not None:
        labels["gcjob.datumapis.com/protect"] = protect_key
    claims = Claims(protect=reduce.protect({"metadata": {"labels": labels}}))
    as_sweep = type(f"As{declared.__name__}", (Toy,), {"sweep": sweep, "rule": declared.rule})
    held = Verdict(ref("ConfigMap", "held", uid="u1"), True, Reason.ORPHANED, "no referrer")
    free = Verdict(ref("ConfigMap", "free", uid="u2"), True, Reason.ORPHANED, "no referrer")
    toy = as_sweep(ran.run, [Counted(2, 2), Judged([held, free], _ref)])
    toy.claims = {"held": claims}
    drive(ran.run, toy)

    assert "held" not in toy.deleted and "held" not in toy.marked
    # the rule, not a broken sweep (a report-only one deletes neither)
    assert [name for name, _, _ in sent.deletes] == (["free"] if enforce else [])
    reason = "deletion-protected" if value == "Always" else "deletion-protected-not-understood"
    assert ran.outcomes()[("ConfigMap", held.ref.namespace, "held")] == ("skipped", reason)
    if value != "Always":
        (item,) = [i for i in ran.items() if i["name"] == "held"]
        assert "not a value gcjob recognises" in item["detail"], item
        assert "only on exactly Always" in item["detail"], item


@pytest.mark.parametrize("enforced", [False, True])
def test_the_declared_sweeps_own_deletes_go_through_the_deleter_the_driver_hands(
    enforced: bool,
) -> None:
    """The sweeps declared, their own writes driven over the demo's snapshot (its hub and
    upstreams; the copies sweep needs discovery, which no snapshot holds), every orphan due:
    not enforced, none sends a delete whatever its writes do; enforced, each sends its own,
    pinned."""
    sweeps = (Sweep.COMPANIONS, Sweep.BINDINGS, Sweep.ROUTES)
    ran = snapshot_run(*sweeps, grace=timedelta(0), enforce=sweeps if enforced else ())
    ran.run.tally.sweeps.clear()
    ran.run.context = replace(ran.run.context, settings=replace(ran.run.settings, sweeps=sweeps))
    sent = Sent([])
    deleter = Deleter(sent, dry_run=False, budget=ran.run.budget)  # type: ignore[arg-type]
    ran.run.context = replace(ran.run.context, deleter=deleter)
    execute(ran.run)
    due = {
        (i["kind"], i["name"]) for i in ran.items() if i["action"] in ("deleted", "would-delete")
    }
    kinds = {kind for kind, _ in due}
    assert {"ConfigMap", "ResourceBinding", "HTTPRoute"} <= kinds  # each sweep had its orphans
    if not enforced:
        assert sent.deletes == []
        assert all(i["action"] != "deleted" for i in ran.items())
    else:
        assert {name for name, _, _ in sent.deletes} == {name for _, name in due}
        assert all(uid and rv for _, uid, rv in sent.deletes)


@pytest.mark.parametrize("declared", SWEEPS, ids=lambda d: d.__name__)
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    minutes=st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=4),
    bound=st.sampled_from([timedelta(seconds=5), timedelta(minutes=15)]),
    marked=st.booleans(),
)
def test_a_deletion_gcjob_made_and_stalled_is_said_for_each_declared_sweep(
    tiny: Path,
    declared: type[Declaration[Any, Any]],
    minutes: list[int],
    bound: timedelta,
    marked: bool,
) -> None:
    """Whatever a declared sweep's judgement of an object being deleted (`terminating`), the
    driver says `deletion-stalled` of one gcjob marked (bound to it) and deleted longer than
    --deletion-stalled-after ago, naming its finalizers; any other stays `terminating`."""
    sweep = declared.sweep
    ran = snapshot_run(sweep, directory=tiny)
    ran.run.context = replace(
        ran.run.context,
        settings=replace(ran.run.settings, deletion_stalled_after=bound),
    )
    now = ran.run.now
    verdicts = []
    for index, waited in enumerate(minutes):
        uid = f"u{index}"
        at = ref(
            "ConfigMap", f"obj-{index}", uid=uid, created=now - timedelta(hours=2), terminating=True
        )
        evidence = companion_evidence('["default/web"]').on(uid)
        mark = new_mark(evidence, "orphaned", now - timedelta(hours=1)) if marked else None
        deleting = Deletion(now - timedelta(minutes=waited), ("example.com/tenant",))
        at = replace(at, mark=mark, deletion=deleting)
        verdicts.append(Verdict(at, False, Reason.TERMINATING, "already being deleted"))
    as_sweep = type(f"As{declared.__name__}", (Toy,), {"sweep": sweep, "rule": declared.rule})
    toy = as_sweep(ran.run, [Counted(len(verdicts), len(verdicts)), Judged(verdicts, _ref)])
    drive(ran.run, toy)

    said = ran.outcomes()
    for verdict, waited in zip(verdicts, minutes, strict=True):
        stalled = marked and timedelta(minutes=waited) > bound
        expected = ("skipped", "deletion-stalled" if stalled else "terminating")
        assert said[("ConfigMap", verdict.ref.namespace, verdict.ref.name)] == expected
    assert toy.deleted == [] and toy.marked == []
