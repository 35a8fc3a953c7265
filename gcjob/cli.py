"""The `gcjob` command line: flags and environment -> Settings -> one run -> exit code."""

from __future__ import annotations

import io
import math
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from gcjob import __version__
from gcjob.budget import RunBudget, stop_on_signals
from gcjob.domain import (
    REPLICATED_KIND_NAMES,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_reserved_namespace,
    target_kinds_said,
)
from gcjob.exitcodes import ExitCode, table
from gcjob.model import Sweep
from gcjob.settings import (
    DEFAULT_CLOCK_SKEW,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_GRACE,
    DEFAULT_LIST_TIMEOUT,
    DEFAULT_MIN_AGE,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_TIMEOUT,
    DEFAULT_UPSTREAM_MAX_TIME,
    EXPLAIN_TIMEOUT,
    LIST_FROM,
    LIST_FROM_ALIASES,
    Settings,
    parse_duration,
)
from gcjob.times import parse_time
from gcjob.urls import outbound_problem, project_api_problem
from gcjob.visible import visible

# Every flag's default is Settings' (a duration's, the constant Settings parses): one place.
DEFAULTS = Settings()


class Duration(click.ParamType):  # type: ignore[type-arg]  # generic only in click >= 8.2
    name = "DURATION"

    def __init__(self, positive: bool = False) -> None:
        self.positive = positive  # a timeout of 0s would make every request fail at once

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, timedelta):
            return value
        try:
            duration = parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if self.positive and not duration:
            self.fail(f"{value!r} must be more than 0s", param, ctx)
        return duration


class Moment(click.ParamType):  # type: ignore[type-arg]
    """An RFC 3339 time with its zone, e.g. 2026-11-23T10:00:00Z."""

    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, datetime):
            return value
        moment = parse_time(str(value).strip())
        if moment is None:
            self.fail(
                f"{value!r} is not an RFC 3339 time with a zone (e.g. 2026-11-23T10:00:00Z)",
                param,
                ctx,
            )
        return moment


