"""cronjobs/monitoring/gcjob-alerts.yaml, with the real promtool: the rules load, and its unit
tests (cronjobs/monitoring/tests/gcjob-alerts-test.yaml) make each alert fire when it should
and stay quiet otherwise. Here too: those tests' input series are ones gcjob's pushes produce,
every alert has a test that fires it and a runbook section in docs/deploying.md, and the
Prometheus Operator's PrometheusRule carries the same groups. (A real Prometheus evaluating
them over a real Pushgateway: tests/e2e/test_alerts_e2e.py.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from gcjob.publish.metrics import registry_of
from testbed import servers
from testbed.prometheus import RULES, promtool

MONITORING = RULES.parent
RULE_TESTS = MONITORING / "tests" / "gcjob-alerts-test.yaml"
DEPLOYING = Path(__file__).parents[1] / "docs" / "deploying.md"
# Where every alert's runbook_url points unless an overlay says otherwise (runbooks.yaml).
RUNBOOKS = "https://github.com/datum-cloud/gcjob/blob/main/docs/deploying.md"
COMPONENTS = MONITORING.parent / "components"
GROUP_LABELS = {"job", "hub"}  # the Pushgateway group every push of an install goes to
SHARD_LABEL = "shard"  # with --shard, one group a shard (gcjob/publish/metrics.py grouping)
SERIES = re.compile(r"(?P<name>[a-z_]+)\{(?P<labels>[^}]*)\}")


def rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def rule_tests() -> list[dict[str, Any]]:
    tests: list[dict[str, Any]] = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    return tests


def test_promtool_checks_the_rules() -> None:
    done = promtool("check", "rules", str(RULES))

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules())} rules found" in done.stdout


def test_promtool_unit_tests_pass() -> None:
    done = promtool("test", "rules", str(RULE_TESTS))

    assert done.returncode == 0, done.stdout + done.stderr


def pushed_metrics() -> dict[str, set[str]]:
    """Every metric a run pushes, with its own label names: from a summary that has them all."""
    summary = {
        "dry_run": False,
        "exit_code": 0,
        "counts": {"companions": {"deleted": {"orphaned": 1}}},
        "sweeps": {
            "companions": {"scanned": 1},
            "namespaces": {"status": "completed", "scanned": 1},
        },
        "upstream_counts": {"ok": 1},
        "api_requests": {"by_target": {"hub": 1}},
        "shard": {"index": 0, "count": 2},
    }
    registry = registry_of(summary, duration=1.0, finished=1.0)
    return {
        family.name: {label for sample in family.samples for label in sample.labels}
        for family in registry.collect()
    }


def test_the_rule_tests_input_series_are_ones_gcjob_pushes() -> None:
    pushed = pushed_metrics()
    seen = set()
    for test in rule_tests():
        for series in test["input_series"]:
            match = SERIES.fullmatch(series["series"])
            assert match, series["series"]
            name = match["name"]
            labels = {pair.split("=")[0].strip() for pair in match["labels"].split(",")}
            if name == "up":  # the only other series: a Pushgateway with no gcjob in it
                continue
            assert name in pushed, f"{name} is not a metric gcjob pushes"
            assert labels - {SHARD_LABEL} == GROUP_LABELS | pushed[name], series["series"]
            if name == "gcjob_shard_count":  # pushed by shards only: in their groups only
                assert SHARD_LABEL in labels, series["series"]
            seen.add(name)
    assert seen >= {
        "gcjob_run_exit_code",
        "gcjob_last_success_timestamp_seconds",
        "gcjob_run_finished_timestamp_seconds",
        "gcjob_lock_held_seconds",
        "gcjob_run_brake_engaged",
        "gcjob_run_dry_run",
        "gcjob_shard_count",
    }


def test_every_alert_has_a_test_that_fires_it_and_a_runbook_section() -> None:
    fired = {
        case["alertname"]
        for test in rule_tests()
        for case in test["alert_rule_test"]
        if case["exp_alerts"]
    }
    headings = {
        line.removeprefix("### ").strip().lower()
        for line in DEPLOYING.read_text().splitlines()
        if line.startswith("### ")
    }
    for rule in rules():
        name = rule["alert"]
        assert name in fired, f"no promtool test fires {name}"
        assert rule["annotations"]["runbook_url"] == f"{RUNBOOKS}#{name.lower()}"
        assert name.lower() in headings, f"docs/deploying.md has no section {name}"


def _rendered_rules(kustomization: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(servers.kubectl()), "kustomize", str(kustomization)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    (manifest,) = [doc for doc in yaml.safe_load_all(done.stdout) if doc]
    assert manifest["kind"] == "PrometheusRule"  # the runbooks' page is kustomize's only
    return [rule for group in manifest["spec"]["groups"] for rule in group["rules"]]


def test_the_runbooks_page_is_a_setting_an_overlay_changes(tmp_path: Path) -> None:
    """issue 51 item 9: absolute runbook URLs, their page one setting of an overlay."""
    shipped = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    assert _rendered_rules(MONITORING) == [r for g in shipped["spec"]["groups"] for r in g["rules"]]
    mine = "https://docs.example.com/platform/gcjob-runbooks.html"
    overlay = tmp_path / "alerts"
    overlay.mkdir()
    # docs/deploying.md's overlay, as an operator writes it
    (overlay / "runbooks.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "gcjob-runbooks",
                    "annotations": {"config.kubernetes.io/local-config": "true"},
                },
                "data": {"page": mine},
            }
        )
    )
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [os.path.relpath(MONITORING, overlay), "runbooks.yaml"],
                "components": [os.path.relpath(COMPONENTS / "runbooks", overlay)],
            }
        )
    )

    rendered = _rendered_rules(overlay)

    assert len(rendered) == len(rules())
    assert all(r["annotations"]["runbook_url"] == f"{mine}#{r['alert'].lower()}" for r in rendered)


def test_the_prometheusrule_carries_the_same_groups() -> None:
    """Generated by tools/regen_prometheusrule.py: run it after changing the rule file."""
    manifest = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())

    assert manifest["kind"] == "PrometheusRule"
    assert manifest["spec"]["groups"] == yaml.safe_load(RULES.read_text())["groups"]


def test_without_promtool_a_test_fails_in_one_line_saying_how_to_get_it(tmp_path: Path) -> None:
    env = {**os.environ, "GCJOB_PROMETHEUS_BIN": str(tmp_path)}  # a folder with nothing in it
    test = f"{Path(__file__).resolve()}::test_promtool_checks_the_rules"

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )

    assert done.returncode == 1, done.stdout
    assert "apt-get install prometheus prometheus-pushgateway" in done.stdout
    assert "Traceback" not in done.stdout and "def " not in done.stdout
