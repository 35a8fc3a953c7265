"""gcjob/sweeps/companions/explain.py: explain reaches the sweep's very conclusion for each
companion of the demo (action, reason and detail, as a dry run reports them: one plan), and
says what the sweep does to its binding."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gcjob.model import Sweep
from testbed.runs import explained_as_swept

ALL = (Sweep.COMPANIONS, Sweep.BINDINGS, Sweep.ROUTES)


@pytest.mark.parametrize("grace", [timedelta(0), timedelta(minutes=10)])
def test_explain_says_what_the_sweep_reported_of_each_companion_and_its_binding(
    grace: timedelta,
) -> None:
    pairs = explained_as_swept(ALL, Sweep.COMPANIONS, grace)
    companions = [(i, e) for i, e in pairs if i["kind"] in ("ConfigMap", "Secret")]
    assert len(companions) == 17
    swept = {(i["kind"], i["name"]): i for i, _ in pairs}
    for item, explained in companions:
        assert explained.verdict is not None and explained.sweep is Sweep.COMPANIONS
        said = (explained.verdict.action, explained.verdict.reason, explained.verdict.detail)
        assert said == (item["action"], item["reason"], item["detail"]), item["name"]
        binding = explained.binding
        if binding is not None and ("ResourceBinding", binding.subject.rpartition("/")[2]) in swept:
            reported = swept[("ResourceBinding", binding.subject.rpartition("/")[2])]
            assert (binding.action, binding.reason, binding.detail) == (
                reported["action"],
                reported["reason"],
                reported["detail"],
            ), binding.subject
    # The companions' bindings the sweep reported are explained as that sweep's too.
    bindings = [(i, e) for i, e in pairs if i["kind"] == "ResourceBinding"]
    assert bindings
    for item, explained in bindings:
        assert explained.verdict is not None
        assert (explained.verdict.action, explained.verdict.reason) == (
            item["action"],
            item["reason"],
        )
