"""The command line's flags, each declared once: its type, its default (Settings'), its help and
its GCJOB_* twin (click's `envvar=`). gcjob/cli.py puts them on its commands.

Every twin is named on its option, never built from a prefix: `auto_envvar_prefix` would name
them `GCJOB_SWEEP_*` and give --delete and --now twins too. Those two never come from the
environment; `ignored_variables` only notices their would-be twins, for the run to warn."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import click

from gcjob.model import Sweep
from gcjob.settings import (
    BOUNDS,
    DEFAULT_CLOCK_SKEW,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_DELETION_STALLED_AFTER,
    DEFAULT_GRACE,
    DEFAULT_LIST_TIMEOUT,
    DEFAULT_MIN_AGE,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_TIMEOUT,
    DEFAULT_UPSTREAM_MAX_TIME,
    EXPLAIN_TIMEOUT,
    IGNORED_VARIABLES,
    LIST_FROM,
    LIST_FROM_ALIASES,
    LOG_FORMATS,
    Settings,
    parse_duration,
)
from gcjob.shard import COMPLETION_INDEX, MAX_SHARDS, Shard, parse_shard
from gcjob.times import parse_time

# Every flag's default is Settings' (a duration's, the constant Settings parses): one place.
DEFAULTS = Settings()
SWEEP_NAMES = [s.value for s in Sweep]


def variable(flag: str) -> str:
    """A flag's twin: --min-age is GCJOB_MIN_AGE."""
    return "GCJOB_" + flag.upper().replace("-", "_")


def ignored_variables() -> tuple[str, ...]:
    """The would-be twins of --delete and --now that are set: never read, only warned about."""
    return tuple(name for name in IGNORED_VARIABLES if os.environ.get(name))


def completion_index() -> str | None:
    """JOB_COMPLETION_INDEX, set by Kubernetes in each pod of an Indexed Job: Settings
    refuses a run whose --shard does not name it."""
    return os.environ.get(COMPLETION_INDEX)


