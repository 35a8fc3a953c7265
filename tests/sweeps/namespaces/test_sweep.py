"""The namespaces sweep's batch run: which candidates it holds back before any upstream read
(terminating, young, protected: kept whatever upstream says, so they name no project into the
trust rule), as every sweep does. Its runs on the real hub: tests/e2e/test_namespaces_e2e.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gcjob.model import HubNamespace, ObjectRef
from gcjob.sweeps.namespaces.sweep import held_back

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
MIN_AGE = timedelta(minutes=5)


def _namespace(
    created: datetime, terminating: bool = False, protect: tuple[tuple[str, str], ...] = ()
) -> HubNamespace:
    name = "ns-0f8b1a2c-3d4e-4f50-8a6b-7c8d9e0f1a2b"
    ref = ObjectRef("v1", "Namespace", "", name, "u-1", "7", created, terminating)
    return HubNamespace(ref, {}, (), protect)


def test_an_old_namespace_is_not_held_back() -> None:
    assert not held_back(_namespace(NOW - timedelta(hours=1)), NOW, MIN_AGE)


@pytest.mark.parametrize(
    "namespace",
    [
        _namespace(NOW - timedelta(minutes=1)),  # young
        _namespace(NOW - timedelta(hours=1), terminating=True),
        _namespace(NOW - timedelta(hours=1), protect=(("annotation", "true"),)),
        _namespace(NOW + timedelta(hours=1)),  # created after now: a clock to doubt
    ],
    ids=["young", "terminating", "protected", "from-the-future"],
)
def test_young_terminating_and_protected_are_held_back(namespace: HubNamespace) -> None:
    assert held_back(namespace, NOW, MIN_AGE)
