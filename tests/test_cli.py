"""gcjob.cli: flags and environment -> settings -> one run -> exit code (docs/operating.md
"Flags and environment").

Runs go through the demo snapshot (fixtures/demo), so nothing is contacted; usage errors go
through `gcjob.cli.main`, the console entry point, which exits 2 with a one-line message.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from gcjob.cli import cli, main
from gcjob.exitcodes import DESCRIPTIONS, ExitCode
from gcjob.settings import DEFAULT_GRACE, parse_duration
from gcjob.urls import outbound_problem

DEMO = str(Path(__file__).resolve().parent.parent / "fixtures" / "demo")
WEB = "ns-4b1f7c2a-9e3d-4a6b-8c1d-2e5f6a7b8c9d"
SHOP = "ns-c7e2a9d4-1b3f-4e8a-a6d2-5f9b0c1e3a7d"
ALPHA = "ns-91d3e5f7-2a4c-4b6e-8d0f-1c3e5a7b9d2f"


@pytest.fixture(autouse=True)
def clean_process_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No ambient GCJOB_*/KUBECONFIG; put back the signal handlers and log handlers a run sets."""
    for key in list(os.environ):
        if key.startswith("GCJOB_"):
            monkeypatch.delenv(key)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    log = logging.getLogger("gcjob")
    log_handlers = list(log.handlers)
    yield
    for signum, handler in handlers.items():
        signal.signal(signum, handler)
    log.handlers[:] = log_handlers


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    """A sweep with --grace 0 (deleting on the first look) unless the test passes its own."""
    grace = [] if "--grace" in args or "GCJOB_GRACE" in (env or {}) else ["--grace", "0"]
    result = CliRunner().invoke(
        cli, ["sweep", *grace, *args], env=env, standalone_mode=False, catch_exceptions=False
    )
    return result


