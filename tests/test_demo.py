"""The built-in demo snapshot (fixtures/demo) through the real CLI: every case of every sweep.

Expectations follow docs/rules.md, not whatever gcjob happens to print.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from gcjob import marks
from gcjob.cli import cli
from gcjob.domain import (
    COMPANION_LABEL,
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    REFERRERS_ANNOTATION,
)
from gcjob.kube.errors import ConfigError
from gcjob.sweeps import REGISTRY
from testbed import schemas
from testbed.report import sweep_snapshot

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"

WEB = "ns-4b1f7c2a-9e3d-4a6b-8c1d-2e5f6a7b8c9d"  # upstream single/default
SHOP = "ns-c7e2a9d4-1b3f-4e8a-a6d2-5f9b0c1e3a7d"  # upstream single/shop
RETIRED = "ns-e8b6d4c2-0a9f-4d7e-b5c3-a1f2e3d4c5b6"  # upstream single/retired (gone)
ALPHA = "ns-91d3e5f7-2a4c-4b6e-8d0f-1c3e5a7b9d2f"  # upstream proj-alpha/default
UNKNOWN = "ns-2d4f6a8c-0e1b-4c3d-9e5f-7a9b1c3d5e7f"  # upstream proj-unknown/default
BETA = "ns-5a7c9e1b-3d5f-4a7c-9e1b-3d5f7a9c1e3b"  # upstream proj-beta/default (a project)
GONE = "ns-6b8d0f2a-4c6e-4b8d-a0f2-4c6e8b0d2f4a"  # upstream proj-gone/default (deleted)

CM, SECRET, RB, ROUTE = "ConfigMap", "Secret", "ResourceBinding", "HTTPRoute"
WOULD, SKIP = "would-delete", "skipped"

# (sweep, kind, namespace, name) -> (action, reason): every object the report must itemise.
EXPECTED: dict[tuple[str, str, str, str], tuple[str, str]] = {
    # -- companions ---------------------------------------------------------------------
    # 1. orphan (its referrer's name exists only in another hub namespace) + its binding
    ("companions", CM, SHOP, "orphan-app-config"): (WOULD, "orphaned"),
    ("companions", RB, SHOP, "orphan-app-config-configmap"): (WOULD, "companion-deleted"),
    # 2. orphan Secret + its binding
    ("companions", SECRET, WEB, "orphan-db-creds"): (WOULD, "orphaned"),
    ("companions", RB, WEB, "orphan-db-creds-secret"): (WOULD, "companion-deleted"),
    # 3. legacy name: the binding keeps the prefix
    ("companions", CM, WEB, "configmap.legacy-settings"): (WOULD, "orphaned"),
    ("companions", RB, WEB, "configmap.legacy-settings-configmap"): (WOULD, "companion-deleted"),
    # 4. ConfigMap and Secret share a name: the ConfigMap is the orphan, the Secret is live
    ("companions", CM, WEB, "shared-settings"): (WOULD, "orphaned"),
    ("companions", RB, WEB, "shared-settings-configmap"): (WOULD, "companion-deleted"),
    # 8. unreadable referrers
    ("companions", CM, WEB, "no-referrers-annotation"): (SKIP, "referrers-missing"),
    ("companions", CM, WEB, "empty-referrers-list"): (SKIP, "referrers-empty"),
    ("companions", CM, WEB, "blank-referrers"): (SKIP, "referrers-empty"),
    ("companions", CM, WEB, "unparseable-referrers"): (SKIP, "referrers-unparseable"),
    ("companions", CM, WEB, "object-referrers"): (SKIP, "referrers-not-string-array"),
    ("companions", CM, WEB, "null-referrer"): (SKIP, "referrers-not-string-array"),
    ("companions", CM, WEB, "bare-string-referrers"): (SKIP, "referrers-not-string-array"),
    ("companions", CM, WEB, "malformed-referrer-key"): (SKIP, "referrer-key-malformed"),
    ("companions", CM, WEB, "uppercase-referrer-key"): (SKIP, "referrer-key-malformed"),
    # 9, 10, 13. held back
    ("companions", CM, WEB, "young-orphan-config"): (SKIP, "too-young"),
    ("companions", CM, WEB, "terminating-orphan-config"): (SKIP, "terminating"),
    ("companions", CM, WEB, "protected-orphan-config"): (SKIP, "protected"),
    # 11. orphan deleted, but its binding binds another object: kept
    ("companions", CM, WEB, "mismatched-binding-config"): (WOULD, "orphaned"),
    ("companions", RB, WEB, "mismatched-binding-config-configmap"): (SKIP, "binding-mismatch"),
    # -- bindings -----------------------------------------------------------------------
    ("bindings", RB, WEB, "gone-config-configmap"): (WOULD, "orphaned"),  # 14. annotation
    ("bindings", RB, WEB, "gone-creds-secret"): (WOULD, "orphaned"),  # 15. label only
    ("bindings", RB, WEB, "terminating-gone-config-configmap"): (SKIP, "terminating"),  # 20.
    ("bindings", RB, WEB, "young-gone-config-configmap"): (SKIP, "too-young"),  # 21.
    # -- routes -------------------------------------------------------------------------
    ("routes", ROUTE, WEB, "orphan-route"): (WOULD, "upstream-gateways-gone"),  # 22.
    ("routes", ROUTE, WEB, "both-gateways-gone-route"): (WOULD, "upstream-gateways-gone"),  # 25.
    ("routes", ROUTE, RETIRED, "retired-namespace-route"): (WOULD, "upstream-namespace-gone"),
    ("routes", ROUTE, ALPHA, "legacy-label-orphan-route"): (WOULD, "upstream-gateways-gone"),
    ("routes", ROUTE, WEB, "young-orphan-route"): (SKIP, "too-young"),  # 28.
    ("routes", ROUTE, WEB, "terminating-orphan-route"): (SKIP, "terminating"),  # 29.
    ("routes", ROUTE, WEB, "http01-solver-route"): (SKIP, "http01-solver"),  # 30.
    ("routes", ROUTE, WEB, "missing-upstream-name-route"): (SKIP, "labels-missing"),  # 31.
    ("routes", ROUTE, WEB, "no-parent-refs-route"): (SKIP, "no-parent-refs"),  # 32.
    ("routes", ROUTE, WEB, "service-parent-route"): (SKIP, "non-gateway-parent"),  # 33.
    ("routes", ROUTE, WEB, "mixed-parents-route"): (SKIP, "non-gateway-parent"),  # 33.
    ("routes", ROUTE, WEB, "cross-namespace-parent-route"): (SKIP, "cross-namespace-parent"),
    ("routes", ROUTE, UNKNOWN, "unknown-cluster-route"): (SKIP, "upstream-cluster-unknown"),
    # -- copies (report-only: what it would delete, were it enforced) --------------------
    # its project is not found by a Project API that found every live project
    ("copies", CM, GONE, "gone-project-config"): (WOULD, "project-gone"),
    # its upstream owner is not in its cluster's dump, whose namespace is there
    ("copies", CM, BETA, "deleted-owner-config"): (WOULD, "owner-gone"),
    # its owner is an upstream Secret, not read (--read-upstream-secrets): no proof, kept
    ("copies", SECRET, BETA, "unread-owner-secret"): (SKIP, "owner-not-read"),
}

# Healthy (counted, never itemised) and out of scope (neither): (kind, namespace, name).
NOT_ITEMISED = [
    (CM, WEB, "web-config"),  # 5. live referrer
    (CM, WEB, "shared-config"),  # 6. one of two referrers live
    (CM, WEB, "api-config"),  # 7. terminating WorkloadDeployment is live
    (SECRET, WEB, "shared-settings"),  # 4. the live half
    ("WorkloadDeployment", WEB, "worker-ord"),  # 12. labelled WD: not a companion
    (CM, WEB, "unlabelled-config"),  # not labelled: not a companion
    (CM, "kube-system", "orphan-in-reserved-namespace"),  # reserved namespace
    (RB, WEB, "shared-settings-secret"),  # binds the live Secret
    (RB, WEB, "web-config-configmap"),
    (RB, WEB, "unlabelled-config-configmap"),  # 16. object exists, unlabelled
    (RB, WEB, "default-policy-config-configmap"),  # 17. not city-*
    (RB, WEB, "web-dfw-workloaddeployment"),  # 18.
    (RB, WEB, "web-httproute"),  # 18.
    (RB, WEB, "global-config-configmap"),  # 19. ClusterPropagationPolicy
    (ROUTE, WEB, "web"),  # 23.
    (ROUTE, WEB, "api"),  # 24. one Gateway left
    (ROUTE, ALPHA, "alpha-web"),
    (ROUTE, WEB, "grpc-route-copy"),  # 36. another owner
    (CM, BETA, "live-owner-config"),  # its upstream owner is live: healthy
]

EXPECTED_COUNTS = {
    "companions": {
        "would-delete": {"orphaned": 5, "companion-deleted": 4},
        "skipped": {
            "binding-mismatch": 1,
            "protected": 1,
            "referrer-key-malformed": 2,
            "referrer-live": 4,
            "referrers-empty": 2,
            "referrers-missing": 1,
            "referrers-not-string-array": 3,
            "referrers-unparseable": 1,
            "terminating": 1,
            "too-young": 1,
        },
    },
    "bindings": {
        "would-delete": {"orphaned": 2},
        "skipped": {"object-exists": 7, "terminating": 1, "too-young": 1},
    },
    "routes": {
        "would-delete": {"upstream-gateways-gone": 3, "upstream-namespace-gone": 1},
        "skipped": {
            "cross-namespace-parent": 1,
            "gateway-exists": 3,
            "http01-solver": 1,
            "labels-missing": 1,
            "no-parent-refs": 1,
            "non-gateway-parent": 2,
            "terminating": 1,
            "too-young": 1,
            "upstream-cluster-unknown": 1,
        },
    },
    "copies": {
        "would-delete": {"owner-gone": 1, "project-gone": 1},
        "skipped": {"owner-exists": 1, "owner-not-read": 1},
    },
}


def _sweep(tmp_path: Path, *extra: str) -> tuple[Any, dict[str, Any]]:
    report_file = tmp_path / "r.json"
    # --grace 0: the one-look verdicts this file pins down (marks: test_demo_with_a_grace_*)
    args = ["sweep", "--snapshot", str(DEMO), "--report-file", str(report_file), "--grace", "0"]
    args += extra
    # standalone_mode=False: the command's return value is the process exit code.
    result = CliRunner().invoke(cli, args, standalone_mode=False, catch_exceptions=False)
    report = json.loads(report_file.read_text(encoding="utf-8"))
    return result, report


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any]]:
    return _sweep(tmp_path_factory.mktemp("demo"))


def _key(item: dict[str, Any]) -> tuple[str, str, str, str]:
    return (item["sweep"], item["kind"], item["namespace"], item["name"])


def _secret_values() -> list[str]:
    """Every Secret payload value in the fixture, base64 and decoded."""
    values: list[str] = []
    for document in yaml.safe_load_all((DEMO / "hub" / "secrets.yaml").read_text("utf-8")):
        for item in document["items"]:
            for encoded in item.get("data", {}).values():
                values += [encoded, base64.b64decode(encoded).decode()]
    return values


def test_exit_code_zero(demo: tuple[Any, dict[str, Any]]) -> None:
    result, report = demo
    assert result.exit_code == 0, result.output
    assert result.return_value == 0
    assert report["summary"]["exit_code"] == 0
    assert report["summary"]["dry_run"] is True
    assert report["summary"]["decided_at"] == "2026-11-20T12:00:00Z"
    assert report["summary"]["hub"] == "demo-hub (snapshot)"


@pytest.mark.parametrize("key", sorted(EXPECTED), ids=lambda k: f"{k[0]}:{k[1]}:{k[3]}")
def test_case(demo: tuple[Any, dict[str, Any]], key: tuple[str, str, str, str]) -> None:
    _, report = demo
    found = [i for i in report["items"] if _key(i) == key]
    assert len(found) == 1, f"{key}: {len(found)} records"
    assert (found[0]["action"], found[0]["reason"]) == EXPECTED[key], found[0]["detail"]
    assert found[0]["dry_run"] is True


def test_only_expected_objects_itemised(demo: tuple[Any, dict[str, Any]]) -> None:
    _, report = demo
    keys = [_key(i) for i in report["items"]]
    assert len(keys) == len(set(keys)), "an object is reported twice"
    assert set(keys) == set(EXPECTED)


@pytest.mark.parametrize("kind,namespace,name", NOT_ITEMISED, ids=lambda v: str(v))
def test_not_itemised(
    demo: tuple[Any, dict[str, Any]], kind: str, namespace: str, name: str
) -> None:
    _, report = demo
    assert not [
        i
        for i in report["items"]
        if (i["kind"], i["namespace"], i["name"]) == (kind, namespace, name)
    ]


def test_no_workloaddeployment_or_reserved_namespace_reported(
    demo: tuple[Any, dict[str, Any]],
) -> None:
    _, report = demo
    assert all(i["kind"] != "WorkloadDeployment" for i in report["items"])
    assert all(i["namespace"].startswith("ns-") for i in report["items"])


def test_summary_counts(demo: tuple[Any, dict[str, Any]]) -> None:
    _, report = demo
    summary = report["summary"]
    assert summary["counts"] == EXPECTED_COUNTS
    assert summary["totals"]["would-delete"] == 17
    assert summary["totals"]["deleted"] == 0
    assert summary["totals"]["failed"] == 0
    sweeps = summary["sweeps"]
    assert {s: v["status"] for s, v in sweeps.items()} == {
        "companions": "completed",
        "bindings": "completed",
        "routes": "completed",
        "copies": "completed",
    }
    # scanned: every labelled companion outside reserved namespaces, every binding, every
    # route labelled as an upstream HTTPRoute copy. in_scope: city-* ConfigMap/Secret
    # bindings not already handled with their companion.
    assert {s: (v["scanned"], v["in_scope"]) for s, v in sweeps.items()} == {
        "companions": (21, 21),
        "bindings": (20, 11),
        "routes": (16, 16),
        "copies": (4, 4),
    }
    clusters = report["upstream"]
    assert [(c["cluster"], c["status"], c["routes"]) for c in clusters] == [
        ("proj-alpha", "ok", 2),
        ("proj-unknown", "unknown", 1),
        ("single", "ok", 7),
    ]
    assert summary["upstream_counts"] == {"ok": 2, "unknown": 1}
    itemised = sum(
        n
        for sweep, actions in EXPECTED_COUNTS.items()
        for action, reasons in actions.items()
        for reason, n in reasons.items()
        if (sweep, reason)
        not in {
            ("companions", "referrer-live"),
            ("routes", "gateway-exists"),
            ("copies", "owner-exists"),
        }
        and (sweep, reason) != ("bindings", "object-exists")
    )
    assert itemised == len(report["items"]) == len(EXPECTED)


def test_record_details(demo: tuple[Any, dict[str, Any]]) -> None:
    _, report = demo
    items = {_key(i): i for i in report["items"]}
    legacy = items[("routes", ROUTE, ALPHA, "legacy-label-orphan-route")]
    assert legacy["cluster"] == "proj-alpha"
    assert legacy["gateways"] == ["default/deleted-alpha-gateway"]
    both = items[("routes", ROUTE, WEB, "both-gateways-gone-route")]
    assert both["gateways"] == ["default/deleted-gateway", "default/retired-gateway"]
    assert items[("companions", CM, SHOP, "orphan-app-config")]["referrers"] == ["shop/web-dfw"]
    assert items[("companions", CM, WEB, "young-orphan-config")]["age_seconds"] == 60


def test_no_secret_payload_in_output(demo: tuple[Any, dict[str, Any]], tmp_path: Path) -> None:
    result, report = demo
    values = _secret_values()
    assert "cG9zdGdyZXM6Ly9hcHA6ZGVtby1zM2NyM3QtcHctN2YzYUBkYi5pbnRlcm5hbDo1NDMyL2FwcA==" in values
    dumped = json.dumps(report)
    text_result, _ = _sweep(tmp_path, "--log-format", "text")
    for value in values:
        assert value not in result.stdout
        assert value not in result.stderr
        assert value not in dumped
        assert value not in text_result.stdout


def test_text_format_summary_table(tmp_path: Path) -> None:
    result, report = _sweep(tmp_path, "--log-format", "text")
    assert result.exit_code == 0
    assert result.return_value == 0
    lines = result.stdout.splitlines()
    assert any(
        line.split() == ["sweep", "status", "action", "reason", "count"] for line in lines
    ), result.stdout
    rows = [line.split() for line in lines]
    assert ["companions", "completed", "skipped", "binding-mismatch", "1"] in rows
    assert ["bindings", "completed", "skipped", "object-exists", "7"] in rows
    assert ["would-delete", "upstream-namespace-gone", "1"] in rows
    assert any(
        line.startswith("would-delete")
        and "orphan-route" in line
        and "[upstream-gateways-gone]" in line
        for line in lines
    )
    assert "exit 0: completed" in result.stdout
    assert len(report["items"]) == len(EXPECTED)


def test_demo_with_a_grace_period_marks_what_it_would_delete(
    tmp_path: Path, demo: tuple[Any, dict[str, Any]]
) -> None:
    """With --grace, every orphan of the one-look sweep is (would be) marked, as of the capture
    time; the patches apply to the loaded objects (a failed test there would be a skip)."""
    _, one_look = demo
    result, report = _sweep(tmp_path, "--grace", "10m")

    assert result.return_value == 0, result.output
    would_delete = {_key(i) for i in one_look["items"] if i["action"] == "would-delete"}
    would_mark = {_key(i) for i in report["items"] if i["action"] == "would-mark"}
    assert would_delete and would_mark == would_delete
    for item in report["items"]:
        if item["action"] == "would-mark":
            assert item["orphaned_since"] == "2026-11-20T12:00:00Z"
    assert report["summary"]["grace_seconds"] == 600
    # Every mark written counts, a companion's binding too (issue 20 item 6).
    for sweep in ("companions", "bindings", "routes"):
        marked = [k for k in would_mark if k[0] == sweep]
        assert sum(report["summary"]["marks"][sweep].values()) == len(marked)
    assert report["summary"]["writes"]["counted"] == len(would_mark)


def _says_marked(text: str) -> bool:
    """Whether `text` says something was marked (`would-mark` and `unmarked` do not)."""
    return re.search(r"(?<![-\w])marked\b", text) is not None


def test_the_demo_says_when_each_orphan_would_go_and_never_that_it_marked(
    tmp_path: Path,
) -> None:
    """Issue 23 item 2, as the README's demo shows it (the default --grace 10m): every orphan
    is `would-mark` with the time an enforcing run deletes it, the summary and the text's last
    line count them, and nothing in the dry run (items, summary, text, explain) says it
    marked."""
    report_file = tmp_path / "r.json"
    text = CliRunner().invoke(
        cli,
        [
            "sweep",
            "--snapshot",
            str(DEMO),
            "--log-format",
            "text",
            "--report-file",
            str(report_file),
        ],
        standalone_mode=False,
        catch_exceptions=False,
    )
    assert text.return_value == 0, text.output
    report = json.loads(report_file.read_text(encoding="utf-8"))

    orphans = [i for i in report["items"] if i["action"] == "would-mark"]
    assert len(orphans) == 17
    for item in orphans:
        if item["sweep"] == "copies":  # report-only: when it would go, were it enforced
            assert "would_delete_at" not in item
            assert "were this sweep enforced (--enforce copies)" in item["detail"]
            continue
        assert item["would_delete_at"] == "2026-11-20T12:10:00Z"  # decided_at + --grace
        assert "due for deletion at 2026-11-20T12:10:00Z if still orphaned" in item["detail"]
    assert all("would_delete_at" not in i for i in report["items"] if i["action"] == "skipped")
    assert {
        s: (v["this_run"], v["later"]) for s, v in report["summary"]["would_delete"].items()
    } == {
        "companions": (0, 9),
        "bindings": (0, 2),
        "routes": (0, 4),
    }
    assert {
        s: (v["this_run"], v["later"])
        for s, v in report["summary"]["would_delete_if_enforced"].items()
    } == {"copies": (0, 2)}
    last = text.stdout.splitlines()[-1]
    assert last.startswith(
        "would delete: 0 this run, 15 later (2026-11-20T12:10:00Z to 2026-11-20T12:10:00Z); "
    )
    assert not [i["detail"] for i in report["items"] if _says_marked(i["detail"])]
    assert not [line for line in text.stdout.splitlines() if _says_marked(line)]
    assert report["summary"]["totals"]["marked"] == 0
    explained = CliRunner().invoke(
        cli,
        ["explain", f"cm/{SHOP}/orphan-app-config", "--snapshot", str(DEMO)],
        standalone_mode=False,
        catch_exceptions=False,
    )
    assert "due for deletion at 2026-11-20T12:10:00Z" in explained.stdout
    assert not _says_marked(explained.stdout.replace("since it was marked", "")), explained.stdout


def test_a_snapshot_of_marks_older_than_the_grace_period_would_delete(tmp_path: Path) -> None:
    """A dump taken 10 minutes after a run marked two orphans: the one whose evidence is
    unchanged is due; the other's referrers changed since, so its grace period restarts. A
    third, marked 5 minutes ago, waits. Each says when it goes (issue 23 item 2)."""
    raw, changed = '["default/web-gone"]', '["default/api-gone"]'
    hub = tmp_path / "snap" / "hub"
    hub.mkdir(parents=True)
    (tmp_path / "snap" / "snapshot.yaml").write_text('capturedAt: "2026-11-20T12:00:00Z"\n')
    items = []
    for name, now_raw, since in (
        ("due", raw, "2026-11-20T11:50:00Z"),
        ("changed", changed, "2026-11-20T11:50:00Z"),
        ("waiting", raw, "2026-11-20T11:55:00Z"),
    ):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": name,
                    "namespace": "ns-1",
                    "uid": f"uid-{name}",
                    "resourceVersion": "5",
                    "creationTimestamp": "2026-11-01T00:00:00Z",
                    "labels": {COMPANION_LABEL: "true", ORPHANED_LABEL: "true"},
                    "annotations": {
                        REFERRERS_ANNOTATION: now_raw,
                        ORPHANED_SINCE_ANNOTATION: since,
                        ORPHANED_REASON_ANNOTATION: "orphaned",
                        ORPHANED_EVIDENCE_ANNOTATION: marks.companion_evidence(raw)
                        .on(f"uid-{name}")
                        .digest,
                    },
                },
            }
        )
    (hub / "configmaps.json").write_text(
        json.dumps({"kind": "List", "apiVersion": "v1", "items": items})
    )
    for empty in ("workloaddeployments", "resourcebindings", "secrets"):  # dumped: none there
        (hub / f"{empty}.json").write_text('{"kind": "List", "apiVersion": "v1", "items": []}')
    run = sweep_snapshot(
        tmp_path / "snap", tmp_path / "r.json", "--grace", "10m", "--sweep", "companions"
    )

    assert run.exit_code == 0, run.output
    report = run.report
    by_name = {i["name"]: i for i in report["items"]}
    assert (by_name["due"]["action"], by_name["due"]["orphaned_since"]) == (
        "would-delete",
        "2026-11-20T11:50:00Z",
    )
    assert (by_name["changed"]["action"], by_name["changed"]["orphaned_since"]) == (
        "would-mark",
        "2026-11-20T12:00:00Z",
    )
    when = {name: (i["action"], i["reason"], i["would_delete_at"]) for name, i in by_name.items()}
    assert when == {
        "due": ("would-delete", "orphaned", "2026-11-20T12:00:00Z"),  # this run
        "changed": ("would-mark", "orphaned", "2026-11-20T12:10:00Z"),  # now + grace
        "waiting": ("skipped", "grace-period", "2026-11-20T12:05:00Z"),  # its mark + grace
    }
    assert "due for deletion at 2026-11-20T12:05:00Z if still" in by_name["waiting"]["detail"]
    assert report["summary"]["would_delete"] == {
        "companions": {
            "this_run": 1,
            "later": 2,
            "earliest": "2026-11-20T12:05:00Z",
            "latest": "2026-11-20T12:10:00Z",
        }
    }


def test_the_report_page_shows_one_valid_record_of_each_kind(tmp_path: Path) -> None:
    """docs/report.md "Records": one item, one upstream and one summary from this demo."""
    page = (DEMO.parent.parent / "docs" / "report.md").read_text("utf-8")
    start = page.index("(`gcjob sweep --snapshot fixtures/demo`, wrapped here):")
    opening = page.index("```json\n", start) + len("```json\n")
    block = page[opening : page.index("\n```", opening)]
    decoder, records, at = json.JSONDecoder(), [], 0
    while at < len(block):
        record, at = decoder.raw_decode(block, at)
        records.append(record)
        at += len(block[at:]) - len(block[at:].lstrip())
    for record in records:
        schemas.REPORT.validate(record)
    assert [r["record"] for r in records] == ["item", "upstream", "summary"]
    _, report = _sweep(tmp_path, "--grace", "10m")  # as the page runs it: the default grace
    assert records[2]["counts"] == report["summary"]["counts"]


def test_a_snapshot_removes_the_companion_mark_of_what_left_the_sweep(tmp_path: Path) -> None:
    """Issue 20 item 14 over a dump: a ConfigMap no longer labelled a companion loses the
    companions' mark (would-unmark, left-scope); a forged partial mark there is left alone."""
    raw = '["default/web-gone"]'
    hub = tmp_path / "snap" / "hub"
    hub.mkdir(parents=True)
    (tmp_path / "snap" / "snapshot.yaml").write_text('capturedAt: "2026-11-20T12:00:00Z"\n')
    items = []
    for name, label, evidence in (
        ("left", "false", marks.companion_evidence(raw).on("uid-left").digest),
        ("unlabelled", None, marks.companion_evidence(raw).on("uid-unlabelled").digest),
        ("forged", None, "binding:0123456789abcdef"),
    ):
        labels = {ORPHANED_LABEL: "true"}
        if label is not None:
            labels[COMPANION_LABEL] = label
        meta = {
            "name": name,
            "namespace": "ns-1",
            "uid": f"uid-{name}",
            "resourceVersion": "5",
            "creationTimestamp": "2026-11-01T00:00:00Z",
            "labels": labels,
            "annotations": {
                REFERRERS_ANNOTATION: raw,
                ORPHANED_SINCE_ANNOTATION: "2026-11-20T11:50:00Z",
                ORPHANED_REASON_ANNOTATION: "orphaned",
                ORPHANED_EVIDENCE_ANNOTATION: evidence,
            },
        }
        items.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
    (hub / "configmaps.json").write_text(
        json.dumps({"kind": "List", "apiVersion": "v1", "items": items})
    )
    for empty in ("secrets", "workloaddeployments", "resourcebindings"):  # dumped, and empty
        (hub / f"{empty}.yaml").write_text("apiVersion: v1\nkind: List\nitems: []\n")
    run = sweep_snapshot(
        tmp_path / "snap", tmp_path / "r.json", "--grace", "10m", "--sweep", "companions"
    )

    assert run.exit_code == 0, run.output
    report = run.report
    by_name = {i["name"]: (i["action"], i["reason"]) for i in report["items"]}
    assert by_name == {
        "left": ("would-unmark", "left-scope"),
        "unlabelled": ("would-unmark", "left-scope"),
    }


