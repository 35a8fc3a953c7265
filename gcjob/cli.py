"""The `gcjob` command line: flags and environment -> Settings -> one run -> exit code.

The flags are declared in gcjob/flags.py; Settings check themselves (gcjob/settings.py). Here
each command names its flags, maps them to Settings, and hands them to gcjob/lifecycle.py."""

from __future__ import annotations

import dataclasses
import io
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import click
from click.core import ParameterSource

from gcjob import __version__, flags
from gcjob.budget import RunBudget, stop_on_signals
from gcjob.domain import TARGET_KINDS, target_kinds_said
from gcjob.exitcodes import ExitCode, table
from gcjob.model import Sweep
from gcjob.settings import LIST_FROM_ALIASES, Settings, SettingsError
from gcjob.visible import visible

EPILOG = (
    "Every flag but --delete (and the hidden --now) can also be set as GCJOB_<FLAG_NAME> "
    "(repeatable ones "
    "comma-separated), e.g. GCJOB_MIN_AGE=10m.\n\nExit codes (most severe first wins: "
    "70, 2, 6, 5, 4, 3, 1, 0):\n\n\b\n" + table()
)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="gcjob")
def cli() -> None:
    """Deletes what multi-cluster controllers leave behind on a Karmada hub."""


@cli.command(epilog=EPILOG)
@flags.DELETE
@flags.HUB_KUBECONFIG
@flags.HUB_CONTEXT
@flags.SWEEP
@flags.MIN_AGE
@flags.NAMESPACE
@flags.EXCLUDE_NAMESPACE
@flags.SNAPSHOT
@flags.REPORT_FILE
@flags.RECORD_DELETIONS
@flags.LOG_FORMAT
@flags.REPORT_HEALTHY
@flags.PAGE_SIZE
@flags.LIST_FROM_OPTION
@flags.UPSTREAM_KUBECONFIG
@flags.UPSTREAM_SERVER_TEMPLATE
@flags.GRACE
@flags.DELETION_STALLED_AFTER
@flags.ENFORCE
@flags.DROP_COPY_KIND
@flags.PROJECT_API
@flags.MAX_PROJECTS_GONE
@flags.CLOCK_SKEW
@flags.NAMESPACES_MAX_INSPECTED
@flags.READ_UPSTREAM_SECRETS
@flags.MAX_MARKS
@flags.NOW
@flags.UPSTREAM_CONCURRENCY
@flags.UPSTREAM_MAX_PAGES
@flags.UPSTREAM_MAX_ITEMS
@flags.UPSTREAM_MAX_MIB
@flags.UPSTREAM_MAX_TIME
@flags.MAX_DELETIONS
@flags.MAX_DELETE_PERCENT
@flags.BRAKE_MIN_OBJECTS
@flags.SUSPECT_MIN_ROUTES
@flags.TIMEOUT
@flags.DRAIN
@flags.DRAIN_PACE
@flags.WRITE_QPS
@flags.MAX_WRITES
@flags.SHARD
@flags.NO_LOCK
@flags.NO_EVENTS
@flags.LOCK_NAMESPACE
@flags.LOCK_NAME
@flags.CONNECT_TIMEOUT
@flags.READ_TIMEOUT
@flags.LIST_TIMEOUT
@flags.PUSHGATEWAY
@flags.NOTIFY_WEBHOOK
@click.pass_context
def sweep(ctx: click.Context, /, **_: Any) -> int:
    """Find orphans on the hub and delete them (or, by default, only report them)."""
    settings = settings_of(
        ctx,
        ignored_variables=flags.ignored_variables(),
        completion_index=flags.completion_index(),
    )
    # The signals first: importing the run's modules takes most of a second.
    budget = RunBudget(settings.timeout.total_seconds())
    stop_on_signals(budget)
    # Imported here, not above: the run's modules bring the kubernetes client, which
    # `--version` and `--help` do not need (tests/test_startup.py holds it).
    from gcjob.lifecycle import run_sweep

    return run_sweep(settings, budget)