def records(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def summary_of(result: Result) -> dict[str, Any]:
    last = records(result)[-1]
    assert last["record"] == "summary"
    return last


def items_of(result: Result) -> list[dict[str, Any]]:
    return [r for r in records(result) if r["record"] == "item"]


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the entry point; assert exit 2 with a one-line message; return that line."""
    with pytest.raises(SystemExit) as raised:
        main(list(argv))
    assert raised.value.code == ExitCode.USAGE == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("gcjob: error: ")
    assert captured.out == ""
    return lines[0]


# -- help -----------------------------------------------------------------------------------


def test_help_lists_the_exit_code_table() -> None:
    result = CliRunner().invoke(cli, ["sweep", "--help"], standalone_mode=False)
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for code, description in DESCRIPTIONS.items():
        assert f"{int(code)} {' '.join(description.split())}" in text
    assert "70, 2, 6, 5, 4, 3, 1, 0" in text
    assert "GCJOB_" in text


def test_help_through_main_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["sweep", "--help"])
    assert raised.value.code == 0
    assert "another run holds the lock" in capsys.readouterr().out


def test_bare_gcjob_prints_its_help_not_an_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main([])
    assert raised.value.code == ExitCode.USAGE  # nothing ran
    err = capsys.readouterr().err
    assert not err.startswith("gcjob: error")
    assert err.splitlines()[0].startswith("Usage: gcjob")
    assert "\nCommands:\n" in err and "  sweep " in err


# -- usage errors: exit 2, one line ---------------------------------------------------------


def test_bad_flag(capsys: pytest.CaptureFixture[str]) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, "--no-such-flag")
    assert "--no-such-flag" in line


def test_bad_command(capsys: pytest.CaptureFixture[str]) -> None:
    usage_error(capsys, "sweeep")


@pytest.mark.parametrize(
    ("flag", "url", "why"),
    [
        ("--notify-webhook", "http://hooks.example/services/T0/B0/SECRET", "cleartext"),
        ("--notify-webhook", "https://u:S3cret@hooks.example/x", "credentials"),
        ("--notify-webhook", "ftp://hooks.example/x", "http(s)"),
        ("--pushgateway", "https://admin:S3cret@pushgw.example", "credentials"),
        ("--pushgateway", "http://pushgw.example:port", "not a valid URL"),
        ("--pushgateway", "https://", "no host"),
    ],
)
def test_a_url_gcjob_would_leak_a_secret_to_is_refused(
    capsys: pytest.CaptureFixture[str], flag: str, url: str, why: str
) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, flag, url)
    assert why in line and flag in line
    assert "S3cret" not in line and "SECRET" not in line


def test_a_project_api_that_is_a_template_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """issue 34 item 6: one server answers for every project; a template would leave every
    project not-answered and nothing ever proven gone."""
    template = "https://milo.example/apis/resourcemanager.miloapis.com/v1alpha1/projects/{cluster}"
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, "--project-api", template)
    assert "--project-api" in line and "is a template" in line


@pytest.mark.parametrize(
    ("flag", "url"),
    [
        ("--notify-webhook", "http://127.0.0.1:8080/hook"),
        ("--pushgateway", "http://pushgateway.monitoring:9091"),  # carries no secret
    ],
)
def test_loopback_webhooks_and_plain_pushgateways_are_accepted(flag: str, url: str) -> None:
    assert outbound_problem(url, secret_in_url=flag == "--notify-webhook") is None


@pytest.mark.parametrize(
    ("flag", "variable"),
    [
        ("--hub-kubeconfig", "GCJOB_HUB_KUBECONFIG"),
        ("--hub-context", "GCJOB_HUB_CONTEXT"),
        ("--upstream-kubeconfig", "GCJOB_UPSTREAM_KUBECONFIG"),
        ("--upstream-server-template", "GCJOB_UPSTREAM_SERVER_TEMPLATE"),
        ("--report-file", "GCJOB_REPORT_FILE"),
        ("--record-deletions", "GCJOB_RECORD_DELETIONS"),
        ("--snapshot", "GCJOB_SNAPSHOT"),
    ],
)
@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_target_is_refused_not_read_as_another_one(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    flag: str,
    variable: str,
    blank: str,
) -> None:
    """`--hub-kubeconfig ''` fell back to $KUBECONFIG (then in-cluster): another cluster."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "another-cluster.yaml"))
    assert "is empty" in usage_error(capsys, "sweep", flag, blank)
    monkeypatch.setenv(variable, blank)
    assert variable in usage_error(capsys, "sweep")


@pytest.mark.parametrize("namespace", ["kube-system", "karmada-system", "karmada-es-cell1"])
def test_a_lock_in_a_reserved_namespace_is_refused(
    capsys: pytest.CaptureFixture[str], namespace: str
) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, "--lock-namespace", namespace)
    assert "reserved" in line and "--lock-namespace" in line


@pytest.mark.parametrize("flag", ["--min-age", "--timeout", "--connect-timeout", "--grace"])
@pytest.mark.parametrize("value", ["5x", "-1m", "1d", "forever"])
def test_bad_duration(capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, flag, value)
    assert flag in line


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--now", "yesterday"),
        ("--now", "2026-11-20T12:00:00"),  # no zone: which time would that be?
        ("--max-marks", "-1"),
        ("--max-marks", "many"),
    ],
)
def test_bad_now_and_max_marks(capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, flag, value)
    assert flag in line


def test_now_decides_as_of_that_time_and_says_so() -> None:
    result = invoke("--snapshot", DEMO, "--now", "2026-11-21T12:00:00+02:00")
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["decided_at"] == "2026-11-21T10:00:00Z"
    assert "deciding as of --now" in result.stderr


