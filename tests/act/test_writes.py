"""Issue 20 items 6 and 18: every write paced by one limiter and counted against a named brake.

The limiter and the brake are plain (a fake clock); the brakes in a whole run go through the
demo snapshot (a dry run counts what it would send) and through a Run whose marker writes to
the loaded objects as a `--delete` run would (exit 4, each brake named).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gcjob.act.deleter import Deleter
from gcjob.act.mark_writer import Marker
from gcjob.act.writes import Writes
from gcjob.budget import RunBudget
from gcjob.cli import cli
from gcjob.exitcodes import DESCRIPTIONS, ExitCode
from gcjob.kube.snapshot import Snapshot, SnapshotUpstreams
from gcjob.kube.transport import RequestStats
from gcjob.model import Action, Sweep
from gcjob.report.emitter import Reporter
from gcjob.run import Run, RunContext
from gcjob.settings import Settings
from gcjob.sweeps import execute
from gcjob.times import HubClock
from testbed.report import sweep_snapshot

DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


def _writes(qps: float, max_writes: int) -> tuple[Writes, Clock]:
    clock = Clock()
    budget = RunBudget(None, clock=clock)
    return Writes(budget, qps=qps, max_writes=max_writes, clock=clock, sleep=clock.sleep), clock


def test_writes_sent_are_paced_and_the_brake_ends_them() -> None:
    writes, clock = _writes(qps=2, max_writes=5)
    assert [writes.take(send=True) for _ in range(5)] == [None] * 5
    assert clock.slept == pytest.approx(2.0)  # four gaps of 0.5 s
    refused = writes.take(send=True)
    assert refused.startswith("write brake: --max-writes 5 reached this run")
    assert writes.counted == 5  # a refused write is not counted
    assert clock.slept == pytest.approx(2.0)  # nor waited for


def test_a_dry_run_counts_what_it_would_send_and_waits_for_nothing() -> None:
    writes, clock = _writes(qps=1, max_writes=3)
    assert [writes.take(send=False) for _ in range(4)] == [None, None, None, writes.braked()]
    assert writes.counted == 3
    assert clock.slept == 0.0


def test_the_marker_and_the_deleter_share_one_limiter_and_one_brake() -> None:
    writes, clock = _writes(qps=4, max_writes=3)
    budget = writes.budget
    marker = Marker(None, dry_run=True, budget=budget, writes=writes)
    deleter = Deleter(None, dry_run=True, budget=budget, writes=writes)
    assert marker.writes is deleter.writes
    assert marker.marks_braked() is None and deleter.held(Sweep.ROUTES, _verdict()) is None
    for _ in range(3):
        writes.take(send=True)
    assert clock.slept == pytest.approx(0.5)
    held = deleter.held(Sweep.ROUTES, _verdict())
    assert held is not None
    assert (held.action, held.reason) == (Action.WOULD_DELETE, "brake")
    assert held.detail.startswith("write brake: --max-writes 3")
    assert marker.marks_braked() == held.detail


def _verdict() -> Any:
    from gcjob.model import ObjectRef, Verdict

    ref = ObjectRef("v1", "ConfigMap", "ns", "cm", "uid-1", "1", None)
    return Verdict(ref, True, "orphaned", "")


def _demo(tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    run = sweep_snapshot(DEMO, tmp_path / "r.json", "--grace", "10m", *extra)
    return run.exit_code, run.report


def test_the_write_brake_holds_back_every_write_past_it(tmp_path: Path) -> None:
    code, report = _demo(tmp_path, "--max-writes", "3")
    assert code == 0  # a dry run reports a brake and exits as usual
    summary = report["summary"]
    assert summary["writes"] == {"counted": 3, "max": 3}
    marked = [i for i in report["items"] if i["action"] == "would-mark" and i["reason"] != "brake"]
    assert len(marked) == 3
    assert sum(n for reasons in summary["marks"].values() for n in reasons.values()) == 3
    braked = [i for i in report["items"] if i["reason"] == "brake"]
    assert braked and all(
        i["detail"].startswith("write brake: --max-writes 3 reached this run") for i in braked
    )
    braked_sweeps = {i["sweep"] for i in braked}
    for sweep in braked_sweeps:
        assert summary["sweeps"][sweep]["status"] == "braked"
        assert "write brake: --max-writes 3" in summary["sweeps"][sweep]["detail"]


def test_binding_marks_count_as_marks(tmp_path: Path) -> None:
    """Companions alone (5) fit under --max-marks 6; with their bindings (up to 5 more) they
    do not: the companions sweep marks none of them, never 6 of its 9 (issue 46 item 11). The
    bindings and routes sweeps' 6 marks fit, and the report and summary count exactly those;
    the copies sweep's 2 (report-only, it marks too) would pass 6: it marks none."""
    code, report = _demo(tmp_path, "--max-marks", "6")
    assert code == 0
    summary = report["summary"]
    written = [i for i in report["items"] if i["action"] == "would-mark" and i["reason"] != "brake"]
    assert len(written) == 6 and {i["sweep"] for i in written} == {"bindings", "routes"}
    assert sum(n for reasons in summary["marks"].values() for n in reasons.values()) == 6
    assert summary["writes"]["counted"] == 6
    braked = [i for i in report["items"] if i["reason"] == "brake"]
    assert len(braked) == 7 and all(i["detail"].startswith("marks brake: ") for i in braked)
    assert Counter(i["sweep"] for i in braked) == {"companions": 5, "copies": 2}


