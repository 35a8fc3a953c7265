"""Issue 20 item 5: nothing in one object's content ends a run.

An unexpected error while deciding, acting on or reporting one object keeps that object
(`skipped`, `internal-error`, the error in one redacted line); the run goes on and exits 3,
never 70. Failures are injected into the real rule and act functions of a whole `--snapshot`
run of the demo hub. Generated objects go through the same whole run in
tests/e2e/test_boundary_e2e.py (a run per example: slow for the unit tests); their strategies are
here.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import strategies as st

from gcjob import marks
from gcjob.cli import cli
from gcjob.domain import (
    COMPANION_LABEL,
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    PROTECT_ANNOTATION,
    REFERRERS_ANNOTATION,
)
from gcjob.model import Companion, Verdict
from gcjob.sweeps.companions.judge import CompanionJudgement
from testbed.report import sweep_snapshot

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
WEB = "ns-4b1f7c2a-9e3d-4a6b-8c1d-2e5f6a7b8c9d"
SHOP = "ns-c7e2a9d4-1b3f-4e8a-a6d2-5f9b0c1e3a7d"
SECRET_TOKEN = "Bearer s3cr3t-t0ken"


def _sweep(snapshot: Path, report: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    run = sweep_snapshot(snapshot, report, *extra)
    return run.exit_code, run.report


def _items(report: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [i for i in report["items"] if i["name"] == name]


def _boom(*_: object) -> None:
    # A message that must come out redacted and on one line.
    raise ZeroDivisionError(f"one object's bad luck\nAuthorization: {SECRET_TOKEN}")


def test_a_rule_that_raises_for_one_companion_keeps_it_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gcjob.sweeps.companions import sweep as companions

    real = companions.judge_companion

    def judge(companion: Companion, *args: Any) -> CompanionJudgement:
        if companion.ref.name == "orphan-app-config":
            _boom()
        return real(companion, *args)

    monkeypatch.setattr(companions, "judge_companion", judge)
    code, report = _sweep(DEMO, tmp_path / "r.json", "--grace", "0")
    assert code == 3
    summary = report["summary"]
    assert summary["exit_code"] == 3
    [kept] = _items(report, "orphan-app-config")
    assert (kept["action"], kept["reason"]) == ("skipped", "internal-error")
    assert "ZeroDivisionError: one object's bad luck" in kept["detail"]
    assert "\n" not in kept["detail"] and "s3cr3t" not in kept["detail"]
    assert "Bearer ***" in kept["detail"]
    # Its neighbours were decided as ever, and the other sweeps ran.
    [other] = [i for i in _items(report, "orphan-db-creds") if i["kind"] == "Secret"]
    assert other["action"] == "would-delete"
    assert summary["sweeps"]["companions"]["status"] == "incomplete"
    assert "1 object kept on an internal error" in summary["sweeps"]["companions"]["detail"]
    assert summary["sweeps"]["bindings"]["status"] == "completed"
    assert summary["sweeps"]["routes"]["status"] == "completed"
    # Its binding is not deleted without it: the companion still exists for the bindings sweep.
    assert not [
        i
        for i in _items(report, "orphan-app-config-configmap")
        if i["action"] in ("would-delete", "deleted")
    ]


def test_a_grace_rule_that_raises_for_one_object_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gcjob.decide import grace

    real = grace.grace_rule

    def rule(rule_: Any, evidence: Any, mark: Any, now: Any, grace_: Any) -> Any:
        if (
            evidence is not None
            and evidence.digest == marks.companion_evidence('["shop/web-dfw"]').digest
        ):
            raise OverflowError("date value out of range")
        return real(rule_, evidence, mark, now, grace_)

    monkeypatch.setattr(grace, "grace_rule", rule)
    code, report = _sweep(DEMO, tmp_path / "r.json", "--grace", "1h")
    assert code == 3
    [kept] = _items(report, "orphan-app-config")
    assert (kept["action"], kept["reason"]) == ("skipped", "internal-error")
    assert "OverflowError: date value out of range" in kept["detail"]
    assert [i["action"] for i in _items(report, "orphan-db-creds") if i["kind"] == "Secret"] == [
        "would-mark"
    ]


def test_an_act_that_raises_for_one_route_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gcjob.sweeps.routes import sweep as routes

    real = routes.delete_route
    seen: list[str] = []

    def delete(verdict: Verdict, *args: Any, **kwargs: Any) -> Any:
        seen.append(verdict.ref.name)
        if len(seen) == 1:
            _boom()
        return real(verdict, *args, **kwargs)

    monkeypatch.setattr(routes, "delete_route", delete)
    code, report = _sweep(DEMO, tmp_path / "r.json", "--grace", "0")
    assert code == 3
    assert len(seen) >= 2, "the demo has more than one orphaned route"
    [first] = [i for i in _items(report, seen[0]) if i["kind"] == "HTTPRoute"]
    assert first["reason"] == "internal-error"
    assert all(
        i["action"] == "would-delete"
        for name in seen[1:]
        for i in _items(report, name)
        if i["kind"] == "HTTPRoute"
    )
    assert report["summary"]["sweeps"]["routes"]["status"] == "incomplete"


def test_a_record_that_cannot_be_formatted_is_still_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gcjob.report import emitter

    real = emitter.item_record

    def record(outcome: Any, *args: Any) -> Any:
        if outcome.ref.name == "orphan-app-config":
            raise OverflowError("date value out of range")
        return real(outcome, *args)

    monkeypatch.setattr(emitter, "item_record", record)
    code, report = _sweep(DEMO, tmp_path / "r.json", "--grace", "0")
    assert code == 0  # what happened to it is reported: only some fields are missing
    [item] = _items(report, "orphan-app-config")
    assert (item["action"], item["reason"]) == ("would-delete", "orphaned")
    assert "not every field could be written: OverflowError" in item["detail"]


def test_explain_on_an_object_that_raises_is_one_line_and_exit_3(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gcjob.sweeps.companions import judge

    monkeypatch.setattr(judge, "companion_verdict", _boom)
    args = ["explain", f"cm/{SHOP}/orphan-app-config", "--snapshot", str(DEMO)]
    result = CliRunner().invoke(cli, args, standalone_mode=False, catch_exceptions=False)
    assert result.return_value == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gcjob: error: cannot explain")
    assert "ZeroDivisionError" in lines[0] and "s3cr3t" not in lines[0]


def with_configmaps(tmp_path: Path, extra: list[dict[str, Any]]) -> Path:
    snapshot = tmp_path / "snap"
    if snapshot.exists():
        shutil.rmtree(snapshot)
    shutil.copytree(DEMO, snapshot)
    path = snapshot / "hub" / "configmaps.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["items"] = [*document["items"], *extra]
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return snapshot


def test_a_mark_at_the_end_of_time_does_not_end_the_run(tmp_path: Path) -> None:
    """The issue's own input: one orphan, its evidence, since 9999-12-31T23:59:59Z."""
    referrers = '["shop/gone-dfw"]'
    evidence = marks.companion_evidence(referrers).digest
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "end-of-time",
            "namespace": SHOP,
            "uid": "0e7d1c1a-0000-4000-8000-000000000001",
            "resourceVersion": "1",
            "creationTimestamp": "2026-11-01T00:00:00Z",
            "labels": {COMPANION_LABEL: "true", ORPHANED_LABEL: "true"},
            "annotations": {
                REFERRERS_ANNOTATION: referrers,
                ORPHANED_SINCE_ANNOTATION: "9999-12-31T23:59:59Z",
                ORPHANED_REASON_ANNOTATION: "orphaned",
                ORPHANED_EVIDENCE_ANNOTATION: evidence,
            },
        },
    }
    snapshot = with_configmaps(tmp_path, [cm])
    for grace in ("1h", "0"):
        code, report = _sweep(snapshot, tmp_path / "r.json", "--grace", grace)
        assert code != 70, report["summary"]["exit_reason"]
        assert all(s["status"] != "not-run" for s in report["summary"]["sweeps"].values())
        [item] = _items(report, "end-of-time")
        if grace != "0":
            assert item["action"] not in ("would-delete", "deleted")


