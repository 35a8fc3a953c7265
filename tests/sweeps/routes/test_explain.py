"""gcjob/sweeps/routes/explain.py: for each route the routes sweep reported in the demo, explain
reaches the same conclusion, detail and all, reading the same upstream clusters by name."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gcjob.model import Sweep
from testbed.runs import explained_as_swept


@pytest.mark.parametrize("grace", [timedelta(0), timedelta(minutes=10)])
def test_explain_says_what_the_routes_sweep_reported(grace: timedelta) -> None:
    pairs = explained_as_swept((Sweep.ROUTES,), Sweep.ROUTES, grace)
    assert len(pairs) == 13
    for item, explained in pairs:
        assert explained.verdict is not None and explained.sweep is Sweep.ROUTES
        said = (explained.verdict.action, explained.verdict.reason, explained.verdict.detail)
        assert said == (item["action"], item["reason"], item["detail"]), item["name"]
        assert explained.known
