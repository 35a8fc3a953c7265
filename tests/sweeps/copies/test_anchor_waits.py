"""An anchor goes last, with the last of its copies: generated grace calls of a group (issue 30
audit; docs/rules.md "The group goes whole")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from gcjob import marks
from gcjob.decide.grace import GraceCall, Next, grace_call
from gcjob.decide.trace import Trace
from gcjob.marks import Rule, copy_evidence
from gcjob.model import Mark, ObjectRef, OwnerRef, Replica, UpstreamOwner, Verdict
from gcjob.reasons import Reason
from gcjob.sweeps.copies.judge import Member, anchor_waits, last_due, plan_group, understand
from testbed.milo import NET, labels

NOW = datetime(2026, 11, 26, 1, 0, tzinfo=UTC)
GRACE = timedelta(hours=1)
ORPHAN_CALLS = (Next.DELETE, Next.MARK, Next.WAIT)


@st.composite
def calls(draw: st.DrawFn) -> GraceCall:
    """An orphan's grace call: due now (its mark at least GRACE old), new, or waiting."""
    step = draw(st.sampled_from(ORPHAN_CALLS))
    if step is Next.DELETE:
        since = NOW - GRACE - timedelta(seconds=draw(st.integers(0, 10**6)))
    elif step is Next.MARK:
        since = NOW
    else:
        since = NOW - timedelta(seconds=draw(st.integers(0, int(GRACE.total_seconds()) - 1)))
    return GraceCall(step, "orphaned", since, since + GRACE)


@given(copies=st.lists(calls(), max_size=6), anchor=calls())
def test_an_anchor_is_due_only_with_every_copy_it_owns_and_waits_as_long_as_the_last(
    copies: list[GraceCall], anchor: GraceCall
) -> None:
    pending = None
    for copy in copies:
        pending = last_due(pending, copy, NOW, GRACE)
    called = anchor_waits(anchor, pending)

    waiting = [c for c in copies if c.next is not Next.DELETE]
    if called.next is Next.DELETE:
        assert not waiting and anchor.next is Next.DELETE
    if anchor.next is Next.DELETE and waiting:
        assert called.next is Next.WAIT and "waits for a copy it owns" in called.detail
        assert called.since == anchor.since  # its mark's time stays: it is not marked again
        assert called.due is not None and all(c.due and called.due >= c.due for c in waiting)
    if anchor.next is not Next.DELETE:
        assert called == anchor  # a new or waiting anchor is the grace rule's alone


# -- the group as the sweep and explain both plan it (judge.py plan_group) --------------------

U1 = "0b6a2c1e-1111-4222-8333-944455556666"
OWNER = UpstreamOwner("proj-a", NET, "Connector", "app", "web")


def _member(kind: str, name: str, uid: str, mark_since: datetime | None) -> Member:
    anchors = (U1,)
    mark = None
    if mark_since is not None:
        digest = copy_evidence(OWNER, anchors).on(uid).digest
        mark = Mark("true", marks.since_value(mark_since), "project-gone", digest)
    group = NET if kind == "Connector" else ""
    api_version = f"{group}/v1alpha1" if group else "v1"
    created = NOW - 3 * GRACE
    ref = ObjectRef(api_version, kind, "ns", name, uid, "1", created, mark=mark)
    owners = (OwnerRef("v1", "ConfigMap", f"anchor-{U1}", True),) if kind == "Connector" else ()
    replica = Replica(ref, group, labels("proj-a", NET, "Connector", "app", "web"), owners)
    member = understand(replica)  # as the sweep and explain read it
    assert isinstance(member, Member) and member.owner == OWNER, member
    return member


@given(
    copy_marked=st.sampled_from([None, NOW, NOW - GRACE / 2, NOW - 2 * GRACE]),
    anchor_marked=st.sampled_from([None, NOW, NOW - GRACE / 2, NOW - 2 * GRACE]),
    stays=st.booleans(),
)
def test_the_group_is_planned_copies_first_the_anchor_waiting_for_them_or_kept(
    copy_marked: datetime | None, anchor_marked: datetime | None, stays: bool
) -> None:
    copy = _member("Connector", "web", "c-1", copy_marked)
    anchor = _member("ConfigMap", f"anchor-{U1}", U1, anchor_marked)
    verdicts = [
        Verdict(m.ref, True, Reason.PROJECT_GONE, "project proj-a is gone") for m in (copy, anchor)
    ]
    trace = Trace()

    planned = plan_group([anchor, copy], verdicts, lambda uid: stays, NOW, GRACE, {U1: trace})

    assert [p.member for p in planned] == [copy, anchor]  # in the verdicts' order
    copy_call, anchor_call = (p.call for p in planned)
    assert copy_call is not None
    anchor_plan = planned[1]
    if stays:  # named by what stays: kept, whatever its mark
        assert (anchor_plan.verdict.delete, anchor_plan.verdict.reason) == (
            False,
            Reason.ANCHOR_OWNS_KEPT_COPY,
        )
        return
    assert anchor_call is not None
    own = grace_call(Rule.COPY, verdicts[1], copy_evidence(OWNER, (U1,)), NOW, GRACE)
    assert own is not None
    waits = own.next is Next.DELETE and copy_call.next is not Next.DELETE
    assert anchor_call.next is (Next.WAIT if waits else own.next)
    assert any(s.rule == "copies-grace" for s in trace.steps) is waits  # explain says why


def test_a_due_anchor_waits_for_its_new_copy_in_the_plan() -> None:
    """The case explain used to miss: the anchor's mark is due, its copy's is new."""
    copy = _member("Connector", "web", "c-1", None)
    anchor = _member("ConfigMap", f"anchor-{U1}", U1, NOW - 2 * GRACE)
    gone = "project proj-a is gone"
    verdicts = [Verdict(m.ref, True, Reason.PROJECT_GONE, gone) for m in (copy, anchor)]

    planned = plan_group([copy, anchor], verdicts, lambda uid: False, NOW, GRACE)

    assert [p.call.next for p in planned if p.call] == [Next.MARK, Next.WAIT]