def test_now_with_delete_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20 item 4: a changed clock must never reach a run that deletes."""
    line = usage_error(
        capsys, "sweep", "--hub-kubeconfig", "/nonexistent", "--delete", "--now",
        "2030-01-01T00:00:00Z",
    )  # fmt: skip
    assert "--now" in line and "--delete" in line


def test_gcjob_now_is_never_read_from_the_environment() -> None:
    result = invoke("--snapshot", DEMO, env={"GCJOB_NOW": "2030-01-01T00:00:00Z"})
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["decided_at"] == "2026-11-20T12:00:00Z"  # the snapshot's capturedAt
    assert "GCJOB_NOW is ignored" in result.stderr
    assert "deciding as of --now" not in result.stderr


def test_the_grace_default_is_one_constant_and_the_flag_overrides_it() -> None:
    default = json.loads(
        CliRunner()
        .invoke(cli, ["sweep", "--snapshot", DEMO], standalone_mode=False)
        .stdout.strip()
        .splitlines()[-1]
    )
    assert default["grace_seconds"] == parse_duration(DEFAULT_GRACE).total_seconds()
    explicit = json.loads(invoke("--snapshot", DEMO, "--grace", "90s").stdout.splitlines()[-1])
    assert explicit["grace_seconds"] == 90


@pytest.mark.parametrize("namespace", ["kube-system", "karmada-system", "karmada-es-member1"])
def test_reserved_namespace(capsys: pytest.CaptureFixture[str], namespace: str) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, "--namespace", namespace)
    assert namespace in line


def test_reserved_namespace_from_env(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GCJOB_NAMESPACE", f"{WEB},kube-system")
    line = usage_error(capsys, "sweep", "--snapshot", DEMO)
    assert "kube-system" in line


def test_drain_needs_delete(capsys: pytest.CaptureFixture[str]) -> None:
    line = usage_error(capsys, "sweep", "--hub-kubeconfig", "hub.yaml", "--drain")
    assert "--drain needs --delete" in line


def test_snapshot_with_delete(capsys: pytest.CaptureFixture[str]) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, "--delete")
    assert "--delete" in line


def test_snapshot_with_hub_kubeconfig(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    line = usage_error(
        capsys, "sweep", "--snapshot", DEMO, "--hub-kubeconfig", str(tmp_path / "hub.yaml")
    )
    assert "--hub-kubeconfig" in line


def test_bad_env_duration(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GCJOB_MIN_AGE", "soon")
    usage_error(capsys, "sweep", "--snapshot", DEMO)


def test_sweep_routes_without_upstream_on_a_snapshot(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    snapshot = _hub_only_snapshot(tmp_path)
    line = usage_error(capsys, "sweep", "--snapshot", str(snapshot), "--sweep", "routes")
    assert "DIR/upstream/" in line
    assert "--upstream-kubeconfig" not in line  # it does not apply to a snapshot


def _hub_only_snapshot(tmp_path: Path) -> Path:
    snapshot = tmp_path / "snap"
    (snapshot / "hub").mkdir(parents=True)
    (snapshot / "snapshot.yaml").write_text('capturedAt: "2026-11-20T12:00:00Z"\n')
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": WEB}}
    (snapshot / "hub" / "cm.json").write_text(json.dumps(cm))
    for kind in ("secrets", "workloaddeployments", "resourcebindings"):  # dumped: none there
        (snapshot / "hub" / f"{kind}.json").write_text(
            '{"apiVersion": "v1", "kind": "List", "items": []}'
        )
    return snapshot


@pytest.mark.parametrize("flag", ["--upstream-kubeconfig", "--upstream-server-template"])
def test_upstream_flags_do_not_apply_to_a_snapshot(
    capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, flag, "/does/not/matter")
    assert "DIR/upstream/" in line


def _kubeconfig(path: Path) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "hub", "cluster": {"server": "http://127.0.0.1:1"}}],
                "users": [{"name": "hub", "user": {"token": "tok"}}],
                "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "hub"}}],
                "current-context": "hub",
            }
        )
    )
    return path


def test_sweep_routes_without_upstream_on_a_live_hub(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # refused before any request: the hub at 127.0.0.1:1 is never contacted
    kubeconfig = _kubeconfig(tmp_path / "hub.yaml")
    line = usage_error(
        capsys, "sweep", "--hub-kubeconfig", str(kubeconfig), "--sweep", "routes", "--delete"
    )
    assert "upstream" in line


def test_missing_hub_context(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    kubeconfig = _kubeconfig(tmp_path / "hub.yaml")
    line = usage_error(
        capsys, "sweep", "--hub-kubeconfig", str(kubeconfig), "--hub-context", "no-such"
    )
    assert "no-such" in line


def test_unparsable_hub_kubeconfig(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # README "Exit codes": bad configuration is exit 2 with a one-line message, nothing touched
    broken = tmp_path / "hub.yaml"
    broken.write_text("clusters: [\n")
    usage_error(capsys, "sweep", "--hub-kubeconfig", str(broken))


# -- the demo snapshot ----------------------------------------------------------------------


def test_demo_run_exits_zero_with_json_lines_only() -> None:
    result = invoke("--snapshot", DEMO)
    assert result.return_value == 0
    lines = result.stdout.splitlines()
    assert lines
    parsed = [json.loads(line) for line in lines]  # every stdout line is one JSON record
    assert all(isinstance(p, dict) for p in parsed)
    kinds = [p["record"] for p in parsed]
    # items, then one line per upstream cluster, then the summary
    assert kinds == sorted(kinds, key=["item", "upstream", "summary"].index)
    assert kinds.count("upstream") == 3
    summary = parsed[-1]
    assert summary["record"] == "summary"
    assert summary["exit_code"] == 0
    assert summary["dry_run"] is True
    assert summary["min_age_seconds"] == 300  # the default 5m


def test_demo_without_upstreams_and_no_explicit_sweep(tmp_path: Path) -> None:
    # routes only "not-configured" when not asked for explicitly
    snapshot = _hub_only_snapshot(tmp_path)
    result = invoke("--snapshot", str(snapshot))
    assert result.return_value == 0
    assert summary_of(result)["sweeps"]["routes"]["status"] == "not-configured"


def test_sweep_flag_selects_sweeps() -> None:
    result = invoke("--snapshot", DEMO, "--sweep", "bindings")
    assert result.return_value == 0
    assert list(summary_of(result)["sweeps"]) == ["bindings"]
    assert {i["sweep"] for i in items_of(result)} == {"bindings"}


# -- environment ----------------------------------------------------------------------------


def test_env_min_age() -> None:
    result = invoke("--snapshot", DEMO, env={"GCJOB_MIN_AGE": "10m"})
    assert result.return_value == 0
    assert summary_of(result)["min_age_seconds"] == 600


def test_env_namespaces_comma_separated() -> None:
    result = invoke("--snapshot", DEMO, env={"GCJOB_NAMESPACE": f"{WEB},{SHOP}"})
    assert result.return_value == 0
    namespaces = {i["namespace"] for i in items_of(result)}
    assert namespaces == {WEB, SHOP}


def test_env_delete_is_ignored_and_warned_about() -> None:
    result = invoke("--snapshot", DEMO, env={"GCJOB_DELETE": "true"})
    assert result.return_value == 0
    summary = summary_of(result)
    assert summary["dry_run"] is True
    assert summary["totals"]["deleted"] == 0
    assert all(i["dry_run"] is True for i in items_of(result))
    assert "GCJOB_DELETE" in result.stderr


def test_env_other_flags() -> None:
    result = invoke(
        "--snapshot",
        DEMO,
        env={"GCJOB_SWEEP": "companions", "GCJOB_REPORT_HEALTHY": "true"},
    )
    assert result.return_value == 0
    assert list(summary_of(result)["sweeps"]) == ["companions"]
    assert "referrer-live" in {i["reason"] for i in items_of(result)}


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--output", "text"), {}),
        (("--log-format", "text"), {}),
        ((), {"GCJOB_OUTPUT": "text"}),
        ((), {"GCJOB_LOG_FORMAT": "text"}),
    ],
)
def test_output_and_its_older_name_log_format_are_one_choice(
    args: tuple[str, ...], env: dict[str, str]
) -> None:
    """issue 51 item 11: sweep, explain and restore name the choice --output; --log-format,
    in the shipped CronJob and users' overlays, is the same option."""
    result = invoke("--snapshot", DEMO, *args, env=env)
    assert result.return_value == 0
    assert "exit 0: completed" in result.stdout
    for command in ("sweep", "explain", "restore"):
        [option] = [p for p in cli.commands[command].params if "--output" in p.opts]
        assert option.opts == ["--output", "--log-format"], command


