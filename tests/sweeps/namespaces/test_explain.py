"""`gcjob explain ns/NAME` runs the sweep's judgement on one namespace. On the demo, a deleted
project's hub namespace is proven a leftover, but a snapshot cannot say what it holds (no
discovery of every namespaced kind): explain says so and proves nothing (exit 3), never
`would-delete`. On the real hub: tests/e2e/test_namespaces_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from gcjob.cli import cli

DEMO = Path(__file__).resolve().parents[3] / "fixtures" / "demo"
LEFTOVER = "ns-6b8d0f2a-4c6e-4b8d-a0f2-4c6e8b0d2f4a"  # proj-gone's default namespace


def test_a_leftover_whose_contents_are_unknown_is_not_said_to_go() -> None:
    argv = ["explain", f"ns/{LEFTOVER}", "--snapshot", str(DEMO), "--output", "json"]
    result = CliRunner().invoke(cli, argv, standalone_mode=False)

    assert result.return_value == 3, result.output
    said = json.loads(result.stdout)
    assert said["target"]["sweep"] == "namespaces"
    steps = {s["rule"]: s for s in said["steps"]}
    assert steps["candidate"]["outcome"] == "passed"
    assert "proj-gone not found by the Project API" in steps["owner-lookup"]["evidence"]
    assert steps["holds-nothing"]["outcome"] == "unknown"
    assert "no discovery" in steps["holds-nothing"]["evidence"]
    assert (said["verdict"]["action"], said["verdict"]["reason"]) == ("unknown", "lookup-failed")
