"""Run settings, as plain data that checks itself, and the parsing of their values.

`Settings(...)` is the one way to make them, for the command line, the tests and the benches
alike: it refuses whatever the command line refuses (a `SettingsError` naming the field at
fault, which gcjob/cli.py reports as the flag or variable it came from, exit 2), so no run can
start from settings no command line could give. Durations are timedeltas, every one."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Final

from gcjob.domain import (
    REPLICATED_KIND_NAMES,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_reserved_namespace,
)
from gcjob.model import Sweep
from gcjob.shard import COMPLETION_INDEX, WHOLE, Shard
from gcjob.urls import outbound_problem, project_api_problem

MAX_DURATION_SECONDS = 365 * 24 * 3600

# The defaults of the flags that take a duration, as `--help` shows them. Settings below takes
# its defaults from these and the flags take theirs from Settings (gcjob/cli.py): one place.
# --grace: how long an object stays marked orphaned, on the same evidence, before a run deletes
# it (gcjob/marks.py). "0" deletes on the first look.
DEFAULT_GRACE = "10m"
DEFAULT_MIN_AGE = "5m"
# --deletion-stalled-after: how long an object gcjob deleted may stay Terminating before a run
# says its deletion stalled (a hub whose garbage collector or Karmada's controllers stopped).
DEFAULT_DELETION_STALLED_AFTER = "15m"
DEFAULT_TIMEOUT = "4m"
EXPLAIN_TIMEOUT = "1m"  # explain's own --timeout: it reads one object, not a whole hub
DEFAULT_UPSTREAM_MAX_TIME = "60s"
DEFAULT_CONNECT_TIMEOUT = "5s"
DEFAULT_READ_TIMEOUT = "15s"
DEFAULT_LIST_TIMEOUT = "2m"
DEFAULT_MAX_MARKS = 500
DEFAULT_MAX_WRITES = 1000
DEFAULT_CLOCK_SKEW = "5m"
# --list-from (gcjob/kube/liststrategy.py): auto asks the hub; cache and pages are forced.
# `etcd` is the old name of pages, still taken.
LIST_FROM = ("auto", "cache", "pages")
LIST_FROM_ALIASES = {"etcd": "pages"}
LOG_FORMATS = ("json", "text")
# The bounds of the numeric settings (None: no upper bound). The flags' types are made from
# them (gcjob/flags.py) and Settings refuses a value outside them: one place.
BOUNDS: Final[Mapping[str, tuple[float, float | None]]] = {
    "page_size": (1, 10000),
    "upstream_concurrency": (1, 256),
    "upstream_max_pages": (0, None),
    "upstream_max_items": (1, None),
    "upstream_max_mib": (1, None),
    "hub_concurrency": (1, None),
    "max_deletions": (0, None),
    "max_delete_percent": (0, 100),
    "drain_pace": (0, 100),
    "brake_min_objects": (0, None),
    "suspect_min_routes": (0, None),
    "write_qps": (0, None),
    "max_writes": (0, None),
    "max_marks": (0, None),
    "max_projects_gone": (0, None),
    "namespaces_max_inspected": (0, None),
}
# Sweeps that report and never delete, by design, and why (`--enforce` refuses them, exit 2).
NEVER_ENFORCED: Final[Mapping[str, str]] = {
    "namespaces": (
        "is report-only by design and cannot be enforced: Karmada propagates every hub "
        "namespace to the member clusters, and deleting one deletes or orphans theirs "
        "(docs/rules.md, Hub namespaces)"
    ),
}
# Durations that must be more than 0s: a request timeout of 0s would make every request fail.
POSITIVE_DURATIONS: Final = frozenset(
    {"connect_timeout", "read_timeout", "list_timeout", "upstream_max_time"}
)
# Settings naming a target or a file: given blank, they would fall back to another one
# (`--hub-kubeconfig ''` to $KUBECONFIG, then to the pod's own credentials): refused.
NO_BLANK: Final = (
    "hub_kubeconfig",
    "hub_context",
    "upstream_kubeconfig",
    "upstream_server_template",
    "snapshot",
    "report_file",
    "record_deletions",
)
# The variables that would be --delete's and --now's twins: never read, only warned about.
IGNORED_VARIABLES: Final[Mapping[str, str]] = {
    "GCJOB_DELETE": "deleting needs --delete on the command line",
    "GCJOB_NOW": "a run decides by the hub's clock (--now: dry runs)",
}
# ASCII digits only: `\d` and float() would also read Arabic-Indic or full-width digits.
_NUMBER = r"[0-9]+(?:\.[0-9]+)?"
_SECONDS = re.compile(_NUMBER)
_DURATION = re.compile(rf"(?:({_NUMBER})h)?(?:({_NUMBER})m)?(?:({_NUMBER})s)?")


def parse_duration(text: str) -> timedelta:
    """`30s`, `5m`, `1h`, `1h30m`, or plain seconds; raises ValueError."""
    value = text.strip()
    if not value:
        raise ValueError("empty duration")
    # No exponents, signs, `_` or non-ASCII digits: "1e-300" must not mean "no grace".
    if _SECONDS.fullmatch(value):
        seconds = float(value)
    else:
        match = _DURATION.fullmatch(value)
        if match is None or not any(match.groups()):
            raise ValueError(f"{text!r} is not a duration (e.g. 30s, 5m, 1h, 90)")
        hours, minutes, secs = (float(g) if g else 0.0 for g in match.groups())
        seconds = hours * 3600 + minutes * 60 + secs
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_DURATION_SECONDS:
        raise ValueError(f"{text!r} is not a duration between 0 and 1 year (e.g. 30s, 5m, 1h, 90)")
    duration = timedelta(seconds=seconds)
    if seconds > 0 and duration < timedelta(milliseconds=1):
        raise ValueError(f"{text!r} is shorter than a millisecond: write 0 for none")
    return duration


def _duration_problem(duration: timedelta) -> str | None:
    """What parse_duration would refuse in a duration given as a timedelta."""
    if not timedelta(0) <= duration <= timedelta(seconds=MAX_DURATION_SECONDS):
        return f"{duration} is not a duration between 0 and 1 year"
    if timedelta(0) < duration < timedelta(milliseconds=1):
        return f"{duration} is shorter than a millisecond: write 0 for none"
    return None


GRACE = parse_duration(DEFAULT_GRACE)
MIN_AGE = parse_duration(DEFAULT_MIN_AGE)
DELETION_STALLED_AFTER = parse_duration(DEFAULT_DELETION_STALLED_AFTER)
TIMEOUT = parse_duration(DEFAULT_TIMEOUT)
UPSTREAM_MAX_TIME = parse_duration(DEFAULT_UPSTREAM_MAX_TIME)
CLOCK_SKEW = parse_duration(DEFAULT_CLOCK_SKEW)
CONNECT_TIMEOUT = parse_duration(DEFAULT_CONNECT_TIMEOUT)
READ_TIMEOUT = parse_duration(DEFAULT_READ_TIMEOUT)
LIST_TIMEOUT = parse_duration(DEFAULT_LIST_TIMEOUT)


class SettingsError(ValueError):
    """Settings the command line would refuse. `field`: the one setting at fault (the command
    line names its flag or variable); None: settings that contradict each other."""

    def __init__(self, problem: str, field: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.field = field


@dataclass(frozen=True)
class Settings:
    delete: bool = False
    hub_kubeconfig: str | None = None
    hub_context: str | None = None
    sweeps: tuple[Sweep, ...] = tuple(Sweep)
    sweeps_explicit: bool = False
    min_age: timedelta = MIN_AGE
    namespaces: tuple[str, ...] = ()
    exclude_namespaces: tuple[str, ...] = ()
    snapshot: str | None = None
    report_file: str | None = None
    record_deletions: str | None = None  # a directory: each delete recorded there first
    log_format: str = "json"
    report_healthy: bool = False
    page_size: int = 500
    # How the hub's lists are read (gcjob/kube/liststrategy.py): "auto" asks the server its
    # version; "cache" (resourceVersion=0) and "pages" (limit + continue) are forced.
    list_from: str = "auto"
    # Upstream clusters read at once: 32 measured as fast as 64 at 1,000 projects 50 ms away,
    # with less memory (bench/README.md, issue 33).
    upstream_concurrency: int = 32
    # Each upstream cluster's read budget (gcjob/kube/access.py ReadLimits).
    upstream_max_pages: int = 20
    upstream_max_items: int = 50_000
    upstream_max_mib: int = 64
    upstream_max_time: timedelta = UPSTREAM_MAX_TIME
    # Hub reads at once: collections, and the GETs read ahead of marks (8 rather than 4: at
    # 10k companions a dry run's 100 would-marks took 0.06 s less, bench/README.md).
    hub_concurrency: int = 8
    upstream_kubeconfig: str | None = None
    upstream_server_template: str | None = None
    max_deletions: int = 50
    max_delete_percent: float = 50.0
    brake_min_objects: int = 50
    # A --drain round's most deletions of a sweep, as a % of its collection as the drain first
    # found it: a pace, never a brake (brakes.py drain_pace).
    drain_pace: float = 50.0
    suspect_min_routes: int = 10
    timeout: timedelta = TIMEOUT
    write_qps: float = 10.0  # every write (mark, unmark, delete), one limiter
    max_writes: int = DEFAULT_MAX_WRITES  # the write brake: most writes per run
    lock: bool = True
    events: bool = True  # a --delete run posts an Event for each mark, unmark and delete
    lock_namespace: str = "default"
    lock_name: str = "gcjob"
    connect_timeout: timedelta = CONNECT_TIMEOUT
    read_timeout: timedelta = READ_TIMEOUT
    list_timeout: timedelta = LIST_TIMEOUT
    pushgateway: str | None = None
    notify_webhook: str | None = None
    grace: timedelta = GRACE
    deletion_stalled_after: timedelta = DELETION_STALLED_AFTER
    max_marks: int = DEFAULT_MAX_MARKS
    # Rounds until no orphan waits (the rollout Job): sleep until the next mark is due, sweep
    # again, within --timeout.
    drain: bool = False
    # The sweeps whose orphans a --delete run deletes; the others' it marks and reports as
    # would-delete. The downstream-copies sweep lands report-only: an operator enforces it.
    enforce: tuple[Sweep, ...] = tuple(map(Sweep, ("companions", "bindings", "routes")))
    drop_copy_kinds: tuple[str, ...] = ()  # kinds the copies sweep leaves alone (Kind.group)
    project_api: str | None = None  # Milo's Project API; else derived from the template
    max_projects_gone: int = 3  # the projects brake: most projects found gone in one run
    read_upstream_secrets: bool = False  # judge a Secret copy by reading its upstream Secret
    # How far the hub's and the upstreams' clocks may be apart: an owner counts as re-created
    # only when created after its old anchor by more than this.
    clock_skew: timedelta = CLOCK_SKEW
    # The namespaces sweep: most leftover hub namespaces whose contents one run lists.
    namespaces_max_inspected: int = 100
    now: datetime | None = None  # decide as of this time (--now, for tests and replays)
    # GCJOB_DELETE and GCJOB_NOW, when set: never read, the run warns that they are ignored.
    ignored_variables: tuple[str, ...] = ()
    # --shard INDEX/COUNT: the part of the hub this pod judges (gcjob/shard.py); None: all.
    shard: Shard | None = None
    # JOB_COMPLETION_INDEX as the environment gave it (a pod of an Indexed Job): --shard must
    # be given and name this index, or the run is refused.
    completion_index: str | None = None

    @property
    def part(self) -> Shard:
        """The shard this run judges: the whole hub unless --shard."""
        return self.shard or WHOLE

    def __post_init__(self) -> None:
        _check_scope(self)
        _check_values(self)
        _check_together(self)
        _check_shard(self)


def _check_scope(settings: Settings) -> None:
    """--namespace and --exclude-namespace: names, never blank (that would widen the sweep to
    every namespace), never reserved, never both."""
    for field in ("namespaces", "exclude_namespaces"):
        for name in getattr(settings, field):
            if not is_dns1123_label(name):
                problem = "an empty namespace" if not name else f"{name!r} is not a namespace name"
                raise SettingsError(
                    f"{problem} (a DNS-1123 label: lowercase letters, digits, '-')", field
                )
        if field == "namespaces":
            for name in settings.namespaces:
                if is_reserved_namespace(name):
                    raise SettingsError(f"{name} is reserved and never swept", field)
    both = [ns for ns in settings.namespaces if ns in settings.exclude_namespaces]
    if both:
        raise SettingsError(
            f"{both[0]} is both included and excluded (--exclude-namespace): nothing would be "
            "swept there",
            "namespaces",
        )


def _check_values(settings: Settings) -> None:
    """Each setting on its own: URLs, kinds, the lock's names, numbers, durations, choices."""
    for field, secret_in_url in (("notify_webhook", True), ("pushgateway", False)):
        url = getattr(settings, field)
        problem = url and outbound_problem(url, secret_in_url=secret_in_url)
        if problem:
            raise SettingsError(problem, field)
    unknown = [k for k in settings.drop_copy_kinds if k not in REPLICATED_KIND_NAMES]
    if unknown:
        raise SettingsError(
            f"{unknown[0]!r} is not a kind the copies sweep reads (one of: "
            + ", ".join(REPLICATED_KIND_NAMES)
            + ")",
            "drop_copy_kinds",
        )
    problem = settings.project_api and project_api_problem(settings.project_api)
    if problem:
        raise SettingsError(problem, "project_api")
    _check_lock(settings)
    for field, (low, high) in BOUNDS.items():
        number = getattr(settings, field)
        if not math.isfinite(number) or number < low or (high is not None and number > high):
            upper = "" if high is None else f"<={high}"
            raise SettingsError(f"{number!r} is not in the range {low}<=x{upper}", field)
    for item in fields(settings):
        value = getattr(settings, item.name)
        if isinstance(value, timedelta):
            problem = _duration_problem(value)
            if problem is None and item.name in POSITIVE_DURATIONS and not value:
                problem = f"{value} must be more than 0s"
            if problem:
                raise SettingsError(problem, item.name)
    _check_choices(settings)


