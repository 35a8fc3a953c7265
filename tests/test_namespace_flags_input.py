"""--namespace / --exclude-namespace as generated input (issue 20 item 17): a namespace both
included and excluded is refused (exit 2, one line); any other combination runs, and every
named namespace the hub lacks is named in the summary, never silently swept as empty."""

from __future__ import annotations

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from gcjob.cli import cli
from tests.test_cli import DEMO, SHOP, WEB, records

NAMES = st.sampled_from([WEB, SHOP, "ns-missing", "default", "kube-system", "Bad_Name", ""])


@settings(max_examples=max(5, settings().max_examples // 10))
@given(st.lists(NAMES, max_size=3), st.lists(NAMES, max_size=3))
def test_any_namespace_flags_are_a_run_or_one_refusal(
    included: list[str], excluded: list[str]
) -> None:
    argv = ["sweep", "--snapshot", DEMO, "--grace", "0"]
    argv += [a for ns in included for a in ("--namespace", ns)]
    argv += [a for ns in excluded for a in ("--exclude-namespace", ns)]
    result = CliRunner().invoke(cli, argv)  # standalone: click turns a refusal into exit 2
    valid = {WEB, SHOP, "ns-missing", "default"}
    refused = (
        any(ns not in valid | {"kube-system"} for ns in included + excluded)
        or "kube-system" in included
        or bool(set(included) & set(excluded))
    )
    if refused:
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        return
    assert result.exit_code == 0, result.output
    summary = records(result)[-1]
    missing = [ns for ns in dict.fromkeys(included) if ns == "ns-missing"]  # not in the demo
    assert summary["namespaces"].get("not_found", []) == missing
