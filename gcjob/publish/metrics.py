"""`--pushgateway URL`: the run's numbers for Prometheus, pushed once at the end.

A batch job is gone before Prometheus could scrape it, so it pushes. Every run of one install
pushes to one group, job="gcjob", hub=<the hub's server> (and shard="INDEX/COUNT", one group a
shard, with --shard): a dry run and an enforcing run replace the same series, so switching
modes leaves no frozen group behind for an alert to find. A run that steps aside for the
rollout Job (skipped) adds three metrics only (when it stepped aside, how long the lock has
been held, its success; a shard its COUNT too) and leaves the last sweep's counts in place.
Every run sets every metric but two: only a run that exited 0 sets
gcjob_last_success_timestamp_seconds, and only a shard gcjob_shard_count (its COUNT: the
alerts count the shards that should push against it, a shard that never ran included). A
failed run adds its metrics with POST, which replaces only the metrics it pushes and so keeps
the last success from an earlier push: an alert on its age fires when runs keep failing, and a
group with runs but no last success is an install that never succeeded
(cronjobs/monitoring/gcjob-alerts.yaml). An unreachable Pushgateway is a warning, never a
failed run. The push goes straight to the Pushgateway or through the proxy `urls.proxy_route`
chooses for its URL, as every request gcjob makes, never by urllib's own reading of the
environment.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any
from urllib.request import ProxyHandler, Request, build_opener

from prometheus_client import CollectorRegistry, Gauge, push_to_gateway, pushadd_to_gateway

from gcjob.logs import log
from gcjob.model import PROJECT_COUNT_STATES, ClusterStatus
from gcjob.reasons import BRAKE_REASONS, NOT_SWEPT_REASONS, Reason
from gcjob.redact import redact
from gcjob.urls import proxy_authorization, proxy_env, proxy_route, without_userinfo
from gcjob.visible import clip

JOB = "gcjob"
PUSH_TIMEOUT = 5.0  # seconds; the whole push, once, at the end of the run
UPSTREAM_STATUSES = tuple(status.value for status in ClusterStatus)
LOCK_HELD_HELP = (
    "How long another run had held the lock when the last run found it held (exit 6, or "
    "skipped for the rollout Job), as far as the lease shows; 0 when the last run was not kept "
    "out."
)


def grouping(summary: dict[str, Any]) -> dict[str, str]:
    """One group per install, whatever its mode: the hub it sweeps; with --shard, one group per
    shard (shard="INDEX/COUNT"): no shard's push replaces another's."""
    shard = summary.get("shard")
    if shard:
        return {"hub": summary["hub"], "shard": f"{shard['index']}/{shard['count']}"}
    return {"hub": summary["hub"]}


def registry_of(
    summary: dict[str, Any], *, duration: float, finished: float, lock_held_seconds: float = 0.0
) -> CollectorRegistry:
    """The metrics of one run, from its report summary. `finished`: Unix seconds;
    `lock_held_seconds`: when another run held the lock, for how long (0 when it did not)."""
    registry = CollectorRegistry()
    objects = Gauge(
        "gcjob_run_objects",
        "Objects acted on or held back in the last run, by sweep, action and reason.",
        ["sweep", "action", "reason"],
        registry=registry,
    )
    brake = 0
    for sweep, actions in summary["counts"].items():
        for action, reasons in actions.items():
            for reason, count in reasons.items():
                objects.labels(sweep, action, reason).set(count)
                if reason in BRAKE_REASONS:
                    brake = 1
    not_swept = Gauge(
        "gcjob_run_not_swept",
        "Objects the last run kept because what it needs to judge them is not configured or "
        "could not be read (an unknown or unavailable upstream cluster, a failed lookup, an "
        "owner kind that maps to nothing), or whose delete the hub's admission refused: never "
        "swept until fixed, by sweep and reason.",
        ["sweep", "reason"],
        registry=registry,
    )
    # Every sweep that ran and every such reason, 0 included: the alert must see it resolve.
    for sweep in summary["sweeps"]:
        actions = summary["counts"].get(sweep, {}).values()
        for reason in NOT_SWEPT_REASONS:
            count = sum(reasons.get(reason.value, 0) for reasons in actions)
            not_swept.labels(sweep, reason.value).set(count)
    stalled = Gauge(
        "gcjob_run_deletions_stalled",
        "Objects gcjob deleted (its mark) that the last run found still Terminating longer "
        "than --deletion-stalled-after (deletion-stalled): is the hub's garbage collector, or "
        "are Karmada's controllers, running? By sweep.",
        ["sweep"],
        registry=registry,
    )
    # Every sweep that ran, 0 included: the alert must see it resolve.
    for sweep in summary["sweeps"]:
        actions = summary["counts"].get(sweep, {}).values()
        stalled.labels(sweep).set(
            sum(reasons.get(Reason.DELETION_STALLED.value, 0) for reasons in actions)
        )
    leftover_namespaces(summary, registry)
    seen = Gauge(
        "gcjob_run_objects_seen",
        "Objects read by each sweep in the last run.",
        ["sweep"],
        registry=registry,
    )
    for sweep, state in summary["sweeps"].items():
        seen.labels(sweep).set(state.get("scanned") or 0)
    clusters = Gauge(
        "gcjob_run_upstream_clusters",
        "Upstream clusters the routes sweep asked in the last run, by status.",
        ["status"],
        registry=registry,
    )
    # Every status, 0 included: an alert on `unavailable` must see it go back to 0.
    counts = summary.get("upstream_counts") or {}
    for status in UPSTREAM_STATUSES:
        clusters.labels(status).set(counts.get(status, 0))
    projects = Gauge(
        "gcjob_run_projects",
        "Milo projects the Project API was asked about in the last run, by what it found.",
        ["state"],
        registry=registry,
    )
    # Every state, 0 included, as for clusters: an alert must see brake-held go back to 0.
    found = summary.get("projects") or {}
    for state in PROJECT_COUNT_STATES:
        projects.labels(state).set(found.get(state, 0))
    # A sweep's own brake (the projects brake) holds objects back as kept, not as `brake`
    # items: its status says so.
    if any(state.get("status") == "braked" for state in summary["sweeps"].values()):
        brake = 1
    pending = Gauge(
        "gcjob_run_would_delete",
        "Orphans the last run left on their way out, by sweep, when they are due (this-run, "
        'later), and whether the sweep is enforced: an enforced="false" sweep deletes '
        "none of them until it is.",
        ["sweep", "due", "enforced"],
        registry=registry,
    )
    for key, enforced in (("would_delete", "true"), ("would_delete_if_enforced", "false")):
        for sweep, due in (summary.get(key) or {}).items():
            pending.labels(sweep, "this-run", enforced).set(due["this_run"])
            pending.labels(sweep, "later", enforced).set(due["later"])
    requests = Gauge(
        "gcjob_run_api_requests",
        "API requests sent in the last run, by target.",
        ["target"],
        registry=registry,
    )
    for target, count in summary["api_requests"]["by_target"].items():
        requests.labels(target).set(count)
    single = {
        "gcjob_run_duration_seconds": ("Wall time of the last run.", duration),
        "gcjob_run_exit_code": (
            "Exit code of the last run (see the README).",
            summary["exit_code"],
        ),
        "gcjob_run_brake_engaged": ("1 if the last run hit the safety brake.", brake),
        "gcjob_run_finished_timestamp_seconds": ("When the last run finished.", finished),
        "gcjob_run_dry_run": ("1 if the last run was a dry run.", int(summary["dry_run"])),
        "gcjob_lock_held_seconds": (LOCK_HELD_HELP, lock_held_seconds),
    }
    if summary["exit_code"] == 0:
        single["gcjob_last_success_timestamp_seconds"] = ("When a run last exited 0.", finished)
    single.update(shard_count(summary))
    for name, (help_text, value) in single.items():
        Gauge(name, help_text, registry=registry).set(value)
    return registry


SHARD_COUNT_HELP = (
    "COUNT of --shard INDEX/COUNT: how many shards, each its own group, the alerts expect to "
    "hear from (a shard that never pushes has no group of its own to alert on)."
)


def shard_count(summary: dict[str, Any]) -> dict[str, tuple[str, float]]:
    """gcjob_shard_count, pushed by every shard of a sharded install; nothing unsharded."""
    shard = summary.get("shard")
    return {"gcjob_shard_count": (SHARD_COUNT_HELP, shard["count"])} if shard else {}


def skipped_registry(
    summary: dict[str, Any], finished: float, lock_held_seconds: float
) -> CollectorRegistry:
    """The metrics of a run that stepped aside for the rollout Job (the summary's `skipped`):
    it swept nothing, so it says only that, and how long the lock has been held (and, a shard,
    its COUNT); the last run that swept keeps its numbers until the drain pushes its own."""
    registry = CollectorRegistry()
    single: dict[str, tuple[str, float]] = {
        "gcjob_run_skipped_timestamp_seconds": (
            "When a run last stepped aside for the rollout Job (--drain holds the lock).",
            finished,
        ),
        "gcjob_lock_held_seconds": (LOCK_HELD_HELP, lock_held_seconds),
        "gcjob_last_success_timestamp_seconds": ("When a run last exited 0.", finished),
        **shard_count(summary),
    }
    for name, (help_text, value) in single.items():
        Gauge(name, help_text, registry=registry).set(value)
    return registry


def push(
    url: str,
    summary: dict[str, Any],
    *,
    duration: float,
    finished: float,
    lock_held_seconds: float = 0.0,
) -> bool:
    """Push the run's metrics; False (and a warning) when the Pushgateway did not take them.
    A run that swept nothing, stepping aside for the rollout Job, adds its few (POST) to the
    group and leaves the rest as the last run that swept pushed them: replacing the group
    would make every count vanish for the drain's length."""
    skipped = bool(summary.get("skipped"))
    registry = (
        skipped_registry(summary, finished, lock_held_seconds)
        if skipped
        else registry_of(
            summary, duration=duration, finished=finished, lock_held_seconds=lock_held_seconds
        )
    )
    send = push_to_gateway if summary["exit_code"] == 0 and not skipped else pushadd_to_gateway
    try:
        send(
            url,
            job=JOB,
            registry=registry,
            grouping_key=grouping(summary),
            timeout=PUSH_TIMEOUT,
            handler=routed_handler,
        )
    except Exception as exc:  # any failure to push is a warning: the sweep itself is done
        log.warning("could not push metrics to the Pushgateway: %s", _one_line(exc))
        return False
    return True


def routed_handler(
    url: str, method: str, timeout: float | None, headers: list[tuple[str, str]], data: bytes
) -> Callable[[], None]:
    """prometheus_client's default handler, through the proxy chosen for `url` (or none):
    its own opener would read the environment by urllib's rules. The push carries no
    credential (a Pushgateway URL with userinfo is refused at start). Raises
    urls.ProxyRefused (a warning, as any failed push) in a CGI process with HTTP_PROXY."""
    proxy = proxy_route(url, proxy_env(os.environ), credentials=False)
    scheme = url.partition("://")[0].lower()
    authorization = proxy_authorization(proxy) if proxy else None

    def handle() -> None:
        request = Request(url, data=data, method=method)
        for key, value in headers:
            request.add_header(key, value)
        if authorization:  # as Go sends it, not by urllib's own decoding of the userinfo
            request.add_header("Proxy-Authorization", authorization)
        opener = build_opener(ProxyHandler({scheme: without_userinfo(proxy)} if proxy else {}))
        answer = opener.open(request, timeout=timeout)
        if answer.code >= 400:
            raise OSError(f"error talking to pushgateway: {answer.code} {answer.msg}")

    return handle


def _one_line(exc: BaseException) -> str:
    return clip(redact(f"{type(exc).__name__}: {exc}"), 300)


# The namespaces sweep's report-only findings, by state: a leftover hub namespace of a deleted
# project that is empty (its `would-delete` items), holds objects, or has a kind not listable.
NAMESPACES_SWEEP = "namespaces"
LEFTOVER_STATES = (
    ("empty", None),
    ("holding", Reason.NAMESPACE_HOLDS),
    ("not-listable", Reason.NAMESPACE_NOT_LISTABLE),
    ("not-inspected", Reason.NAMESPACE_NOT_INSPECTED),  # proven gone, past the per-run cap
)


def leftover_namespaces(summary: dict[str, Any], registry: CollectorRegistry) -> None:
    """`gcjob_run_leftover_namespaces{state}`, when the namespaces sweep completed (every
    state, 0 included: its alert must see it resolve); a sweep that did not (not configured,
    incomplete, stopped) says nothing of the hub's namespaces, so no number is pushed."""
    state = summary["sweeps"].get(NAMESPACES_SWEEP)
    if state is None or state.get("status") != "completed":
        return
    gauge = Gauge(
        "gcjob_run_leftover_namespaces",
        "Hub namespaces ns-<uid> whose upstream namespace the last run proved gone (the "
        "namespaces sweep, report-only), by state: empty (would-delete), holding (objects "
        "besides what every namespace holds), not-listable (a kind it could not list), "
        "not-inspected (past --namespaces-max-inspected this run).",
        ["state"],
        registry=registry,
    )
    counts = summary["counts"].get(NAMESPACES_SWEEP, {})
    for state, reason in LEFTOVER_STATES:
        if reason is None:
            found = sum(counts.get("would-delete", {}).values())
        else:
            found = sum(reasons.get(reason.value, 0) for reasons in counts.values())
        gauge.labels(state).set(found)