def _check_lock(settings: Settings) -> None:
    if not is_dns1123_label(settings.lock_namespace):
        raise SettingsError(
            f"{settings.lock_namespace!r} is not a namespace name (DNS-1123 label)",
            "lock_namespace",
        )
    if is_reserved_namespace(settings.lock_namespace):
        raise SettingsError(
            f"{settings.lock_namespace!r} is reserved (kube-*, karmada-*): gcjob writes "
            "nothing there, its Lease included",
            "lock_namespace",
        )
    if not is_dns1123_subdomain(settings.lock_name):
        raise SettingsError(
            f"{settings.lock_name!r} is not a Lease name (DNS-1123 subdomain)", "lock_name"
        )


def _check_choices(settings: Settings) -> None:
    if not settings.sweeps or not all(isinstance(s, Sweep) for s in settings.sweeps):
        raise SettingsError(f"{settings.sweeps!r}: name one sweep or more", "sweeps")
    if not all(isinstance(s, Sweep) for s in settings.enforce):
        raise SettingsError(f"{settings.enforce!r} are not all sweeps", "enforce")
    never = next((s for s in settings.enforce if s.value in NEVER_ENFORCED), None)
    if never is not None:
        raise SettingsError(f"{never.value} {NEVER_ENFORCED[never.value]}", "enforce")
    if settings.log_format not in LOG_FORMATS:
        raise SettingsError(f"{settings.log_format!r} is not one of {LOG_FORMATS}", "log_format")
    if settings.list_from not in LIST_FROM:
        raise SettingsError(f"{settings.list_from!r} is not one of {LIST_FROM}", "list_from")
    if settings.now is not None and settings.now.utcoffset() is None:
        raise SettingsError(f"{settings.now} is not a time with a zone", "now")
    unknown = [name for name in settings.ignored_variables if name not in IGNORED_VARIABLES]
    if unknown:
        raise SettingsError(f"{unknown[0]} is not a variable gcjob ignores", "ignored_variables")