EXPLAIN_HELP = f"""Why a sweep would delete or keep one object: every rule, its evidence, the
verdict.

TARGET is KIND/NAMESPACE/NAME, KIND one of {target_kinds_said()} (any case, or the plural).
Read-only: no lock, no delete. Exit 0 explained (also when the object does not exist: verdict
not-found), 2 bad target or usage, 3 a read the verdict needs failed or an internal error on
this object (one line on stderr), 5 stdout closed before the explanation was written out.
"""
RESTORE_HELP = f"""Put back objects a `sweep --delete --record-deletions DIR` run deleted.

RECORD is one of that run's files in DIR. TARGETS name objects as explain does,
KIND/NAMESPACE/NAME (KIND one of {target_kinds_said()}, any case), or by the deleted object's
uid; without TARGETS, every object the run deleted. A dry run unless --apply.

What it will not do: put back a Secret (its data is never recorded: get it back from its
source) or a ResourceBinding that binds one (once the Secret is back, Karmada makes it again):
these are skipped, or refused when named as TARGETS. It creates only what gcjob deletes
(ConfigMaps, ResourceBindings, HTTPRoutes, the kinds NSO copies), never in a namespace gcjob
never sweeps, never over an existing object, never from another hub's record (unless
--other-hub). It points ownerReferences at live owners or drops them, and annotates each
restored object protect (docs/undo.md).

Exit 0 every object was (or would be) restored, or is one restore never puts back and was not
named (skipped: dry run and --apply alike); 1 one was refused or failed; 2 bad usage, a file
that is not a deletion record, or a target no entry names.
"""


def complete_target(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """A target's KIND/ as the shell completes it: every name explain and restore take for a
    kind (TARGET_KINDS), in lower case; NAMESPACE/NAME are the hub's, not completed."""
    if "/" in incomplete:
        return []
    return [
        click.shell_completion.CompletionItem(f"{name}/")
        for name in sorted(TARGET_KINDS)
        if name.startswith(incomplete.lower())
    ]


@cli.command(help=EXPLAIN_HELP)
@click.argument("target", shell_complete=complete_target)
@flags.HUB_KUBECONFIG
@flags.HUB_CONTEXT
@flags.UPSTREAM_KUBECONFIG
@flags.UPSTREAM_SERVER_TEMPLATE
@flags.EXPLAIN_SNAPSHOT
@flags.MIN_AGE
@flags.GRACE
@flags.NOW
@flags.NAMESPACE
@flags.EXCLUDE_NAMESPACE
@flags.SUSPECT_MIN_ROUTES
@flags.DELETION_STALLED_AFTER
@flags.OUTPUT
@flags.CONNECT_TIMEOUT
@flags.READ_TIMEOUT
@flags.LIST_TIMEOUT
@flags.EXPLAIN_READ_TIMEOUT
@click.pass_context
def explain(ctx: click.Context, /, target: str, output: str, **_: Any) -> int:
    """EXPLAIN_HELP: its help is built from the kinds table, not from this docstring."""
    from gcjob.explain import parse_target  # here, not above: as in sweep()
    from gcjob.lifecycle import run_explain

    try:
        parsed = parse_target(target)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="TARGET") from None
    return run_explain(settings_of(ctx, sweeps=(parsed.sweep,)), parsed, output)


@cli.command(help=RESTORE_HELP)
@click.argument("record", type=click.Path(dir_okay=False))
@click.argument("targets", nargs=-1, shell_complete=complete_target)
@flags.HUB_KUBECONFIG
@flags.HUB_CONTEXT
@click.option("--apply", is_flag=True, help="Create the objects. Without it: say what would be.")
@flags.OUTPUT
@click.option(
    "--no-protect",
    is_flag=True,
    help="Do not annotate restored objects gcjob.datumapis.com/protect=true.",
)
@click.option(
    "--other-hub",
    is_flag=True,
    help="Restore objects the record says were deleted from another hub (or does not say "
    "which) on this one.",
)
@flags.CONNECT_TIMEOUT
@flags.READ_TIMEOUT
@flags.RESTORE_TIMEOUT
@click.pass_context
def restore(ctx: click.Context, /, record: str, targets: tuple[str, ...], **options: Any) -> int:
    """RESTORE_HELP: its help is built from the kinds table, not from this docstring."""
    from gcjob.explain import parse_target  # here, not above: as in sweep()
    from gcjob.lifecycle import run_restore

    parsed: list[Any] = []  # explain's Targets, and uids
    for target in targets:
        if "/" not in target:  # a deleted object's uid
            if not target.strip():
                raise click.BadParameter("an empty target", param_hint="TARGETS")
            parsed.append(target)
            continue
        try:
            parsed.append(parse_target(target))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="TARGETS") from None
    return run_restore(
        settings_of(ctx),
        record,
        tuple(parsed),
        apply=options["apply"],
        protect=not options["no_protect"],
        other_hub=options["other_hub"],
        output=options["output"],
    )