def test_flag_wins_over_env_min_age() -> None:
    result = invoke("--snapshot", DEMO, "--min-age", "1m", env={"GCJOB_MIN_AGE": "10m"})
    assert summary_of(result)["min_age_seconds"] == 60


def test_flag_wins_over_env_namespace() -> None:
    result = invoke("--snapshot", DEMO, "--namespace", ALPHA, env={"GCJOB_NAMESPACE": WEB})
    assert result.return_value == 0
    assert {i["namespace"] for i in items_of(result)} == {ALPHA}


def test_repeated_namespace_flag() -> None:
    result = invoke("--snapshot", DEMO, "--namespace", SHOP, "--namespace", ALPHA)
    assert {i["namespace"] for i in items_of(result)} == {SHOP, ALPHA}


def test_exclude_namespace_from_env() -> None:
    result = invoke("--snapshot", DEMO, env={"GCJOB_EXCLUDE_NAMESPACE": f"{WEB},{SHOP}"})
    namespaces = {i["namespace"] for i in items_of(result)}
    assert namespaces
    assert not namespaces & {WEB, SHOP}


def test_report_file(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    result = invoke("--snapshot", DEMO, "--report-file", str(path))
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["summary"] == summary_of(result)
    assert document["items"] == items_of(result)


def test_an_unwritable_report_file_is_refused_before_anything_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "missing-dir" / "report.json"
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "--snapshot", str(DEMO), "--report-file", str(target)])
    captured = capsys.readouterr()
    assert exit_info.value.code == 2
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "--report-file" in captured.err