# -- generated objects through a whole --snapshot run ------------------------------------------

TEXT = st.text(st.characters(codec="utf-8"), max_size=30)
KEYS = st.sampled_from(
    [
        COMPANION_LABEL,
        REFERRERS_ANNOTATION,
        PROTECT_ANNOTATION,
        ORPHANED_LABEL,
        ORPHANED_SINCE_ANNOTATION,
        ORPHANED_REASON_ANNOTATION,
        ORPHANED_EVIDENCE_ANNOTATION,
    ]
)
TIMES = st.one_of(
    TEXT,
    st.datetimes().map(lambda d: d.isoformat()),
    st.sampled_from(
        [
            "9999-12-31T23:59:59Z",
            "9999-12-31T23:59:59-23:59",
            "0001-01-01T00:00:00+01:00",
            "2026-11-23 18:00:00+00:00",
            "2026-W47-1T00:00:00Z",
            "2099-01-01T00:00:00Z",
        ]
    ),
)
VALUES = st.one_of(
    TEXT,
    TIMES,
    st.sampled_from(['["shop/web-dfw"]', '["default/legacy-dfw"]', "true", "false", "[]"]),
    st.integers(),
    st.none(),
    st.lists(TEXT, max_size=2),
    st.dictionaries(TEXT, TEXT, max_size=2),
)
NAMES = st.from_regex(r"\A[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?\Z").filter(lambda n: ".." not in n)


@st.composite
def companions(draw: st.DrawFn) -> dict[str, Any]:
    labels: dict[str, Any] = {COMPANION_LABEL: "true"}
    annotations: dict[str, Any] = draw(st.dictionaries(KEYS, VALUES, max_size=6))
    labels.update(draw(st.dictionaries(KEYS, VALUES, max_size=2)))
    labels[COMPANION_LABEL] = "true"  # listed by the sweep's label selector
    metadata: dict[str, Any] = {
        "namespace": draw(st.sampled_from([WEB, SHOP])),
        "labels": labels,
        "annotations": annotations,
        "uid": draw(st.one_of(st.uuids().map(str), TEXT, st.none())),
        "resourceVersion": draw(st.one_of(st.integers(0, 10**9).map(str), TEXT, st.none())),
        "creationTimestamp": draw(TIMES),
    }
    if draw(st.booleans()):
        metadata["deletionTimestamp"] = draw(TIMES)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


def test_an_error_after_a_companion_was_acted_on_is_its_bindings_not_the_companions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A companion deleted (or marked) stays reported as such: the error that came after, on
    its binding, keeps the binding alone."""
    from gcjob.sweeps.companions import act as companions

    monkeypatch.setattr(companions, "companion_binding", _boom)
    for grace, done in (("0", "would-delete"), ("1h", "would-mark")):
        code, report = _sweep(DEMO, tmp_path / "r.json", "--grace", grace)
        assert code == 3
        [cm] = [i for i in _items(report, "orphan-app-config") if i["kind"] == "ConfigMap"]
        assert cm["action"] == done
        [rb] = _items(report, "orphan-app-config-configmap")
        assert (rb["action"], rb["reason"]) == ("skipped", "internal-error")
