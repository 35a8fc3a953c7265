"""One run of the sweeps in-process over a snapshot (the demo's, by default), as the lifecycle
makes one: for the tests of one sweep's module, which call that sweep's entry directly."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from gcjob.act.deleter import Deleter
from gcjob.act.mark_writer import Marker
from gcjob.act.writes import Writes
from gcjob.budget import RunBudget
from gcjob.decide.explanation import Explanation, Target
from gcjob.explain import Explainer
from gcjob.kube.snapshot import Snapshot, SnapshotUpstreams
from gcjob.kube.transport import RequestStats
from gcjob.model import Sweep
from gcjob.report.emitter import Reporter
from gcjob.run import Run, RunContext, SweepState
from gcjob.settings import Settings
from gcjob.times import HubClock

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo"


@dataclass
class SnapshotRun:
    run: Run
    out: io.StringIO

    def items(self) -> list[dict[str, Any]]:
        records = [json.loads(line) for line in self.out.getvalue().splitlines()]
        return [r for r in records if r["record"] == "item"]

    def outcomes(self) -> dict[tuple[str, str, str], tuple[str, str]]:
        """(kind, namespace, name) -> (action, reason), every item reported."""
        return {
            (i["kind"], i["namespace"], i["name"]): (i["action"], i["reason"]) for i in self.items()
        }


def snapshot_run(
    *sweeps: Sweep, directory: Path = DEMO, grace: timedelta = timedelta(0), **settings: Any
) -> SnapshotRun:
    """A dry run over the snapshot in `directory`, its marks applied to the loaded objects as a
    --snapshot run applies them; `sweeps` are started (their state set), not run."""
    snapshot = Snapshot(str(directory))
    config = Settings(grace=grace, sweeps=sweeps, **settings)
    budget = RunBudget(None)
    out = io.StringIO()
    reporter = Reporter(
        run_id="r",
        dry_run=True,
        log_format="json",
        report_healthy=config.report_healthy,
        report_file=None,
        stream=out,
    )
    writes = Writes(budget, qps=0, max_writes=config.max_writes)
    context = RunContext(
        config,
        snapshot.hub,
        Deleter(None, dry_run=True, budget=budget, writes=writes),
        reporter,
        budget,
        RequestStats(),
        SnapshotUpstreams(snapshot.upstreams),
        "r",
        Marker(
            snapshot.hub, dry_run=True, budget=budget, writes=writes, max_marks=config.max_marks
        ),
    )
    assert snapshot.captured_at is not None
    run = Run(context, HubClock(snapshot.captured_at))
    for sweep in sweeps:
        run.tally.sweeps[sweep] = SweepState()
    return SnapshotRun(run, out)


def explainer(directory: Path = DEMO, grace: timedelta = timedelta(0)) -> Explainer:
    """`gcjob explain`'s driver over the same snapshot, with the settings snapshot_run uses."""
    snapshot = Snapshot(str(directory))
    config = Settings(grace=grace)
    assert snapshot.captured_at is not None
    return Explainer(
        snapshot.hub,
        SnapshotUpstreams(snapshot.upstreams),
        HubClock(snapshot.captured_at),
        config.min_age,
        grace=grace,
        suspect_min_routes=config.suspect_min_routes,
        settings=config,
    )


def explained_as_swept(
    sweeps: tuple[Sweep, ...], only: Sweep, grace: timedelta
) -> list[tuple[dict[str, Any], Explanation]]:
    """Every item `only` reported in a run of `sweeps` over the demo, each with what
    `gcjob explain` says of that object: the pairs to hold to one another."""
    from gcjob.sweeps import execute  # the sweeps' order, as the lifecycle runs them

    ran = snapshot_run(*sweeps, grace=grace)
    execute(ran.run)
    ex = explainer(grace=grace)
    return [
        (item, ex.explain(Target(item["kind"], item["namespace"], item["name"])))
        for item in ran.items()
        if item["sweep"] == only.value
    ]
