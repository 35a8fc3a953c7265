"""`--notify-webhook URL`: a Slack-compatible message when a run deleted something, hit the
brake, found the lock held (who holds it, and why it is judged live), or failed.

It carries counts, the first few items with their reasons, the run_id and the exit code,
built from report records (metadata only: never a Secret's data), the run's credentials
redacted by value. One POST with short timeouts and no retries, so it cannot outlive the run;
a failed notification is a warning, never a changed exit code. It goes straight to the URL or
through the proxy `urls.proxy_route` chooses for it, as every request gcjob makes (the URL is a
credential: never in cleartext to a proxy), never by requests' own reading of the environment.
"""

from __future__ import annotations

import os
from typing import Any

import requests
import requests.adapters

from gcjob.exitcodes import ExitCode
from gcjob.logs import log
from gcjob.reasons import BRAKE_REASONS, ERROR_REASONS
from gcjob.redact import scrub
from gcjob.urls import (
    ProxyRefused,
    proxy_authorization,
    proxy_env,
    proxy_route,
    without_userinfo,
)

FIRST_ITEMS = 5
# The actions a message names: what a run did, or failed to do.
NOTABLE_ACTIONS = ("deleted", "delete-held", "failed")
TIMEOUTS = (3.05, 5.0)  # connect, read (seconds)
QUIET_CODES = (ExitCode.OK,)


class Notable:
    """Collects the first few item records worth a notification while the run reports."""

    def __init__(self, limit: int = FIRST_ITEMS) -> None:
        self.limit = limit
        self.items: list[dict[str, Any]] = []

    def __call__(self, record: dict[str, Any]) -> None:
        if len(self.items) < self.limit and _notable(record):
            self.items.append(record)


def _notable(record: dict[str, Any]) -> bool:
    return _counts_as_notable(record["action"], record["reason"])


def _counts_as_notable(action: str, reason: str) -> bool:
    """Deleted, failed, held by a brake, or kept by a failure (a lookup, an upstream): what a
    message names, so a failed run says what failed."""
    return action in NOTABLE_ACTIONS or reason in BRAKE_REASONS or reason in ERROR_REASONS


def failures(summary: dict[str, Any]) -> list[str]:
    """What made the run fail, for a person: each sweep not completed with its detail, the
    items that failed or were kept by a failure (by sweep and reason), the upstream clusters
    unavailable. Empty for a run that did not fail."""
    said = [
        f"{sweep} sweep {state['status']}: {state['detail']}"
        for sweep, state in summary.get("sweeps", {}).items()
        if state.get("status") not in ("completed", "braked") and state.get("detail")
    ]
    said += [
        f"{sweep}: {n} {action} ({reason})"
        for sweep, actions in summary["counts"].items()
        for action, reasons in actions.items()
        for reason, n in reasons.items()
        if action == "failed" or reason in ERROR_REASONS
    ]
    unavailable = summary.get("upstream_counts", {}).get("unavailable")
    if unavailable:
        said.append(f"upstream clusters unavailable: {unavailable}")
    return said


def why(summary: dict[str, Any]) -> list[str]:
    """Why this run is worth a message (empty: it is not)."""
    reasons = []
    if summary["totals"].get("deleted"):
        reasons.append(f"deleted {summary['totals']['deleted']}")
    if summary["totals"].get("delete-held"):
        # Deletes went out, and a finalizer holds them: said, as a deletion is.
        reasons.append(f"sent {summary['totals']['delete-held']} deletes a finalizer holds")
    if any(
        reason in BRAKE_REASONS
        for actions in summary["counts"].values()
        for reasons_ in actions.values()
        for reason in reasons_
    ):
        reasons.append("hit the brake")
    if summary["exit_code"] == ExitCode.LOCKED:
        # Said every time: a lock that never expires must not keep every run out unseen.
        # The exit reason that follows names the holder and until when it holds.
        reasons.append("found the lock held (exit 6)")
    elif summary["exit_code"] not in QUIET_CODES and summary["exit_code"] != ExitCode.BRAKE:
        reasons.append(f"failed (exit {summary['exit_code']})")
    return reasons


def message(summary: dict[str, Any], items: list[dict[str, Any]]) -> dict[str, Any]:
    """The Slack payload: plain `text` (mrkdwn), which any Slack-compatible receiver shows."""
    mode = "dry run" if summary["dry_run"] else "delete"
    shard = summary.get("shard")
    if shard:  # one of the shards of an Indexed Job: which one
        mode += f", shard {shard['index']}/{shard['count']}"
    totals = ", ".join(f"{n} {action}" for action, n in sorted(summary["totals"].items()) if n)
    lines = [
        f"*gcjob* {' and '.join(why(summary)) or 'ran'} on {summary['hub']} ({mode})",
        f"exit {summary['exit_code']}: {summary['exit_reason']}",
        f"totals: {totals or 'nothing'}",
    ]
    if summary["exit_code"] not in QUIET_CODES:
        lines += [f"why: {failure}" for failure in failures(summary)[:FIRST_ITEMS]]
    for item in items:
        where = f"{item['namespace']}/" if item.get("namespace") else ""
        cluster = f", cluster {item['cluster']}" if item.get("cluster") else ""
        lines.append(
            f"• {item['action']} {item['kind']} {where}{item['name']}"
            f" ({item['sweep']}: {item['reason']}{cluster})"
        )
    shown = len(items)
    notable = sum(
        n
        for actions in summary["counts"].values()
        for action, reasons in actions.items()
        for reason, n in reasons.items()
        if _counts_as_notable(action, reason)
    )
    if notable > shown:
        lines.append(f"… and {notable - shown} more in the report")
    lines.append(f"run_id {summary['run_id']}")
    return {"text": scrub("\n".join(lines))}


def notify(url: str, summary: dict[str, Any], items: list[dict[str, Any]]) -> bool | None:
    """Post when the run is worth it: None when it is not, else whether the post succeeded."""
    if not why(summary):
        return None
    try:
        proxy = proxy_route(url, proxy_env(os.environ), credentials=True)
    except ProxyRefused as exc:
        log.warning("could not post the notification webhook: %s", exc)
        return False
    try:
        with requests.Session() as session:
            # Only the route chosen here: requests would read the environment its own way.
            # The CA bundle it would have read from there is still honoured.
            session.trust_env = False
            routed = _Routed(proxy_authorization(proxy) if proxy else None)
            session.mount("https://", routed)
            session.mount("http://", routed)
            bare = without_userinfo(proxy) if proxy else None
            response = session.post(
                url,
                json=message(summary, items),
                timeout=TIMEOUTS,
                proxies={"http": bare, "https": bare} if bare else {},
                verify=_ca_bundle(),
            )
        response.raise_for_status()
    except requests.RequestException as exc:
        # Never the URL: a Slack webhook URL is itself a credential.
        status = getattr(exc.response, "status_code", None)
        what = f"HTTP {status}" if status else type(exc).__name__
        log.warning("could not post the notification webhook: %s", what)
        return False
    return True


class _Routed(requests.adapters.HTTPAdapter):
    """requests' adapter, with the proxy's credentials as Go sends them
    (urls.proxy_authorization): requests' own encoding is latin-1, and a proxy password with
    `€` in it raised UnicodeEncodeError out of the post (issue 46)."""

    def __init__(self, authorization: str | None) -> None:
        self._authorization = authorization
        super().__init__()

    def proxy_headers(self, proxy: str) -> dict[str, str]:
        return {"Proxy-Authorization": self._authorization} if self._authorization else {}


def _ca_bundle() -> str | bool:
    """The CA bundle requests reads from the environment (trust_env), else its own."""
    return os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
