"""gcjob/flags.py: the flags and their environment twins: each flag's GCJOB_* variable is named on
its option, and no variable at all turns on --delete or sets --now: not GCJOB_DELETE, not the
`GCJOB_SWEEP_*` names click's `auto_envvar_prefix` would make, not any other GCJOB_* name."""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gcjob.lifecycle
from gcjob.cli import cli
from gcjob.flags import TwinnedOption
from gcjob.settings import IGNORED_VARIABLES, NO_BLANK, Settings

# Values that read as "on" to click's flags (it reads 1, true, t, yes, y, on alike, in any
# case), and a time for --now.
TRUTHY = ("1", "True", "yes", "--delete", "2030-01-01T00:00:00Z")


def candidate_names() -> list[str]:
    """Every GCJOB_* name a flag could be read from: each option's and flag's own name, with and
    without the command's name in it (as `auto_envvar_prefix` would make), --delete's and
    --now's among them."""
    names = {"GCJOB_DELETE", "GCJOB_NOW", "GCJOB_SWEEP_DELETE", "GCJOB_SWEEP_NOW"}
    for command_name, command in cli.commands.items():
        for param in command.params:
            spelt = [o.lstrip("-") for o in (*param.opts, *param.secondary_opts)]
            for name in {*spelt, param.name or ""} - {""}:
                name = name.upper().replace("-", "_")
                names.add(f"GCJOB_{name}")
                names.add(f"GCJOB_{command_name.upper()}_{name}")
    return sorted(names)


@pytest.fixture(autouse=True)
def clean_process_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No ambient GCJOB_*; the signal handlers and log handlers a sweep sets put back."""
    for key in list(os.environ):
        if key.startswith("GCJOB_"):
            monkeypatch.delenv(key)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    log_handlers = list(logging.getLogger("gcjob").handlers)
    yield
    for signum, handler in handlers.items():
        signal.signal(signum, handler)
    logging.getLogger("gcjob").handlers[:] = log_handlers


def settings_under(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings | None:
    """The Settings `gcjob sweep` (no flags) would run on with `env`; None: refused (exit 2)."""
    seen: list[Settings] = []
    monkeypatch.setattr(
        gcjob.lifecycle, "run_sweep", lambda s, _budget: seen.append(s) or 0, raising=True
    )
    result = CliRunner().invoke(cli, ["sweep"], env=env, standalone_mode=False)
    if result.exception is not None:
        assert isinstance(result.exception, click.ClickException), result.exception
        return None
    [made] = seen
    return made


ARGUMENTS = {"explain": ["cm/ns/x"], "restore": ["record.json"]}


def test_no_option_takes_delete_or_now_from_the_environment() -> None:
    for name, command in cli.commands.items():
        ctx = command.make_context(name, ARGUMENTS.get(name, []))
        assert ctx.auto_envvar_prefix is None
        for param in command.params:
            if param.name in ("delete", "now"):
                assert param.envvar is None, f"{name} --{param.name}"
    assert "auto_envvar_prefix" not in cli.context_settings


def test_no_environment_variable_turns_on_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    names = candidate_names()
    assert {"GCJOB_DELETE", "GCJOB_SWEEP_DELETE", "GCJOB_MIN_AGE", "GCJOB_DELETE_QPS"} <= set(names)
    made = 0
    for name in names:
        for value in TRUTHY:
            settings = settings_under({name: value}, monkeypatch)
            if settings is None:
                continue
            made += 1
            assert not settings.delete, f"{name}={value} turned on --delete"
            assert settings.now is None, f"{name}={value} set --now"
    # Not vacuous: most names with most values still make a run (GCJOB_DELETE=1 among them).
    assert made > len(names)
    settings = settings_under(
        {"GCJOB_DELETE": "1", "GCJOB_NOW": "2030-01-01T00:00:00Z"}, monkeypatch
    )
    assert settings is not None and not settings.delete and settings.now is None
    assert settings.ignored_variables == tuple(IGNORED_VARIABLES)  # the run warns of both


@settings(
    max_examples=max(10, settings().max_examples // 4),  # a CLI parse per example
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    env=st.dictionaries(
        st.sampled_from(candidate_names()),
        st.sampled_from(TRUTHY) | st.text(st.characters(codec="ascii"), max_size=8),
        max_size=12,
    )
)
def test_no_mix_of_variables_turns_on_delete(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    """Generated: any set of GCJOB_* variables, any values: refused, or a run without --delete
    deciding by the clock."""
    env = {k: v.replace("\x00", "") for k, v in env.items()}
    settings = settings_under(env, monkeypatch)
    if settings is not None:
        assert not settings.delete and settings.now is None


def test_every_flag_has_its_twin_named_after_it() -> None:
    """GCJOB_<FLAG_NAME>, as the docs say, for every flag of every command that has one."""
    for command in cli.commands.values():
        for param in command.params:
            if not isinstance(param, click.Option) or param.envvar is None:
                continue
            first = param.opts[0].removeprefix("--").upper().replace("-", "_")
            twins = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar)
            assert twins[0] == f"GCJOB_{first}", (command.name, param.opts)


def test_a_blank_twin_is_kept_only_where_settings_refuse_it() -> None:
    """A twin set to "" is a value (refused by Settings) for the flags that name a target, a
    file or a scope (--shard's part of the hub: its type refuses ""); for every other flag it
    is not set at all, as click reads it."""
    kept = {
        p.name
        for command in cli.commands.values()
        for p in command.params
        if isinstance(p, TwinnedOption) and p.keep_blank
    }
    assert kept == {*NO_BLANK, "namespaces", "exclude_namespaces", "shard"}