# -- a snapshot without a kind (issue 20 item 12) -------------------------------------------


def _demo_without(tmp_path: Path, *missing: str) -> Path:
    copy = tmp_path / "demo"
    shutil.copytree(DEMO, copy)
    for relative in missing:
        (copy / relative).unlink()
    return copy


def _sweep_report(snapshot: Path, tmp_path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    run = sweep_snapshot(snapshot, tmp_path / "report.json", "--grace", "0", *args)
    return run.exit_code, run.report


def test_no_workloaddeployments_dump_is_unknown_not_every_companion_orphaned(
    tmp_path: Path,
) -> None:
    code, report = _sweep_report(
        _demo_without(tmp_path, "hub/workloaddeployments.yaml"), tmp_path, "--sweep", "companions"
    )
    companions = report["summary"]["sweeps"]["companions"]
    assert companions["status"] == "incomplete"
    assert "no workloaddeployments dump" in companions["detail"]
    assert [i for i in report["items"] if i["action"] == "would-delete"] == []
    assert code == 3


def test_an_explicitly_empty_workloaddeployments_dump_is_empty(tmp_path: Path) -> None:
    snapshot = _demo_without(tmp_path, "hub/workloaddeployments.yaml")
    (snapshot / "hub" / "workloaddeployments.yaml").write_text(
        "apiVersion: v1\nkind: List\nitems: []\n", encoding="utf-8"
    )
    code, report = _sweep_report(snapshot, tmp_path, "--sweep", "companions")
    assert code == 0
    assert report["summary"]["sweeps"]["companions"]["status"] == "completed"
    assert any(i["reason"] == "orphaned" for i in report["items"])  # none live: orphans


def test_an_empty_list_of_another_kind_named_after_workloaddeployments_is_no_dump_of_them(
    tmp_path: Path,
) -> None:
    """The file's name counts only for an untyped `kind: List` (second audit F6)."""
    snapshot = _demo_without(tmp_path, "hub/workloaddeployments.yaml")
    (snapshot / "hub" / "workloaddeployments.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMapList\nitems: []\n", encoding="utf-8"
    )
    code, report = _sweep_report(snapshot, tmp_path, "--sweep", "companions")
    assert report["summary"]["sweeps"]["companions"]["status"] == "incomplete"
    assert [i for i in report["items"] if i["action"] == "would-delete"] == []
    assert code == 3


def test_no_gateways_dump_makes_the_upstream_unavailable_not_empty(tmp_path: Path) -> None:
    snapshot = _demo_without(tmp_path, "upstream/single/gateways.yaml")
    code, report = _sweep_report(snapshot, tmp_path, "--sweep", "routes")
    single = next(u for u in report["upstream"] if u["cluster"] == "single")
    assert single["status"] == "unavailable"
    assert "no gateways dump" in single["detail"]
    on_single = [i for i in report["items"] if i.get("cluster") == "single"]
    assert on_single and all(i["action"] == "skipped" for i in on_single)
    assert code != 0


DEMO_DUMPS = sorted(
    str(p.relative_to(DEMO)) for p in DEMO.rglob("*.yaml") if p.name != "snapshot.yaml"
)


# Dumps of the hub that hold no object: discovery, and the copied kinds' empty Lists.
NO_HUB_OBJECT = {"hub/discovery/apis.yaml", "hub/copied-kinds.yaml"}


@settings(max_examples=max(5, settings().max_examples // 10))
@given(missing=st.sets(st.sampled_from(DEMO_DUMPS), min_size=1))
def test_any_dump_left_out_never_makes_an_orphan(missing: set[str]) -> None:
    """Generated: the demo with any set of dumps left out. What a missing kind would have
    proven is unknown: nothing is deleted on it, and no run ends on it (never exit 70)."""
    with tempfile.TemporaryDirectory() as directory:
        tmp_path = Path(directory)
        snapshot = _demo_without(tmp_path, *missing)
        if all(d in missing or not d.startswith("hub/") or d in NO_HUB_OBJECT for d in DEMO_DUMPS):
            return  # no hub object at all: refused (exit 2), tested elsewhere
        try:
            code, report = _sweep_report(snapshot, tmp_path)
        except ConfigError:
            return
    assert code != 70
    full = _full_demo_deletes()
    deleted = {
        (i["kind"], i["namespace"], i["name"])
        for i in report["items"]
        if i["action"] in ("would-delete", "would-mark")
    }
    # leaving a dump out never adds a deletion the full demo would not make
    assert deleted <= full
    if "hub/workloaddeployments.yaml" in missing:  # the companions rest on them (not copies)
        assert not [
            i
            for i in report["items"]
            if i["sweep"] == "companions" and i["action"] in ("would-delete", "would-mark")
        ]
    for cluster in ("single", "proj-alpha"):
        if f"upstream/{cluster}/gateways.yaml" in missing:
            assert not [
                i
                for i in report["items"]
                if i.get("cluster") == cluster and i["action"] in ("would-delete", "would-mark")
            ]


_FULL: set[tuple[str, str, str]] = set()


def _full_demo_deletes() -> set[tuple[str, str, str]]:
    if not _FULL:
        with tempfile.TemporaryDirectory() as directory:
            _, report = _sweep_report(DEMO, Path(directory))
        _FULL.update(
            (i["kind"], i["namespace"], i["name"])
            for i in report["items"]
            if i["action"] in ("would-delete", "would-mark")
        )
    return _FULL


# Run only when named, and never from a snapshot: it lists what a hub namespace holds through
# the hub's discovery of every namespaced kind (gcjob/sweeps/namespaces/sweep.py).
NOT_ON_A_SNAPSHOT = {"namespaces"}


def test_the_demo_holds_every_sweep(demo: tuple[Any, dict[str, Any]], tmp_path: Path) -> None:
    """Issue 48 item 3: every registered sweep runs on the demo and itemises something; the
    namespaces sweep, named, says why it does not."""
    _, report = demo
    registered = {str(r.name) for r in REGISTRY} - NOT_ON_A_SNAPSHOT
    assert set(report["summary"]["sweeps"]) == registered
    assert {i["sweep"] for i in report["items"]} == registered
    code, named = _sweep_report(DEMO, tmp_path, "--sweep", "namespaces")
    assert code == 0
    said = named["summary"]["sweeps"]["namespaces"]
    assert said["status"] == "not-configured" and "snapshot" in said["detail"]
    assert named["items"] == []


def test_a_snapshot_without_the_hubs_discovery_does_not_sweep_copies(tmp_path: Path) -> None:
    """Which kinds the hub serves is unknown without its discovery: the copies sweep does not
    run by default, and asked for by name it says why; nothing else changes."""
    snapshot = _demo_without(tmp_path, "hub/discovery/apis.yaml")
    code, report = _sweep_report(snapshot, tmp_path)
    assert code == 0
    assert "copies" not in report["summary"]["sweeps"]
    assert not [i for i in report["items"] if i["sweep"] == "copies"]
    assert {_key(i) for i in report["items"]} == {k for k in EXPECTED if k[0] != "copies"}
    code, report = _sweep_report(snapshot, tmp_path, "--sweep", "copies")
    copies = report["summary"]["sweeps"]["copies"]
    assert copies["status"] == "not-configured"
    assert "without the hub's discovery" in copies["detail"]
    assert report["items"] == []


def test_without_the_project_apis_answers_no_project_is_gone(tmp_path: Path) -> None:
    """No Projects dump: proj-gone is not answered, not gone; its copy is kept."""
    snapshot = _demo_without(tmp_path, "projects/projects.yaml")
    _, report = _sweep_report(snapshot, tmp_path, "--sweep", "copies")
    items = {_key(i): i for i in report["items"]}
    gone = items[("copies", CM, GONE, "gone-project-config")]
    assert gone["action"] == SKIP
    assert gone["reason"] != "project-gone"
    assert report["summary"]["projects"]["gone"] == 0
    # the owner proven gone upstream does not rest on the Project API
    assert items[("copies", CM, BETA, "deleted-owner-config")]["reason"] == "owner-gone"


def test_a_copy_whose_upstream_owner_is_live_is_counted_healthy(
    demo: tuple[Any, dict[str, Any]],
) -> None:
    _, report = demo
    assert report["summary"]["counts"]["copies"]["skipped"]["owner-exists"] == 1
    assert not [i for i in report["items"] if i["name"] == "live-owner-config"]
