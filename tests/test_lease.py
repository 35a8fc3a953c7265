"""gcjob/lease.py: who holds the hub Lease, and when it has expired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gcjob.lease import holder_of

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def lease(holder: str | None, renewed: datetime | None, seconds: int | None) -> dict:
    spec: dict = {"holderIdentity": holder}
    if renewed is not None:
        spec["renewTime"] = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if seconds is not None:
        spec["leaseDurationSeconds"] = seconds
    return {"spec": spec}


def test_a_free_lease_has_no_holder() -> None:
    assert holder_of(lease(None, NOW, 60), NOW) is None
    assert holder_of(lease("", NOW, 60), NOW) is None
    assert holder_of({}, NOW) is None


def test_a_renewed_lease_is_held() -> None:
    assert holder_of(lease("pod/run", NOW - timedelta(seconds=30), 60), NOW) == "pod/run"


def test_an_expired_lease_is_free() -> None:
    assert holder_of(lease("pod/run", NOW - timedelta(seconds=61), 60), NOW) is None


def test_a_lease_whose_expiry_cannot_be_told_is_respected() -> None:
    assert holder_of(lease("pod/run", None, 60), NOW) == "pod/run"
    assert holder_of(lease("pod/run", NOW - timedelta(days=1), None), NOW) == "pod/run"