class FiniteFloatRange(click.FloatRange):
    """A FloatRange that refuses nan and inf: nan compares false with every bound."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class CommaChoice(click.Choice):  # type: ignore[type-arg]
    """A repeatable choice whose environment variable is comma-separated."""

    envvar_list_splitter = ","


class CommaList(click.ParamType):  # type: ignore[type-arg]
    """A repeatable option whose environment variable is comma-separated."""

    name = "TEXT"
    envvar_list_splitter = ","

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return str(value).strip()


def env(flag: str) -> str:
    return "GCJOB_" + flag.upper().replace("-", "_")


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


FC = TypeVar("FC", bound=Callable[..., Any])


def _opt(flag: str, *dest: str, **kwargs: Any) -> Callable[[FC], FC]:
    return click.option(f"--{flag}", *dest, envvar=env(flag), show_envvar=False, **kwargs)


# Options sweep and explain share: explain takes the sweep's view of the hub and upstreams.
HUB_KUBECONFIG = _opt(
    "hub-kubeconfig",
    type=click.Path(dir_okay=False),
    help="Kubeconfig of the Karmada hub (else $KUBECONFIG, else in-cluster).",
)
HUB_CONTEXT = _opt("hub-context", help="Context of the hub kubeconfig.")
MIN_AGE = _opt(
    "min-age",
    type=Duration(),
    default=DEFAULT_MIN_AGE,
    show_default=True,
    help="Hold back candidates younger than this (30s, 5m, 1h, or seconds).",
)
UPSTREAM_KUBECONFIG = _opt(
    "upstream-kubeconfig",
    type=click.Path(dir_okay=False),
    help="Kubeconfig whose context names are upstream cluster names.",
)
UPSTREAM_SERVER_TEMPLATE = _opt(
    "upstream-server-template",
    help="Upstream URL with {cluster}, using the upstream kubeconfig's current credentials.",
)
SUSPECT_MIN_ROUTES = _opt(
    "suspect-min-routes",
    type=click.IntRange(0),
    default=DEFAULTS.suspect_min_routes,
    show_default=True,
    help="Distrust an upstream where this many routes find no Gateway (0: never).",
)
CONNECT_TIMEOUT = _opt(
    "connect-timeout",
    type=Duration(positive=True),
    default=DEFAULT_CONNECT_TIMEOUT,
    show_default=True,
)
READ_TIMEOUT = _opt(
    "read-timeout", type=Duration(positive=True), default=DEFAULT_READ_TIMEOUT, show_default=True
)
LIST_TIMEOUT = _opt(
    "list-timeout",
    type=Duration(positive=True),
    default=DEFAULT_LIST_TIMEOUT,
    show_default=True,
    help="Most time for one hub list answer (a whole collection from the watch cache).",
)
NAMESPACE = _opt(
    "namespace",
    "namespaces",
    type=CommaList(),
    multiple=True,
    help="Sweep only this namespace (repeatable; default: all but reserved).",
)
GRACE = _opt(
    "grace",
    type=Duration(),
    default=DEFAULT_GRACE,
    show_default=True,
    help="Mark an orphan first; delete it once it stayed one, on the same evidence, this long "
    "(0: delete on the first look).",
)
# Never from the environment (no GCJOB_NOW): a changed clock must not reach a run unseen.
NOW = click.option(
    "--now",
    type=Moment(),
    hidden=True,
    help="Decide as of this RFC 3339 time (dry runs, explain, replays; never with --delete).",
)
EXCLUDE_NAMESPACE = _opt(
    "exclude-namespace",
    "exclude_namespaces",
    type=CommaList(),
    multiple=True,
    help="Never sweep this namespace (repeatable).",
)


@cli.command(epilog=EPILOG)
@click.option(
    "--delete",
    is_flag=True,
    help="Delete for real. Without it: dry run. Never from the environment.",
)
@HUB_KUBECONFIG
@HUB_CONTEXT
@_opt(
    "sweep",
    "sweeps",
    type=CommaChoice([s.value for s in Sweep]),
    multiple=True,
    help="Sweep to run (repeatable; default: all).",
)
@MIN_AGE
@NAMESPACE
@EXCLUDE_NAMESPACE
@_opt(
    "snapshot",
    type=click.Path(file_okay=False),
    help="Sweep offline from kubectl dumps in DIR (dry run only).",
)
@_opt(
    "report-file",
    type=click.Path(dir_okay=False, writable=True),
    help="Also write the whole report as one JSON document.",
)
@_opt(
    "record-deletions",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Record each object in a file of DIR (one per run) before deleting it, for "
    "`gcjob restore`; an object that cannot be recorded is not deleted.",
)
@_opt(
    "log-format",
    type=click.Choice(["json", "text"]),
    default=DEFAULTS.log_format,
    show_default=True,
)
@_opt("report-healthy", is_flag=True, help="Report healthy objects one by one, not only as counts.")
@_opt(
    "page-size",
    type=click.IntRange(1, 10000),
    default=DEFAULTS.page_size,
    show_default=True,
    help="Items per list page.",
)
@_opt(
    "list-from",
    type=click.Choice([*LIST_FROM, *LIST_FROM_ALIASES]),
    default=DEFAULTS.list_from,
    show_default=True,
    help="How the hub's lists are read: auto (by the server's version: pages from 1.34 on), "
    "cache (one resourceVersion=0 read per collection from the watch cache: may lag a "
    "moment, every deletion is confirmed live) or pages (limit and continue, consistent; "
    "etcd is its old name). docs/list-strategy.md.",
)
@UPSTREAM_KUBECONFIG
@UPSTREAM_SERVER_TEMPLATE
@GRACE
@_opt(
    "enforce",
    type=CommaChoice([s.value for s in Sweep]),
    multiple=True,
    default=[s.value for s in DEFAULTS.enforce],
    help="Sweep whose orphans --delete deletes (repeatable; default: "
    + ", ".join(s.value for s in DEFAULTS.enforce)
    + "); the others' it marks and reports as would-delete.",
)
@_opt(
    "drop-copy-kind",
    "drop_copy_kinds",
    type=CommaList(),
    multiple=True,
    metavar="KIND",
    help="A kind the copies sweep leaves alone (repeatable): Kind.group, e.g. "
    "Secret, Gateway.gateway.networking.k8s.io.",
)
@_opt(
    "project-api",
    help="Milo's Project API (URL: one server, no {cluster}); default: derived from a Milo "
    "--upstream-server-template. A list of projects that answers 404 or not as Kubernetes is "
    "exit 2.",
)
@_opt(
    "max-projects-gone",
    type=click.IntRange(0),
    default=DEFAULTS.max_projects_gone,
    show_default=True,
    help="Brake: most projects found gone in one run (0: none is ever taken as gone).",
)
@_opt(
    "clock-skew",
    type=Duration(),
    default=DEFAULT_CLOCK_SKEW,
    show_default=True,
    help="How far the hub's and upstreams' clocks may be apart (re-created owners).",
)
@_opt(
    "read-upstream-secrets",
    is_flag=True,
    help="Judge a replicated Secret by reading its upstream Secret (metadata only).",
)
@_opt(
    "max-marks",
    type=click.IntRange(0),
    default=DEFAULTS.max_marks,
    show_default=True,
    help="Breaker: most new marks per run, the new orphans (a companion's binding counts "
    "too); a sweep that would mark more marks none (exit 4).",
)
@NOW
@_opt(
    "upstream-concurrency",
    type=click.IntRange(1, 256),
    default=DEFAULTS.upstream_concurrency,
    show_default=True,
    help="Upstream clusters read at once.",
)
@_opt(
    "upstream-max-pages",
    type=click.IntRange(0),
    default=DEFAULTS.upstream_max_pages,
    show_default=True,
    help="Budget: list pages after the first one (continue tokens) per upstream cluster.",
)
@_opt(
    "upstream-max-items",
    type=click.IntRange(1),
    default=DEFAULTS.upstream_max_items,
    show_default=True,
    help="Budget: list items decoded per upstream cluster.",
)
@_opt(
    "upstream-max-mib",
    type=click.IntRange(1),
    default=DEFAULTS.upstream_max_mib,
    show_default=True,
    help="Budget: MiB of answers per upstream cluster.",
)
@_opt(
    "upstream-max-time",
    type=Duration(positive=True),
    default=DEFAULT_UPSTREAM_MAX_TIME,
    show_default=True,
    help="Budget: time waiting on one upstream cluster's answers.",
)
@_opt(
    "max-deletions",
    type=click.IntRange(0),
    default=DEFAULTS.max_deletions,
    show_default=True,
    help="Drain cap: most deletions per run (per round with --drain), oldest marks first; "
    "the rest is left as a backlog for the next run (no brake, exit 0).",
)
@_opt(
    "max-delete-percent",
    type=FiniteFloatRange(0, 100),
    default=DEFAULTS.max_delete_percent,
    show_default=True,
    help="Breaker: a sweep whose deletions this run would exceed this % of its scope "
    "deletes none (exit 4). With --drain, a pace: each round deletes at most this % of the "
    "scope the drain first found.",
)
@_opt(
    "brake-min-objects",
    type=click.IntRange(0),
    default=DEFAULTS.brake_min_objects,
    show_default=True,
    help="The % brake applies to sweeps with at least this many objects.",
)
@SUSPECT_MIN_ROUTES
@_opt(
    "timeout",
    type=Duration(),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    help="Stop deleting after this long and exit 5.",
)
@_opt(
    "drain",
    is_flag=True,
    help="Rollout: sweep in rounds until no orphan waits or --timeout comes: after each "
    "round, sleep until the next mark is due, then sweep again (needs --delete).",
)
@click.option(
    "--write-qps",
    "--delete-qps",  # its name until every write was paced: still accepted
    "write_qps",
    envvar=[env("write-qps"), env("delete-qps")],
    show_envvar=False,
    type=FiniteFloatRange(0),
    default=DEFAULTS.write_qps,
    show_default=True,
    help="Most writes per second: marks, unmarks, deletions, one limit (0: no limit; "
    "--delete-qps is its old name).",
)
@_opt(
    "max-writes",
    type=click.IntRange(0),
    default=DEFAULTS.max_writes,
    show_default=True,
    help="Brake: most writes per run (marks, unmarks, deletions).",
)
@_opt("no-lock", is_flag=True, help="Do not take the hub Lease (runs may overlap).")
@_opt(
    "no-events",
    is_flag=True,
    help="Post no Kubernetes Event for a mark, unmark or delete (a --delete run posts one on "
    "the object's namespace, best effort, outside --max-writes).",
)
@_opt(
    "lock-namespace",
    default=DEFAULTS.lock_namespace,
    show_default=True,
    help="Namespace of the hub Lease.",
)
@_opt("lock-name", default=DEFAULTS.lock_name, show_default=True, help="Name of the hub Lease.")
@CONNECT_TIMEOUT
@READ_TIMEOUT
@LIST_TIMEOUT
@_opt("pushgateway", metavar="URL", help="Push the run's metrics to this Prometheus Pushgateway.")
@_opt(
    "notify-webhook",
    metavar="URL",
    help="Post a Slack-compatible summary here when a run deleted, braked or failed.",
)
def sweep(**options: Any) -> int:
    """Find orphans on the hub and delete them (or, by default, only report them)."""
    settings = _settings(options)
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


@cli.command(help=EXPLAIN_HELP)
@click.argument("target")
@HUB_KUBECONFIG
@HUB_CONTEXT
@UPSTREAM_KUBECONFIG
@UPSTREAM_SERVER_TEMPLATE
@_opt("snapshot", type=click.Path(file_okay=False), help="Explain offline from dumps in DIR.")
@MIN_AGE
@GRACE
@NOW
@NAMESPACE
@EXCLUDE_NAMESPACE
@SUSPECT_MIN_ROUTES
@click.option("--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@CONNECT_TIMEOUT
@READ_TIMEOUT
@LIST_TIMEOUT
@_opt(
    "timeout",
    type=Duration(positive=True),
    default=EXPLAIN_TIMEOUT,
    show_default=True,
    help="Give up reading after this long (exit 3).",
)
def explain(target: str, output: str, **options: Any) -> int:
    """EXPLAIN_HELP: its help is built from the kinds table, not from this docstring."""
    from gcjob.explain import parse_target  # here, not above: as in sweep()
    from gcjob.lifecycle import run_explain

    try:
        parsed = parse_target(target)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="TARGET") from None
    _check_snapshot_alone(options)
    namespaces, exclude_namespaces = _scope(options)
    settings = Settings(
        namespaces=namespaces,
        exclude_namespaces=exclude_namespaces,
        hub_kubeconfig=options["hub_kubeconfig"],
        hub_context=options["hub_context"],
        sweeps=(parsed.sweep,),
        min_age=options["min_age"],
        snapshot=options["snapshot"],
        upstream_kubeconfig=options["upstream_kubeconfig"],
        upstream_server_template=options["upstream_server_template"],
        connect_timeout=options["connect_timeout"].total_seconds(),
        read_timeout=options["read_timeout"].total_seconds(),
        list_timeout=options["list_timeout"].total_seconds(),
        timeout=options["timeout"],
        suspect_min_routes=options["suspect_min_routes"],
        grace=options["grace"],
        now=options["now"],
    )
    return run_explain(settings, parsed, output)


@cli.command(help=RESTORE_HELP)
@click.argument("record", type=click.Path(dir_okay=False))
@click.argument("targets", nargs=-1)
@HUB_KUBECONFIG
@HUB_CONTEXT
@click.option("--apply", is_flag=True, help="Create the objects. Without it: say what would be.")
@click.option(
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: a line per object and a summary; json: a JSON line per object and a summary.",
)
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
@CONNECT_TIMEOUT
@READ_TIMEOUT
@_opt(
    "timeout",
    type=Duration(positive=True),
    default=EXPLAIN_TIMEOUT,
    show_default=True,
    help="Give up after this long.",
)
def restore(record: str, targets: tuple[str, ...], output: str, **options: Any) -> int:
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
    _check_snapshot_alone({**options, "snapshot": None, "upstream_kubeconfig": None})
    settings = Settings(
        hub_kubeconfig=options["hub_kubeconfig"],
        hub_context=options["hub_context"],
        connect_timeout=options["connect_timeout"].total_seconds(),
        read_timeout=options["read_timeout"].total_seconds(),
        timeout=options["timeout"],
    )
    return run_restore(
        settings,
        record,
        tuple(parsed),
        apply=options["apply"],
        protect=not options["no_protect"],
        other_hub=options["other_hub"],
        output=output,
    )


def _settings(options: dict[str, Any]) -> Settings:
    sweeps = tuple(options["sweeps"]) or tuple(s.value for s in Sweep)
    namespaces, exclude_namespaces = _scope(options)
    for flag, secret_in_url in (("notify-webhook", True), ("pushgateway", False)):
        url = options[flag.replace("-", "_")]
        problem = url and outbound_problem(url, secret_in_url=secret_in_url)
        if problem:
            raise click.BadParameter(problem, param_hint=_hint(flag))
    unknown = [k for k in options["drop_copy_kinds"] if k not in REPLICATED_KIND_NAMES]
    if unknown:
        raise click.BadParameter(
            f"{unknown[0]!r} is not a kind the copies sweep reads (one of: "
            + ", ".join(REPLICATED_KIND_NAMES)
            + ")",
            param_hint=_hint("drop-copy-kind", "drop_copy_kinds"),
        )
    problem = options["project_api"] and project_api_problem(options["project_api"])
    if problem:
        raise click.BadParameter(problem, param_hint=_hint("project-api"))
    if not is_dns1123_label(options["lock_namespace"]):
        raise click.BadParameter(
            f"{options['lock_namespace']!r} is not a namespace name (DNS-1123 label)",
            param_hint=_hint("lock-namespace"),
        )
    if is_reserved_namespace(options["lock_namespace"]):
        raise click.BadParameter(
            f"{options['lock_namespace']!r} is reserved (kube-*, karmada-*): gcjob writes "
            "nothing there, its Lease included",
            param_hint=_hint("lock-namespace"),
        )
    if not is_dns1123_subdomain(options["lock_name"]):
        raise click.BadParameter(
            f"{options['lock_name']!r} is not a Lease name (DNS-1123 subdomain)",
            param_hint=_hint("lock-name"),
        )
    if options["snapshot"] and options["delete"]:
        raise click.UsageError("--snapshot is a dry run: it cannot be combined with --delete")
    if options["now"] is not None and options["delete"]:
        raise click.UsageError(
            "--now cannot be combined with --delete: a run that deletes uses the hub's clock"
        )
    if options["drain"] and not options["delete"]:
        raise click.UsageError(
            "--drain needs --delete: a dry run writes no marks, so no grace period can pass"
        )
    _check_snapshot_alone(options)
    return Settings(
        delete=options["delete"],
        hub_kubeconfig=options["hub_kubeconfig"],
        hub_context=options["hub_context"],
        sweeps=tuple(Sweep(s) for s in sweeps),
        sweeps_explicit=bool(options["sweeps"]),
        min_age=options["min_age"],
        namespaces=namespaces,
        exclude_namespaces=exclude_namespaces,
        snapshot=options["snapshot"],
        report_file=options["report_file"],
        record_deletions=options["record_deletions"],
        log_format=options["log_format"],
        report_healthy=options["report_healthy"],
        page_size=options["page_size"],
        list_from=LIST_FROM_ALIASES.get(options["list_from"], options["list_from"]),
        upstream_kubeconfig=options["upstream_kubeconfig"],
        upstream_server_template=options["upstream_server_template"],
        upstream_concurrency=options["upstream_concurrency"],
        upstream_max_pages=options["upstream_max_pages"],
        upstream_max_items=options["upstream_max_items"],
        upstream_max_mib=options["upstream_max_mib"],
        upstream_max_time=options["upstream_max_time"],
        max_deletions=options["max_deletions"],
        max_delete_percent=options["max_delete_percent"],
        brake_min_objects=options["brake_min_objects"],
        suspect_min_routes=options["suspect_min_routes"],
        timeout=options["timeout"],
        write_qps=options["write_qps"],
        max_writes=options["max_writes"],
        lock=not options["no_lock"],
        events=not options["no_events"],
        lock_namespace=options["lock_namespace"],
        lock_name=options["lock_name"],
        connect_timeout=options["connect_timeout"].total_seconds(),
        read_timeout=options["read_timeout"].total_seconds(),
        list_timeout=options["list_timeout"].total_seconds(),
        pushgateway=options["pushgateway"],
        notify_webhook=options["notify_webhook"],
        grace=options["grace"],
        max_marks=options["max_marks"],
        drain=options["drain"],
        now=options["now"],
        enforce=tuple(Sweep(s) for s in options["enforce"]),
        drop_copy_kinds=tuple(options["drop_copy_kinds"]),
        project_api=options["project_api"],
        max_projects_gone=options["max_projects_gone"],
        read_upstream_secrets=options["read_upstream_secrets"],
        clock_skew=options["clock_skew"],
    )


def _scope(options: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """--namespace and --exclude-namespace, checked."""
    namespaces = _namespaces(options["namespaces"], "namespace", "namespaces")
    for namespace in namespaces:
        if is_reserved_namespace(namespace):
            raise click.BadParameter(
                f"{namespace} is reserved and never swept",
                param_hint=_hint("namespace", "namespaces"),
            )
    exclude_namespaces = _namespaces(
        options["exclude_namespaces"], "exclude-namespace", "exclude_namespaces"
    )
    both = [ns for ns in namespaces if ns in exclude_namespaces]
    if both:
        raise click.BadParameter(
            f"{both[0]} is both included and excluded (--exclude-namespace): nothing would be "
            "swept there",
            param_hint=_hint("namespace", "namespaces"),
        )
    return namespaces, exclude_namespaces


# Flags naming a target or a file: given empty, they would fall back to another one
# (`--hub-kubeconfig ''` to $KUBECONFIG, then to the pod's own credentials).
_NO_BLANK = (
    "hub-kubeconfig",
    "hub-context",
    "upstream-kubeconfig",
    "upstream-server-template",
    "snapshot",
    "report-file",
    "record-deletions",
)


def _check_snapshot_alone(options: dict[str, Any]) -> None:
    """A snapshot is the hub and the upstreams: flags naming live ones contradict it. No
    flag that names a target may be given blank: that would mean another target."""
    for flag in _NO_BLANK:
        value = options.get(flag.replace("-", "_"))
        if value is None:  # click reads a variable set to "" as not set at all
            value = os.environ.get(env(flag))
        if value is not None and not value.strip():
            raise click.BadParameter(
                "is empty: name one, or leave the flag out", param_hint=_hint(flag)
            )
    if options["snapshot"] and (options["hub_kubeconfig"] or options["hub_context"]):
        raise click.UsageError("--snapshot replaces the hub: drop --hub-kubeconfig/--hub-context")
    if options["snapshot"] and (
        options["upstream_kubeconfig"] or options["upstream_server_template"]
    ):
        raise click.UsageError(
            "--snapshot reads upstream clusters from DIR/upstream/<cluster>/: drop "
            "--upstream-kubeconfig/--upstream-server-template"
        )


def _namespaces(values: Sequence[str], flag: str, dest: str) -> tuple[str, ...]:
    """Repeatable flags and comma-separated environment values both arrive here. An empty
    entry is refused, never dropped: `--namespace ''` must not widen the sweep to everything."""
    names = [n.strip() for v in values for n in v.split(",")]
    variable = os.environ.get(env(flag))
    if not values and variable is not None and not variable.strip():
        names = [""]  # click reads an empty variable as unset; a blank filter is still an error
    for name in names:
        if not is_dns1123_label(name):
            problem = "an empty namespace" if not name else f"{name!r} is not a namespace name"
            raise click.BadParameter(
                f"{problem} (a DNS-1123 label: lowercase letters, digits, '-')",
                param_hint=_hint(flag, dest),
            )
    return tuple(dict.fromkeys(names))


def _hint(flag: str, dest: str | None = None) -> str:
    """The flag, or the environment variable, that a bad value came from."""
    ctx = click.get_current_context(silent=True)
    name = dest or flag.replace("-", "_")
    source = ctx.get_parameter_source(name) if ctx is not None else None
    if source is ParameterSource.ENVIRONMENT or (
        source is ParameterSource.DEFAULT and env(flag) in os.environ
    ):
        return env(flag)
    return f"--{flag}"


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