def test_repeatable_sweep_flag_from_the_environment_is_comma_separated() -> None:
    result = invoke("--snapshot", DEMO, env={"GCJOB_SWEEP": "companions,bindings"})

    assert result.return_value == 0
    assert list(summary_of(result)["sweeps"]) == ["companions", "bindings"]


def test_a_report_file_that_fails_at_the_end_is_told_in_the_summary_too() -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    result = invoke("--snapshot", DEMO, "--report-file", "/dev/full")

    assert result.return_value == 1
    summary = summary_of(result)
    assert summary["exit_code"] == 1
    assert "cannot write --report-file" in summary["exit_reason"]


def test_a_notify_webhook_that_is_not_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, "--notify-webhook", "hooks.slack.com")
    assert "--notify-webhook" in line
    assert "http(s) URL" in line


# -- bad and hostile input (issue 12) -------------------------------------------------------


def test_help_fits_80_columns() -> None:
    result = CliRunner().invoke(cli, ["sweep", "--help"], standalone_mode=False, terminal_width=80)
    assert result.exit_code == 0
    too_wide = [line for line in result.stdout.splitlines() if len(line) > 80]
    assert too_wide == []


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [
        ("--namespace", "", "an empty namespace"),
        ("--namespace", " ", "an empty namespace"),
        ("--namespace", ".", "'.' is not a namespace name"),
        ("--namespace", "Ns-A", "'Ns-A' is not a namespace name"),
        ("--namespace", "ns-a,", "an empty namespace"),
        ("--exclude-namespace", "", "an empty namespace"),
        ("--exclude-namespace", "a/b", "'a/b' is not a namespace name"),
    ],
)
def test_a_namespace_filter_that_names_no_namespace_is_refused(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, named: str
) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, flag, value)
    assert f"Invalid value for {flag}: {named}" in line


@pytest.mark.parametrize("variable", ["GCJOB_NAMESPACE", "GCJOB_EXCLUDE_NAMESPACE"])
@pytest.mark.parametrize("value", ["", ",", " , ", "ns-a,,ns-b"])
def test_an_empty_namespace_from_the_environment_is_refused_naming_the_variable(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
) -> None:
    monkeypatch.setenv(variable, value)
    line = usage_error(capsys, "sweep", "--snapshot", DEMO)
    assert f"Invalid value for {variable}: an empty namespace" in line


def test_the_summary_names_the_namespaces_in_scope() -> None:
    everything = summary_of(invoke("--snapshot", DEMO))
    assert everything["namespaces"] == {"included": "all but reserved", "excluded": []}
    some = summary_of(invoke("--snapshot", DEMO, "--namespace", WEB, "--exclude-namespace", SHOP))
    assert some["namespaces"] == {"included": [WEB], "excluded": [SHOP]}