def _check_together(settings: Settings) -> None:
    """Settings that contradict each other, and targets given blank."""
    if settings.snapshot and settings.delete:
        raise SettingsError("--snapshot is a dry run: it cannot be combined with --delete")
    if settings.now is not None and settings.delete:
        raise SettingsError(
            "--now cannot be combined with --delete: a run that deletes uses the hub's clock"
        )
    if settings.drain and not settings.delete:
        raise SettingsError(
            "--drain needs --delete: a dry run writes no marks, so no grace period can pass"
        )
    for field in NO_BLANK:
        value = getattr(settings, field)
        if value is not None and not value.strip():
            raise SettingsError("is empty: name one, or leave the flag out", field)
    if settings.snapshot and (settings.hub_kubeconfig or settings.hub_context):
        raise SettingsError("--snapshot replaces the hub: drop --hub-kubeconfig/--hub-context")
    if settings.snapshot and (settings.upstream_kubeconfig or settings.upstream_server_template):
        raise SettingsError(
            "--snapshot reads upstream clusters from DIR/upstream/<cluster>/: drop "
            "--upstream-kubeconfig/--upstream-server-template"
        )


# The absolute limits each shard takes a share of (gcjob/shard.py): a limit below COUNT would
# leave some shard none at all, and its orphans would wait forever, unsaid.
SHARED_LIMITS: Final = ("max_deletions", "max_marks", "max_writes")


