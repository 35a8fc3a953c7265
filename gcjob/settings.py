"""Run settings, as plain data, and the parsing of their values."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from gcjob.model import Sweep

MAX_DURATION_SECONDS = 365 * 24 * 3600

# The defaults of the flags that take a duration, as `--help` shows them. Settings below takes
# its defaults from these and the flags take theirs from Settings (gcjob/cli.py): one place.
# --grace: how long an object stays marked orphaned, on the same evidence, before a run deletes
# it (gcjob/marks.py). "0" deletes on the first look.
DEFAULT_GRACE = "10m"
DEFAULT_MIN_AGE = "5m"
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


GRACE = parse_duration(DEFAULT_GRACE)
MIN_AGE = parse_duration(DEFAULT_MIN_AGE)
TIMEOUT = parse_duration(DEFAULT_TIMEOUT)
UPSTREAM_MAX_TIME = parse_duration(DEFAULT_UPSTREAM_MAX_TIME)
CLOCK_SKEW = parse_duration(DEFAULT_CLOCK_SKEW)


def _seconds(duration: str) -> float:
    return parse_duration(duration).total_seconds()


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
    upstream_concurrency: int = 16  # upstream clusters read at once
    # Each upstream cluster's read budget (gcjob/kube/access.py ReadLimits).
    upstream_max_pages: int = 20
    upstream_max_items: int = 50_000
    upstream_max_mib: int = 64
    upstream_max_time: timedelta = UPSTREAM_MAX_TIME
    hub_concurrency: int = 4  # hub collections read at once
    upstream_kubeconfig: str | None = None
    upstream_server_template: str | None = None
    max_deletions: int = 50
    max_delete_percent: float = 50.0
    brake_min_objects: int = 50
    suspect_min_routes: int = 10
    timeout: timedelta = TIMEOUT
    write_qps: float = 10.0  # every write (mark, unmark, delete), one limiter
    max_writes: int = DEFAULT_MAX_WRITES  # the write brake: most writes per run
    lock: bool = True
    events: bool = True  # a --delete run posts an Event for each mark, unmark and delete
    lock_namespace: str = "default"
    lock_name: str = "gcjob"
    connect_timeout: float = _seconds(DEFAULT_CONNECT_TIMEOUT)
    read_timeout: float = _seconds(DEFAULT_READ_TIMEOUT)
    list_timeout: float = _seconds(DEFAULT_LIST_TIMEOUT)
    pushgateway: str | None = None
    notify_webhook: str | None = None
    grace: timedelta = GRACE
    max_marks: int = DEFAULT_MAX_MARKS
    # Rounds until no orphan waits (the rollout Job): sleep until the next mark is due, sweep
    # again, within --timeout.
    drain: bool = False
    # The sweeps whose orphans a --delete run deletes; the others' it marks and reports as
    # would-delete. The downstream-copies sweep lands report-only: an operator enforces it.
    enforce: tuple[Sweep, ...] = (Sweep.COMPANIONS, Sweep.BINDINGS, Sweep.ROUTES)
    drop_copy_kinds: tuple[str, ...] = ()  # kinds the copies sweep leaves alone (Kind.group)
    project_api: str | None = None  # Milo's Project API; else derived from the template
    max_projects_gone: int = 3  # the projects brake: most projects found gone in one run
    read_upstream_secrets: bool = False  # judge a Secret copy by reading its upstream Secret
    # How far the hub's and the upstreams' clocks may be apart: an owner counts as re-created
    # only when created after its old anchor by more than this.
    clock_skew: timedelta = CLOCK_SKEW
    now: datetime | None = None  # decide as of this time (--now, for tests and replays)
