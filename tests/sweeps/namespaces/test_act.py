"""The namespaces sweep's writes: none (report-only by design). Whatever the driver hands it,
a leftover is said `would-delete` and nothing reaches the deleter; a mark, an unmark and a
wait write nothing and say so. (On the real hub, no DELETE or PATCH is ever sent:
tests/e2e/test_namespaces_e2e.py.)"""

from __future__ import annotations

from datetime import UTC, datetime
from unittest import mock

from gcjob.act.deleter import Deleter
from gcjob.decide.grace import GraceCall, Graced, Next
from gcjob.kube.resources import NAMESPACES
from gcjob.model import Action, ObjectRef, Verdict
from gcjob.reasons import Reason
from gcjob.sweeps.namespaces.act import NO_MARK, WRITES
from gcjob.sweeps.namespaces.sweep import Namespaces

REF = ObjectRef(
    "v1",
    "Namespace",
    "",
    "ns-0f8b1a2c-3d4e-4f50-8a6b-7c8d9e0f1a2b",
    "uid-1",
    "7",
    datetime(2026, 11, 1, tzinfo=UTC),
)


def _graced() -> Graced[object]:
    verdict = Verdict(REF, True, Reason.PROJECT_GONE, "project proj gone; holds nothing")
    return Graced(verdict, GraceCall(Next.DELETE, NO_MARK), None, NAMESPACES)


def test_it_declares_no_write() -> None:
    assert WRITES == ()


def test_a_leftover_is_said_would_delete_and_the_deleter_is_never_called() -> None:
    deleter = mock.create_autospec(Deleter, instance=True)
    sweep = Namespaces.__new__(Namespaces)  # its writes read nothing of the run

    [outcome] = sweep.delete(_graced(), deleter)

    assert outcome.action is Action.WOULD_DELETE
    assert outcome.reason is Reason.PROJECT_GONE
    assert deleter.mock_calls == []


def test_mark_unmark_and_wait_write_nothing_and_say_so() -> None:
    sweep = Namespaces.__new__(Namespaces)
    for write in (sweep.mark, sweep.unmark, sweep.wait):
        [outcome] = write(_graced())
        assert outcome.action is Action.SKIPPED
        assert outcome.detail == NO_MARK