SETTINGS_FIELDS = frozenset(f.name for f in dataclasses.fields(Settings))


def settings_of(ctx: click.Context, **given: Any) -> Settings:
    """The one way the command line makes Settings: each of the command's options is the
    Settings field of its name (but those `_mapped` turns), `given` adds the rest. What
    Settings refuses is reported as the flag or the variable it came from, exit 2."""
    fields = {k: v for k, v in ctx.params.items() if k in SETTINGS_FIELDS}
    try:
        return Settings(**{**fields, **_mapped(ctx.params), **given})
    except SettingsError as exc:
        if exc.field is None:
            raise click.UsageError(exc.problem, ctx) from None
        raise click.BadParameter(exc.problem, ctx, param_hint=_hint(ctx, exc.field)) from None


def _mapped(params: dict[str, Any]) -> dict[str, Any]:
    """The options whose Settings field has another name, sense or form."""
    fields: dict[str, Any] = {}
    if "sweeps" in params:  # none named: every sweep
        fields["sweeps"] = tuple(Sweep(s) for s in params["sweeps"]) or tuple(Sweep)
        fields["sweeps_explicit"] = bool(params["sweeps"])
    if "enforce" in params:
        fields["enforce"] = tuple(Sweep(s) for s in params["enforce"])
    if "no_lock" in params:
        fields["lock"] = not params["no_lock"]
    if "no_events" in params:
        fields["events"] = not params["no_events"]
    if "list_from" in params:
        fields["list_from"] = LIST_FROM_ALIASES.get(params["list_from"], params["list_from"])
    for name in ("namespaces", "exclude_namespaces"):
        if name in params:
            fields[name] = _names(params[name])
    return fields


def _names(values: Iterable[str]) -> tuple[str, ...]:
    """Repeatable flags and comma-separated variables alike. An empty entry is kept, for
    Settings to refuse: `--namespace ''` must not widen the sweep to everything."""
    return tuple(dict.fromkeys(n.strip() for value in values for n in value.split(",")))


def _hint(ctx: click.Context, field: str) -> str:
    """The flag, or the variable, that the setting `field` came from."""
    for param in ctx.command.params:
        if param.name == field and param.opts:
            source = ctx.get_parameter_source(field)
            if source is ParameterSource.ENVIRONMENT and isinstance(param.envvar, str):
                return param.envvar
            return param.opts[0]
    return field


def _name_the_variable(exc: click.ClickException) -> None:
    """A bad value from GCJOB_MIN_AGE is reported as GCJOB_MIN_AGE, not as --min-age."""
    if not isinstance(exc, click.BadParameter) or exc.param is None or exc.ctx is None:
        return
    param = exc.param
    if param.name and exc.ctx.get_parameter_source(param.name) is ParameterSource.ENVIRONMENT:
        envvar = param.envvar if isinstance(param.envvar, str) else None
        if envvar:
            exc.param_hint = envvar


def utf8_output() -> None:
    """The report and the logs are UTF-8 whatever the locale: names and annotations are, and
    PYTHONIOENCODING=ascii or LC_ALL=POSIX must not make one of them end the run. A lone
    surrogate (not UTF-8 at all) is written escaped rather than failing."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(encoding="utf-8", errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> None:
    utf8_output()
    try:
        result = cli.main(args=argv, prog_name="gcjob", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        exc.show()  # bare `gcjob`: the help as `gcjob --help` prints it (on stderr), exit 2
        sys.exit(ExitCode.USAGE)
    except click.ClickException as exc:
        _name_the_variable(exc)
        message = visible(" ".join(exc.format_message().split()))
        ctx = getattr(exc, "ctx", None)
        command = ctx.command_path if ctx is not None else "gcjob sweep"
        click.echo(f"gcjob: error: {message} (see {command} --help)", err=True)
        sys.exit(ExitCode.USAGE)
    except click.exceptions.Abort:
        sys.exit(ExitCode.STOPPED)
    sys.exit(result if isinstance(result, int) else 0)