def test_the_marks_brake_names_itself(tmp_path: Path) -> None:
    code, report = _demo(tmp_path, "--max-marks", "2")
    assert code == 0
    detail = report["summary"]["sweeps"]["companions"]["detail"]
    assert detail.startswith(
        "marks brake: 10 new marks of 5 new orphans (+0 earlier this run) exceed --max-marks 2"
    )
    assert "deleted" not in detail


def _deleting_run(**settings: Any) -> tuple[Run, list[dict[str, Any]]]:
    """The demo through a Run whose marks are written to the loaded objects, as a --delete
    run writes them to the hub (a grace period: nothing is due, nothing is deleted)."""
    snapshot = Snapshot(str(DEMO))
    config = Settings(delete=True, grace=timedelta(minutes=10), **settings)
    budget = RunBudget(None)
    out = io.StringIO()
    reporter = Reporter(
        run_id="r",
        dry_run=False,
        log_format="json",
        report_healthy=False,
        report_file=None,
        stream=out,
    )
    writes = Writes(budget, qps=0, max_writes=config.max_writes)
    assert snapshot.captured_at is not None
    context = RunContext(
        config,
        snapshot.hub,
        Deleter(None, dry_run=False, budget=budget, writes=writes),
        reporter,
        budget,
        RequestStats(),
        SnapshotUpstreams(snapshot.upstreams),
        "r",
        Marker(
            snapshot.hub, dry_run=False, budget=budget, writes=writes, max_marks=config.max_marks
        ),
    )
    run = Run(context, HubClock(snapshot.captured_at))
    execute(run)
    return run, [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"max_marks": 2}, "companions sweep: marks brake: 10 new marks of 5 new orphans"),
        (
            {"max_marks": 10},
            "bindings sweep: marks brake: 2 new marks (+9 earlier this run) exceed --max-marks 10",
        ),
        ({"max_writes": 4}, "companions sweep: write brake: --max-writes 4 reached"),
    ],
)
def test_a_deleting_run_held_back_by_a_brake_exits_4_naming_it(
    settings: dict[str, Any], named: str
) -> None:
    run, items = _deleting_run(**settings)
    code = run.exit_code()
    assert code is ExitCode.BRAKE
    summary = run.summary(code)
    assert summary["exit_reason"].startswith("safety brake engaged: " + named)
    assert "would have deleted" not in summary["exit_reason"]
    marked = [i for i in items if i["action"] == "marked"]
    assert sum(n for reasons in summary["marks"].values() for n in reasons.values()) == len(marked)
    assert summary["writes"]["counted"] == len(marked)  # nothing else was written


def test_the_exit_code_description_names_every_brake() -> None:
    text = DESCRIPTIONS[ExitCode.BRAKE]
    for brake in ("deletion brake", "marks brake (--max-marks)", "write brake (--max-writes)"):
        assert brake in text


@pytest.mark.parametrize(
    ("args", "env", "qps"),
    [
        (["--write-qps", "3"], {}, 3.0),
        (["--delete-qps", "4"], {}, 4.0),  # the old name still works
        ([], {"GCJOB_WRITE_QPS": "5"}, 5.0),
        ([], {"GCJOB_DELETE_QPS": "6"}, 6.0),
        ([], {}, 10.0),
    ],
)
def test_the_write_limit_keeps_its_old_name(
    monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str], qps: float
) -> None:
    import gcjob.lifecycle

    seen: list[Settings] = []
    monkeypatch.setattr(
        gcjob.lifecycle, "run_sweep", lambda settings, _budget: seen.append(settings) or 0
    )
    result = CliRunner().invoke(
        cli, ["sweep", "--snapshot", str(DEMO), *args], env=env, standalone_mode=False
    )
    assert result.exception is None, result.output
    [settings] = seen
    assert settings.write_qps == qps
    assert settings.max_writes == 1000