@pytest.mark.parametrize(
    "flags",
    [
        ("--namespace", WEB, "--exclude-namespace", WEB),
        ("--namespace", f"{SHOP},{WEB}", "--exclude-namespace", f"ns-x,{WEB}"),
    ],
)
def test_a_namespace_both_included_and_excluded_is_refused(
    capsys: pytest.CaptureFixture[str], flags: tuple[str, ...]
) -> None:
    """Issue 20 item 17: it used to sweep nothing and exit 0."""
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, *flags)
    assert f"{WEB} is both included and excluded" in line


def test_a_namespace_the_hub_does_not_have_is_warned_about_not_failed() -> None:
    result = invoke("--snapshot", DEMO, "--namespace", WEB, "--namespace", "ns-typo")
    assert result.return_value == 0
    summary = summary_of(result)
    assert summary["namespaces"]["not_found"] == ["ns-typo"]
    assert "unchecked" not in summary["namespaces"]
    assert "--namespace ns-typo: no such namespace on the hub" in result.stderr


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--max-delete-percent", "nan"),
        ("--max-delete-percent", "inf"),
        ("--delete-qps", "nan"),
        ("--delete-qps", "inf"),
    ],
)
def test_non_finite_numbers_are_refused(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, flag, value)
    assert f"'{flag}': " in line
    assert "is not a finite number" in line or "is not in the range" in line


@pytest.mark.parametrize("flag", ["--connect-timeout", "--read-timeout"])
def test_a_zero_request_timeout_is_refused(capsys: pytest.CaptureFixture[str], flag: str) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, flag, "0s")
    assert "must be more than 0s" in line


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--lock-name", ""),
        ("--lock-name", "Bad_Name"),
        ("--lock-namespace", ""),
        ("--lock-namespace", "a.b"),
    ],
)
def test_an_invalid_lock_name_is_refused(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, flag, value)
    assert f"Invalid value for {flag}: {value!r} is not a" in line


def test_a_bad_value_from_the_environment_names_the_variable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GCJOB_MIN_AGE", "abc")
    line = usage_error(capsys, "sweep", "--snapshot", DEMO)
    assert "Invalid value for GCJOB_MIN_AGE: 'abc' is not a duration" in line
    assert "--min-age" not in line


def test_the_same_bad_value_from_the_flag_names_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, "--min-age", "abc")
    assert "'--min-age': 'abc' is not a duration" in line


def test_list_from_is_auto_cache_or_pages(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, "--list-from", "disk")
    assert "'--list-from'" in line
    assert "'disk' is not one of 'auto', 'cache', 'pages', 'etcd'" in line
    import gcjob.lifecycle

    seen: list[str] = []
    monkeypatch.setattr(
        gcjob.lifecycle, "run_sweep", lambda s, _budget: seen.append(s.list_from) or 0
    )
    for value in ("auto", "cache", "pages", "etcd"):
        assert invoke("--snapshot", DEMO, "--list-from", value).return_value == 0
    assert seen == ["auto", "cache", "pages", "pages"]  # etcd: the old name of pages


# -- nothing raw reaches a terminal (issue 12 item 3) ---------------------------------------

HOSTILE = (
    "\n\x1b[32mwould-delete  bindings  ResourceBinding  x/forged\x1b[0m\x1b]0;pwned\x07\x9b\u202e"
)
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e")


def _hostile_snapshot(tmp_path: Path) -> Path:
    """A snapshot (names there are not validated) with a binding whose name and spec.resource
    carry a forged report line, colours, a terminal title and a bidi override."""
    snapshot = _hub_only_snapshot(tmp_path)
    rb = {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": f"evil{HOSTILE}-configmap",
            "namespace": WEB,
            "uid": "u-1",
            "resourceVersion": "1",
            "creationTimestamp": "2026-11-01T00:00:00Z",
            "annotations": {"propagationpolicy.karmada.io/name": "city-dfw"},
        },
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": HOSTILE}},
    }
    (snapshot / "hub" / "rb.json").write_text(json.dumps(rb))
    return snapshot


