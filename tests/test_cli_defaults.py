"""Every flag's default is the Settings field's default: cli.py reads them from gcjob.settings,
and these tests fail the day one of them is written down twice and drifts."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import gcjob.lifecycle
from gcjob.cli import cli
from gcjob.kube.access import ReadLimits
from gcjob.model import Sweep
from gcjob.settings import EXPLAIN_TIMEOUT, Settings, parse_duration

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
DEFAULTS = Settings()
# Options whose Settings field has another name or sense; every other option is its field.
NEGATED = {"no_lock": "lock", "no_events": "events"}
# Options that are not a setting of the run.
NOT_SETTINGS = {"help", "output"}


def _command_options(name: str) -> list[click.Option]:
    command = cli.commands[name]
    return [p for p in command.params if isinstance(p, click.Option) and p.name not in NOT_SETTINGS]


def _default(command: str, option: click.Option) -> Any:
    """The value the option gives when neither the flag nor its variable is set."""
    args = ["configmap/ns/name"] if command == "explain" else []
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("GCJOB_")}
    try:
        ctx = cli.commands[command].make_context(command, args)
    finally:
        os.environ.update(saved)
    assert option.name is not None
    return ctx.params[option.name]


def _as_field(name: str, value: Any) -> tuple[str, Any]:
    if name in NEGATED:
        return NEGATED[name], not value
    if name == "sweeps":  # none named: every sweep
        return name, tuple(Sweep(s) for s in value) or tuple(Sweep)
    return name, value


@pytest.mark.parametrize("option", _command_options("sweep"), ids=lambda p: p.name)
def test_each_sweep_flag_defaults_to_the_settings_default(option: click.Option) -> None:
    assert option.name is not None
    field, value = _as_field(option.name, _default("sweep", option))
    assert hasattr(DEFAULTS, field), f"--{option.name} has no Settings field"
    assert value == getattr(DEFAULTS, field), f"--{option.name} defaults apart from Settings"


@pytest.mark.parametrize("option", _command_options("explain"), ids=lambda p: p.name)
def test_each_explain_flag_defaults_to_the_settings_default(option: click.Option) -> None:
    assert option.name is not None
    field, value = _as_field(option.name, _default("explain", option))
    # explain reads one object: its own, shorter, --timeout, named in gcjob.settings.
    expected = parse_duration(EXPLAIN_TIMEOUT) if field == "timeout" else getattr(DEFAULTS, field)
    assert value == expected, f"explain --{option.name} defaults apart from Settings"


def test_the_read_timeout_is_the_documented_15s_everywhere() -> None:
    """The drift this file guards against: --help said 15s while Settings held 30s."""
    assert DEFAULTS.read_timeout == timedelta(seconds=15)
    [option] = [p for p in _command_options("sweep") if p.name == "read_timeout"]
    assert _default("sweep", option) == timedelta(seconds=15)


def test_an_upstream_clusters_budget_defaults_to_the_read_limits() -> None:
    """ReadLimits (the kube layer, below settings) keeps its own defaults: they must agree."""
    limits = ReadLimits()
    assert DEFAULTS.upstream_max_pages == limits.pages
    assert DEFAULTS.upstream_max_items == limits.items
    assert DEFAULTS.upstream_max_mib * 1024 * 1024 == limits.bytes
    assert DEFAULTS.upstream_max_time.total_seconds() == limits.seconds


def test_a_sweep_without_flags_runs_on_the_settings_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """End to end through click: no flag, no variable -> exactly Settings() (bar the snapshot
    the test needs to stay offline)."""
    seen: list[Settings] = []
    monkeypatch.setattr(
        gcjob.lifecycle, "run_sweep", lambda settings, _budget: seen.append(settings) or 0
    )
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("GCJOB_")}
    result = CliRunner().invoke(
        cli, ["sweep", "--snapshot", str(DEMO)], env=unset, standalone_mode=False
    )
    assert result.exception is None, result.output
    [settings] = seen
    assert settings == Settings(snapshot=str(DEMO))