class ShardPart(click.ParamType):  # type: ignore[type-arg]
    name = "INDEX/COUNT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, Shard):
            return value
        try:
            return parse_shard(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


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


class TwinnedOption(click.Option):
    """An option with its GCJOB_* twin. click takes a twin set to "" for one not set at all;
    an option that names a target, a file or a scope (`keep_blank`) keeps it, so that Settings
    refuses it rather than fall back to another target, or to every namespace."""

    def __init__(self, *args: Any, keep_blank: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.keep_blank = keep_blank

    def resolve_envvar_value(self, ctx: click.Context) -> str | None:
        value = super().resolve_envvar_value(ctx)
        if value is None and self.keep_blank and isinstance(self.envvar, str):
            return os.environ.get(self.envvar)
        return value


def bounded(field: str) -> click.ParamType:  # type: ignore[type-arg]
    """The type of a numeric flag, from Settings' bounds for its field."""
    low, high = BOUNDS[field]
    if isinstance(getattr(DEFAULTS, field), float):
        return FiniteFloatRange(low, high)
    return click.IntRange(int(low), None if high is None else int(high))


FC = TypeVar("FC", bound=Callable[..., Any])


def option(flag: str, *dest: str, **kwargs: Any) -> Callable[[FC], FC]:
    """A flag and its twin; a numeric Settings field's flag takes its bounds and default."""
    field = next((d for d in dest if not d.startswith("-")), flag.replace("-", "_"))
    if field in BOUNDS:
        kwargs = {"type": bounded(field), "default": getattr(DEFAULTS, field), **kwargs}
        kwargs.setdefault("show_default", True)
    kwargs.setdefault("envvar", variable(flag))
    return click.option(f"--{flag}", *dest, cls=TwinnedOption, show_envvar=False, **kwargs)


def duration(flag: str, default: str, help: str | None = None, **kwargs: Any) -> Callable[[FC], FC]:
    return option(flag, type=Duration(**kwargs), default=default, show_default=True, help=help)


# Never from the environment: no envvar. A changed clock must not reach a run unseen.
DELETE = click.option(
    "--delete",
    is_flag=True,
    help="Delete for real. Without it: dry run. Never from the environment.",
)
NOW = click.option(
    "--now",
    type=Moment(),
    hidden=True,
    help="Decide as of this RFC 3339 time (dry runs, explain, replays; never with --delete).",
)

# Shared by sweep, explain and restore.
HUB_KUBECONFIG = option(
    "hub-kubeconfig",
    type=click.Path(dir_okay=False),
    keep_blank=True,
    help="Kubeconfig of the Karmada hub (else $KUBECONFIG, else in-cluster).",
)
HUB_CONTEXT = option("hub-context", keep_blank=True, help="Context of the hub kubeconfig.")
MIN_AGE = duration(
    "min-age", DEFAULT_MIN_AGE, "Hold back candidates younger than this (30s, 5m, 1h, or seconds)."
)
UPSTREAM_KUBECONFIG = option(
    "upstream-kubeconfig",
    type=click.Path(dir_okay=False),
    keep_blank=True,
    help="Kubeconfig whose context names are upstream cluster names.",
)
UPSTREAM_SERVER_TEMPLATE = option(
    "upstream-server-template",
    keep_blank=True,
    help="Upstream URL with {cluster}, using the upstream kubeconfig's current credentials.",
)
SUSPECT_MIN_ROUTES = option(
    "suspect-min-routes",
    help="Distrust an upstream where this many routes find no Gateway (0: never).",
)
CONNECT_TIMEOUT = duration("connect-timeout", DEFAULT_CONNECT_TIMEOUT, positive=True)
READ_TIMEOUT = duration("read-timeout", DEFAULT_READ_TIMEOUT, positive=True)
LIST_TIMEOUT = duration(
    "list-timeout",
    DEFAULT_LIST_TIMEOUT,
    "Most time for one hub list answer (a whole collection from the watch cache).",
    positive=True,
)
NAMESPACE = option(
    "namespace",
    "namespaces",
    type=CommaList(),
    multiple=True,
    keep_blank=True,
    help="Sweep only this namespace (repeatable; default: all but reserved).",
)
EXCLUDE_NAMESPACE = option(
    "exclude-namespace",
    "exclude_namespaces",
    type=CommaList(),
    multiple=True,
    keep_blank=True,
    help="Never sweep this namespace (repeatable).",
)
GRACE = duration(
    "grace",
    DEFAULT_GRACE,
    "Mark an orphan first; delete it once it stayed one, on the same evidence, this long "
    "(0: delete on the first look).",
)
DELETION_STALLED_AFTER = duration(
    "deletion-stalled-after",
    DEFAULT_DELETION_STALLED_AFTER,
    "Say an object gcjob marked and deleted is stalled once it stays Terminating this long "
    "(deletion-stalled: the hub's garbage collector or Karmada's controllers not running).",
    positive=True,
)
OUTPUT = click.option(
    "--output",
    "--log-format",
    "output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: for a person; json: JSON lines. --log-format is the same option.",
)

# sweep's own.
SWEEP = option(
    "sweep",
    "sweeps",
    type=CommaChoice(SWEEP_NAMES),
    multiple=True,
    help="Sweep to run (repeatable; default: all).",
)
SNAPSHOT = option(
    "snapshot",
    type=click.Path(file_okay=False),
    keep_blank=True,
    help="Sweep offline from kubectl dumps in DIR (dry run only).",
)
REPORT_FILE = option(
    "report-file",
    type=click.Path(dir_okay=False, writable=True),
    keep_blank=True,
    help="Also write the whole report as one JSON document.",
)
RECORD_DELETIONS = option(
    "record-deletions",
    type=click.Path(file_okay=False),
    metavar="DIR",
    keep_blank=True,
    help="Record each object in a file of DIR (one per run) before deleting it, for "
    "`gcjob restore`; an object that cannot be recorded is not deleted.",
)
# One choice, one name on every command: --output. --log-format, sweep's name for it before,
# is kept as an alias (it is in the shipped manifests of earlier releases and users' overlays).
LOG_FORMAT = option(
    "output",
    "--log-format",
    "log_format",
    type=click.Choice(LOG_FORMATS),
    default=DEFAULTS.log_format,
    show_default=True,
    envvar=["GCJOB_OUTPUT", "GCJOB_LOG_FORMAT"],
    help="json: the report as JSON lines on stdout, logs as JSON on stderr; text: for a "
    "person (a summary table). --log-format is the same option.",
)
REPORT_HEALTHY = option(
    "report-healthy", is_flag=True, help="Report healthy objects one by one, not only as counts."
)
PAGE_SIZE = option("page-size", help="Items per list page.")
LIST_FROM_OPTION = option(
    "list-from",
    type=click.Choice([*LIST_FROM, *LIST_FROM_ALIASES]),
    default=DEFAULTS.list_from,
    show_default=True,
    help="How the hub's lists are read: auto (by the server's version: pages from 1.34 on), "
    "cache (one resourceVersion=0 read per collection from the watch cache: may lag a "
    "moment, every deletion is confirmed live) or pages (limit and continue, consistent; "
    "etcd is its old name). docs/list-strategy.md.",
)
ENFORCE = option(
    "enforce",
    type=CommaChoice(SWEEP_NAMES),
    multiple=True,
    default=[s.value for s in DEFAULTS.enforce],
    help="Sweep whose orphans --delete deletes (repeatable; default: "
    + ", ".join(s.value for s in DEFAULTS.enforce)
    + "); the others' it marks and reports as would-delete.",
)
DROP_COPY_KIND = option(
    "drop-copy-kind",
    "drop_copy_kinds",
    type=CommaList(),
    multiple=True,
    metavar="KIND",
    help="A kind the copies sweep leaves alone (repeatable): Kind.group, e.g. "
    "Secret, Gateway.gateway.networking.k8s.io.",
)
PROJECT_API = option(
    "project-api",
    help="Milo's Project API: the server's base URL, e.g. https://milo.example (gcjob adds "
    "/apis/resourcemanager.miloapis.com/...; one server, no {cluster}); default: derived from "
    "a Milo --upstream-server-template. A list of projects that answers 404 or not as "
    "Kubernetes is exit 2.",
)
MAX_PROJECTS_GONE = option(
    "max-projects-gone",
    help="Brake: most projects found gone in one run (0: none is ever taken as gone).",
)
CLOCK_SKEW = duration(
    "clock-skew",
    DEFAULT_CLOCK_SKEW,
    "How far the hub's and upstreams' clocks may be apart (re-created owners).",
)
NAMESPACES_MAX_INSPECTED = option(
    "namespaces-max-inspected",
    help="Most leftover hub namespaces whose contents one run lists (namespaces sweep); the "
    "rest are kept, saying so, for a later run.",
)
READ_UPSTREAM_SECRETS = option(
    "read-upstream-secrets",
    is_flag=True,
    help="Judge a replicated Secret by reading its upstream Secret (metadata only).",
)
MAX_MARKS = option(
    "max-marks",
    help="Breaker: most new marks per run, the new orphans (a companion's binding counts "
    "too); a sweep that would mark more marks none (exit 4).",
)
UPSTREAM_CONCURRENCY = option("upstream-concurrency", help="Upstream clusters read at once.")
UPSTREAM_MAX_PAGES = option(
    "upstream-max-pages",
    help="Budget: list pages after the first one (continue tokens) per upstream cluster.",
)
UPSTREAM_MAX_ITEMS = option(
    "upstream-max-items", help="Budget: list items decoded per upstream cluster."
)
UPSTREAM_MAX_MIB = option("upstream-max-mib", help="Budget: MiB of answers per upstream cluster.")
UPSTREAM_MAX_TIME = duration(
    "upstream-max-time",
    DEFAULT_UPSTREAM_MAX_TIME,
    "Budget: time waiting on one upstream cluster's answers.",
    positive=True,
)
MAX_DELETIONS = option(
    "max-deletions",
    help="Drain cap: most deletions per run (per round with --drain), oldest marks first; "
    "the rest is left as a backlog for the next run (no brake, exit 0).",
)
MAX_DELETE_PERCENT = option(
    "max-delete-percent",
    help="Breaker: a sweep whose orphans, every one it would delete now or later (due, past "
    "the drain cap, in their grace period, new), exceed this % of its scope deletes none "
    "(exit 4).",
)
DRAIN_PACE = option(
    "drain-pace",
    help="With --drain: each round deletes at most this % of a sweep's scope as the drain "
    "first found it; the rest the next round (a pace, no brake).",
)
BRAKE_MIN_OBJECTS = option(
    "brake-min-objects", help="The % brake applies to sweeps with at least this many objects."
)
TIMEOUT = duration("timeout", DEFAULT_TIMEOUT, "Stop deleting after this long and exit 5.")
DRAIN = option(
    "drain",
    is_flag=True,
    help="Rollout: sweep in rounds until no orphan waits or --timeout comes: after each "
    "round, sleep until the next mark is due, then sweep again (needs --delete).",
)
WRITE_QPS = option(
    "write-qps",
    "--delete-qps",  # its name until every write was paced: still accepted
    "write_qps",
    envvar=[variable("write-qps"), variable("delete-qps")],
    help="Most writes per second: marks, unmarks, deletions, one limit (0: no limit; "
    "--delete-qps is its old name).",
)
MAX_WRITES = option("max-writes", help="Brake: most writes per run (marks, unmarks, deletions).")
SHARD = option(
    "shard",
    type=ShardPart(),
    keep_blank=True,
    help=f"Judge only this part of the hub (an Indexed Job's pod, COUNT up to {MAX_SHARDS}): "
    "routes and copies by their project, companions and bindings by their namespace, "
    "sha256-hashed; the limits are split between the shards. In an Indexed Job: "
    f"--shard=$({COMPLETION_INDEX})/COUNT (docs/operating.md#sharding-past-one-pod).",
)
NO_LOCK = option("no-lock", is_flag=True, help="Do not take the hub Lease (runs may overlap).")
NO_EVENTS = option(
    "no-events",
    is_flag=True,
    help="Post no Kubernetes Event for a mark, unmark or delete (a --delete run posts one on "
    "the object's namespace, best effort, outside --max-writes).",
)
LOCK_NAMESPACE = option(
    "lock-namespace",
    default=DEFAULTS.lock_namespace,
    show_default=True,
    help="Namespace of the hub Lease.",
)
LOCK_NAME = option(
    "lock-name", default=DEFAULTS.lock_name, show_default=True, help="Name of the hub Lease."
)
PUSHGATEWAY = option(
    "pushgateway", metavar="URL", help="Push the run's metrics to this Prometheus Pushgateway."
)
NOTIFY_WEBHOOK = option(
    "notify-webhook",
    metavar="URL",
    help="Post a Slack-compatible summary here when a run deleted, braked or failed.",
)

# explain's and restore's own.
EXPLAIN_SNAPSHOT = option(
    "snapshot",
    type=click.Path(file_okay=False),
    keep_blank=True,
    help="Explain offline from dumps in DIR.",
)
EXPLAIN_READ_TIMEOUT = duration(
    "timeout", EXPLAIN_TIMEOUT, "Give up reading after this long (exit 3).", positive=True
)
RESTORE_TIMEOUT = duration("timeout", EXPLAIN_TIMEOUT, "Give up after this long.", positive=True)