def _check_shard(settings: Settings) -> None:
    """--shard: a part of COUNT; an Indexed Job's pod must run the shard of its index."""
    shard, index = settings.shard, settings.completion_index
    if shard is not None and (
        not isinstance(shard, Shard) or not 0 <= shard.index < shard.count or shard.count < 1
    ):
        raise SettingsError(f"{shard!r} is not a shard INDEX/COUNT", "shard")
    if index is not None:
        if shard is None:
            raise SettingsError(
                f"{COMPLETION_INDEX}={index[:20]!r}: a pod of an Indexed Job runs one shard; "
                f"give --shard INDEX/COUNT (e.g. --shard=$({COMPLETION_INDEX})/4)",
                "shard",
            )
        if index.strip() != str(shard.index):
            raise SettingsError(
                f"{shard} does not match this pod's {COMPLETION_INDEX}={index[:20]!r}: two "
                "pods would judge one shard and none the other",
                "shard",
            )
    if shard is None or shard.whole:
        return
    if settings.drain:
        raise SettingsError(
            "--drain runs unsharded (the rollout Job): it cannot be combined with --shard"
        )
    for field in SHARED_LIMITS:
        limit = getattr(settings, field)
        if 0 < limit < shard.count:
            flag = "--" + field.replace("_", "-")
            raise SettingsError(
                f"{limit} is less than the {shard.count} shards of --shard {shard}: each shard "
                f"takes a share of {flag}, and some would have none (give at least "
                f"{shard.count}, or 0)",
                field,
            )
    lease = shard.lease_name(settings.lock_name)
    if not is_dns1123_subdomain(lease):
        raise SettingsError(
            f"{settings.lock_name!r} is too long for its shards' Lease {lease[:80]!r}",
            "lock_name",
        )
