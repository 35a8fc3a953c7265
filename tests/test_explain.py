"""`gcjob explain` over the demo snapshot: its verdict is the sweep's, for every object."""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gcjob.cli import cli, main
from gcjob.decide.explanation import SWEEP_OF
from gcjob.domain import TARGET_KINDS, target_kinds_said
from gcjob.exitcodes import ExitCode
from gcjob.explain import Target, parse_target
from gcjob.report.explain_output import escape
from gcjob.sweeps.explaining import KIND_RESOURCES
from testbed import schemas

DEMO = "fixtures/demo"
WEB = "ns-4b1f7c2a-9e3d-4a6b-8c1d-2e5f6a7b8c9d"
SHOP = "ns-c7e2a9d4-1b3f-4e8a-a6d2-5f9b0c1e3a7d"
SHORT = {"ConfigMap": "cm", "Secret": "secret", "ResourceBinding": "rb", "HTTPRoute": "httproute"}


@pytest.fixture(autouse=True)
def keep_log_handlers() -> Iterator[None]:
    log = logging.getLogger("gcjob")
    handlers = list(log.handlers)
    yield
    log.handlers[:] = handlers


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), standalone_mode=False, catch_exceptions=False)
    return int(result.return_value), result.stdout


def explain_json(target: str, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out = run("explain", target, "--snapshot", DEMO, "--output", "json", *extra)
    return code, json.loads(out)


def demo_sweep_items(grace: str) -> list[dict[str, Any]]:
    code, out = run("sweep", "--snapshot", DEMO, "--report-healthy", "--grace", grace)
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    return [r for r in records if r["record"] == "item"]


@pytest.mark.timeout(300)  # an explain a demo object, every sweep's: 2 minutes under load
@pytest.mark.parametrize("grace", ["0", "10m"])  # deleted on the first look, or marked first
def test_explain_agrees_with_the_sweep_on_every_demo_object(grace: str) -> None:
    items = demo_sweep_items(grace)
    assert len(items) > 40  # every case of every sweep
    swept = {(i["kind"], i["namespace"], i["name"]): (i["action"], i["reason"]) for i in items}
    validator = schemas.EXPLAIN
    for item in items:
        target = f"{SHORT[item['kind']]}/{item['namespace']}/{item['name']}"
        code, explained = explain_json(target, "--grace", grace)
        validator.validate(explained)
        verdict = explained["verdict"]
        assert (verdict["action"], verdict["reason"]) == (item["action"], item["reason"]), target
        assert code == 0
        # The sweep's hub check first (not yet in a copy's trace: issue 48, left open); every
        # step names its evidence.
        if item["sweep"] != "copies":
            assert explained["steps"][0]["rule"] == "karmada-hub", target
        assert all(s["evidence"] for s in explained["steps"]), target
        # Deleted: the last rule passed; anything else: a rule held it back, and says so.
        own = [s for s in explained["steps"] if s["object"] == verdict["object"]]
        if item["action"] == "would-delete":
            assert own[-1]["outcome"] == "passed", target
        else:
            assert "held back" in {s["outcome"] for s in own}, target
        if item["action"] == "would-mark":
            assert [s for s in explained["steps"] if s["rule"] == "grace"], target
        if item["sweep"] == "copies":  # a copy has no binding
            assert explained["binding"] is None, target
        elif item["kind"] in ("ConfigMap", "Secret"):  # its binding, as the same sweep treats it
            binding = explained["binding"]
            key = ("ResourceBinding", item["namespace"], binding["object"].rpartition("/")[2])
            if binding["action"] == "not-found":
                assert key not in swept, target
            else:
                assert (binding["action"], binding["reason"]) == swept[key], target
        else:
            assert explained["binding"] is None


def test_a_companion_trace_says_what_happens_to_its_binding() -> None:
    code, explained = explain_json(f"cm/{SHOP}/orphan-app-config", "--grace", "0")
    assert code == 0
    assert explained["verdict"]["reason"] == "orphaned"
    assert explained["binding"]["action"] == "would-delete"
    assert explained["binding"]["reason"] == "companion-deleted"
    rules = [s["rule"] for s in explained["steps"]]
    assert rules == [
        "karmada-hub",
        "object",
        "in-scope",
        "referrers-readable",
        "referrers-gone",
        "not-owned",
        "not-terminating",
        "pinnable",
        "old-enough",
        "not-protected",
        "grace",
        "binding-names-companion",
        "binding-not-terminating",
        "binding-not-owned",
        "binding-not-protected",
    ]
    gone = explained["steps"][4]
    assert gone["reads"] == [f"GET workloaddeployments/web-dfw in {SHOP} -> 404 NotFound"]


def test_a_kept_companion_keeps_its_binding_by_the_bindings_sweeps_rules() -> None:
    code, explained = explain_json(f"cm/{WEB}/api-config")
    assert code == 0
    assert explained["verdict"]["reason"] == "referrer-live"
    assert explained["binding"]["reason"] == "object-exists"
    last = explained["steps"][-1]
    assert (last["object"], last["rule"], last["outcome"]) == (
        f"ResourceBinding {WEB}/api-config-configmap",
        "object-absent",
        "held back",
    )


def test_mismatched_binding_of_an_orphan_is_kept_and_says_why() -> None:
    _, explained = explain_json(f"cm/{WEB}/mismatched-binding-config")
    assert explained["binding"]["reason"] == "binding-mismatch"
    assert explained["steps"][-1]["outcome"] == "held back"


def test_absent_object_is_explained_as_not_found_with_exit_0() -> None:
    code, explained = explain_json(f"secret/{WEB}/no-such-secret")
    assert code == ExitCode.OK
    assert explained["verdict"]["action"] == "not-found"
    assert explained["steps"][1]["reads"] == [
        f"GET secrets/no-such-secret in {WEB} -> 404 NotFound"
    ]


def test_text_is_numbered_with_the_verdict_last_and_plain_off_a_terminal() -> None:
    code, out = run("explain", f"httproute/{WEB}/orphan-route", "--snapshot", DEMO, "--grace", "0")
    assert code == 0
    lines = out.splitlines()
    assert lines[1].startswith(" 1. karmada-hub: passed")
    assert any(line.startswith(" 2. object: passed") for line in lines)
    assert lines[-1].startswith("verdict: would-delete (upstream-gateways-gone)")
    assert "\033" not in out
    assert "upstream single: GET gateways/deleted-gateway in default -> 404 NotFound" in out


def test_escape_neutralises_control_characters() -> None:
    assert escape("a\x1b[31mb\nc") == "a\\x1b[31mb\\nc"
    assert escape("plain text / ok") == "plain text / ok"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cm/ns-a/app-config", Target("ConfigMap", "ns-a", "app-config")),
        ("configmap/ns-a/x", Target("ConfigMap", "ns-a", "x")),
        ("Secret/ns-a/x", Target("Secret", "ns-a", "x")),
        ("rb/ns-a/x-configmap", Target("ResourceBinding", "ns-a", "x-configmap")),
        ("resourcebinding/ns-a/x", Target("ResourceBinding", "ns-a", "x")),
        ("httproute/ns-a/web", Target("HTTPRoute", "ns-a", "web")),
    ],
)
def test_targets(text: str, expected: Target) -> None:
    assert parse_target(text) == expected