def test_text_output_escapes_control_characters_from_the_cluster(tmp_path: Path) -> None:
    result = invoke("--snapshot", str(_hostile_snapshot(tmp_path)), "--log-format", "text")
    for raw in RAW_CONTROLS:
        assert raw not in result.stdout and raw not in result.stderr
    items = [line for line in result.stdout.splitlines() if "ResourceBinding" in line]
    assert len(items) == 1, result.stdout  # one record, one line: no forged second line
    assert items[0].startswith("skipped ")
    assert "[resource-mismatch]" in items[0]
    assert "\\x1b[32mwould-delete" in items[0]  # shown, not acted on
    assert not [line for line in result.stdout.splitlines() if line.startswith("would-delete")]


def test_json_output_escapes_c1_and_bidi_and_keeps_the_value(tmp_path: Path) -> None:
    result = invoke("--snapshot", str(_hostile_snapshot(tmp_path)))
    for raw in RAW_CONTROLS:
        assert raw not in result.stdout
    (item,) = [r for r in records(result) if r.get("kind") == "ResourceBinding"]
    assert item["name"] == f"evil{HOSTILE}-configmap"
    assert item["reason"] == "resource-mismatch"


# -- a closed stdout (issue 12 item 8) -------------------------------------------------------


def into_closed_stdout(*argv: str) -> tuple[int, str]:
    """gcjob in a child process whose stdout reader goes away before gcjob starts writing:
    its exit code and stderr."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gcjob", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.close()
    _, err = process.communicate(timeout=60)
    return process.returncode, err


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_closed_stdout_ends_the_run_quietly_and_the_report_file_is_written(
    tmp_path: Path, log_format: str
) -> None:
    """`gcjob sweep ... | head -1`: the reader is gone before the report is. No traceback, no
    `--- Logging error ---`: the run stops as a signal would, says so in one line on stderr,
    and exits 5 with the whole report in --report-file."""
    report = tmp_path / "report.json"
    argv = ["sweep", "--snapshot", DEMO, "--report-file", str(report), "--log-format", log_format]
    returncode, err = into_closed_stdout(*argv)

    assert returncode == ExitCode.STOPPED == 5, err
    for noise in ("Traceback", "Logging error", "Exception ignored", "BrokenPipe"):
        assert noise not in err
    assert len(err.strip().splitlines()) == 1, err
    assert "run stopped: stdout closed" in err
    summary = json.loads(report.read_text(encoding="utf-8"))["summary"]
    assert summary["exit_code"] == 5
    assert {s["status"] for s in summary["sweeps"].values()} == {"stopped"}
    assert "stdout closed" in summary["sweeps"]["companions"]["detail"]


@pytest.mark.parametrize("output", ["json", "text"])
def test_explain_into_a_closed_stdout_says_so_in_one_line_and_exits_5(output: str) -> None:
    """`gcjob explain ... | head -1` with the reader gone first: not a silent exit 1."""
    target = "cm/ns-4b1f7c2a-9e3d-4a6b-8c1d-2e5f6a7b8c9d/api-config"
    returncode, err = into_closed_stdout("explain", target, "--snapshot", DEMO, "--output", output)

    assert returncode == ExitCode.STOPPED, err
    for noise in ("Traceback", "Exception ignored", "BrokenPipe"):
        assert noise not in err
    assert err.splitlines() == [
        "gcjob: error: stdout closed before the explanation was written out"
    ]


@pytest.mark.parametrize("value", ["0", "257", "x"])
def test_upstream_concurrency_is_1_to_256(capsys: pytest.CaptureFixture[str], value: str) -> None:
    line = usage_error(capsys, "sweep", "--snapshot", DEMO, "--upstream-concurrency", value)
    assert "'--upstream-concurrency'" in line


def test_upstream_concurrency_does_not_change_the_report() -> None:
    one = records(invoke("--snapshot", DEMO, "--upstream-concurrency", "1"))
    many = records(invoke("--snapshot", DEMO))
    strip = ("run_id", "time", "started", "finished")
    assert [{k: v for k, v in r.items() if k not in strip} for r in one] == [
        {k: v for k, v in r.items() if k not in strip} for r in many
    ]
