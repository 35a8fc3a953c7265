"""gcjob/sweeps/bindings/explain.py: for each binding the bindings sweep reported in the demo,
explain reaches the same conclusion, detail and all (its object read by name)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gcjob.model import Sweep
from testbed.runs import explained_as_swept


@pytest.mark.parametrize("grace", [timedelta(0), timedelta(minutes=10)])
def test_explain_says_what_the_bindings_sweep_reported(grace: timedelta) -> None:
    pairs = explained_as_swept((Sweep.COMPANIONS, Sweep.BINDINGS), Sweep.BINDINGS, grace)
    assert len(pairs) == 4
    for item, explained in pairs:
        assert explained.verdict is not None and explained.sweep is Sweep.BINDINGS
        said = (explained.verdict.action, explained.verdict.reason, explained.verdict.detail)
        assert said == (item["action"], item["reason"], item["detail"]), item["name"]
        assert explained.binding is None
        # Its object is read by name, and found absent, as the sweep's own read found it.
        rules = [step.step.rule for step in explained.steps]
        assert rules[:4] == ["object", "in-scope", "object-absent", "resource-matches"]
