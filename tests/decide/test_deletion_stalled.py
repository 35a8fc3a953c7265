"""gcjob/decide/common.py `deletion_stalled` (issue 47): an object gcjob deleted, still
Terminating past --deletion-stalled-after, is said to be stalled; judged on the hub's `now`."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from gcjob.decide.common import deletion_stalled
from gcjob.marks import companion_evidence, new_mark
from gcjob.model import Deletion, Mark, ObjectRef
from testbed.model import NOW, OLD, ref

AFTER = timedelta(minutes=15)
KARMADA = "karmada.io/binding-controller"


def deleted_by_gcjob(since_deleted: timedelta, mark: Mark | None = None) -> ObjectRef:
    """An object gcjob marked (bound to its uid) and deleted `since_deleted` before NOW."""
    at = ref(uid="uid-1", terminating=True)
    if mark is None:
        evidence = companion_evidence('["default/web"]').on("uid-1")
        mark = new_mark(evidence, "orphaned", OLD + timedelta(minutes=1))
    return replace(at, mark=mark, deletion=Deletion(NOW - since_deleted, (KARMADA, "orphan")))


def test_a_deletion_gcjob_made_terminating_past_the_bound_is_stalled() -> None:
    why = deletion_stalled(deleted_by_gcjob(timedelta(minutes=16)), NOW, AFTER)
    assert why is not None
    assert f"[{KARMADA}, orphan]" in why and "960s" in why and "900s" in why


@pytest.mark.parametrize(
    "at",
    [
        deleted_by_gcjob(timedelta(minutes=15)),  # not more than the bound
        deleted_by_gcjob(timedelta(minutes=1)),
        replace(deleted_by_gcjob(timedelta(hours=1)), mark=None),  # no mark: not proven gcjob's
        deleted_by_gcjob(timedelta(hours=1), Mark(label="true", since="x", evidence="y")),  # void
        replace(deleted_by_gcjob(timedelta(hours=1)), deletion=Deletion(None)),  # no time
        replace(deleted_by_gcjob(timedelta(hours=1)), terminating=False, deletion=None),
    ],
)
def test_anything_else_is_not_stalled(at: ObjectRef) -> None:
    assert deletion_stalled(at, NOW, AFTER) is None


def test_the_mark_must_be_bound_to_this_very_object() -> None:
    copied = replace(deleted_by_gcjob(timedelta(hours=1)), uid="uid-other")
    assert deletion_stalled(copied, NOW, AFTER) is None