@pytest.mark.parametrize(
    "text",
    ["cm/app-config", "cm//x", "deployment/ns/x", "cm/ns/x/y", "", "cm/NS/x", "rb/ns/x_y"],
)
def test_bad_target_is_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str], text: str
) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["explain", text, "--snapshot", DEMO])
    assert raised.value.code == ExitCode.USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gcjob: error: "), captured.err
    assert "gcjob explain --help" in lines[0]


def test_a_route_without_an_upstream_is_a_usage_error(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(f"{DEMO}/hub", tmp_path / "hub")  # the demo's hub, none of its upstreams
    with pytest.raises(SystemExit) as raised:
        main(["explain", f"httproute/{WEB}/web", "--snapshot", str(tmp_path)])
    assert raised.value.code == ExitCode.USAGE
    assert "needs its upstream: add DIR/upstream/<cluster>/" in capsys.readouterr().err


def test_a_snapshot_refuses_live_upstream_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["explain", f"cm/{WEB}/x", "--snapshot", DEMO, "--upstream-kubeconfig", "k"])
    assert raised.value.code == ExitCode.USAGE
    assert "drop --upstream-kubeconfig" in capsys.readouterr().err


def test_the_docs_examples_are_what_explain_prints() -> None:
    """docs/explain.md's examples; `python tools/regen_explain_examples.py` rewrites them."""
    page = (Path(__file__).parents[1] / "docs" / "explain.md").read_text("utf-8")
    blocks = re.findall(r"```\n\$ gcjob (explain [^\n]*)\n(.*?)\n```", page, re.S)
    assert len(blocks) == 4  # one of each kind
    assert {b[0].split()[1].split("/")[0] for b in blocks} == {"cm", "secret", "rb", "httproute"}
    for command, printed in blocks:
        code, out = run(*command.split())
        assert code == 0
        assert out.rstrip("\n") == printed, command


def test_the_sweeps_namespace_flags_set_what_is_in_scope(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, excluded = explain_json(f"cm/{WEB}/api-config", "--exclude-namespace", WEB)
    _, elsewhere = explain_json(f"cm/{WEB}/api-config", "--namespace", SHOP)
    _, included = explain_json(f"cm/{WEB}/api-config", "--namespace", WEB)
    for doc in (excluded, elsewhere):
        assert (doc["verdict"]["action"], doc["verdict"]["reason"]) == ("skipped", "out-of-scope")
        assert doc["steps"][-1]["evidence"].endswith("outside --namespace/--exclude-namespace")
    assert included["verdict"]["reason"] == "referrer-live"
    with pytest.raises(SystemExit) as raised:
        main(["explain", f"cm/{WEB}/x", "--snapshot", DEMO, "--namespace", "kube-system"])
    assert raised.value.code == ExitCode.USAGE
    assert "reserved" in capsys.readouterr().err


def test_every_kind_explain_takes_is_in_its_help_its_page_and_its_sweeps_tables() -> None:
    """One table (domain.TARGET_KINDS) names what explain and restore take: each kind parses
    by each of its names, and is listed by `explain --help` and docs/explain.md; each is a kind
    the sweeps know how to name before reading (SWEEP_OF, KIND_RESOURCES)."""
    help_text = " ".join(CliRunner().invoke(cli, ["explain", "--help"]).stdout.split())
    page = " ".join((Path(__file__).parents[1] / "docs" / "explain.md").read_text("utf-8").split())
    for name, kind in TARGET_KINDS.items():
        assert parse_target(f"{name.upper()}/ns-a/x").kind == kind
        assert kind in SWEEP_OF and kind in KIND_RESOURCES
    for said in target_kinds_said().split(", "):
        kind = said.split(" (")[0]
        assert said in help_text
        assert f"`{kind}`" in page, kind
