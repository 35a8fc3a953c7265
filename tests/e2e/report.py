"""Reading a run's stdout report in the end-to-end tests (beside conftest's Result)."""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import Result


def upstreams(result: Result) -> dict[str, dict[str, Any]]:
    """The run's upstream records by cluster; each cluster is reported once."""
    records = [r for r in result.records if r["record"] == "upstream"]
    by_cluster = {r["cluster"]: r for r in records}
    assert len(by_cluster) == len(records), "a cluster reported twice"
    return by_cluster
