"""An anchor goes last, with the last of its copies: generated grace calls of a group (issue 30
audit; docs/rules.md "The group goes whole")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from gcjob.decide.grace import GraceCall, Next
from gcjob.sweeps.copies.judge import anchor_waits, last_due

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
