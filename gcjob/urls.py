"""Where gcjob may send something: checks of the URLs it is given, before the run starts."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

_LOOPBACK_NAMES = frozenset({"localhost", "localhost."})


def is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def project_api_problem(url: str) -> str | None:
    """Why the Project API may not be `url`: it receives the upstream credentials, so
    https only (http to loopback), no userinfo, no path beyond the server's prefix query."""
    problem = outbound_problem(url, secret_in_url=False)
    if problem is not None:
        return problem
    parts = urlsplit(url)
    if parts.scheme == "http" and not is_loopback(parts.hostname or ""):
        return "must be https:// (http:// would send the upstream token in cleartext)"
    if parts.query or parts.fragment:
        return "must not have a query or fragment"
    if "{" in url or "}" in url:
        # One server answers for every project: a template would make every project
        # not-answered, and nothing ever proven gone.
        return (
            "is a template: it must be the one server of Milo's Project API (the part of "
            "--upstream-server-template before /apis/resourcemanager.miloapis.com/...), "
            "without {cluster}"
        )
    return None


def outbound_problem(url: str, *, secret_in_url: bool) -> str | None:
    """Why gcjob must not send to `url`, or None. Never echoes the URL (it may hold a secret).

    `user:password@` is refused everywhere: it would reach a log line the moment a request
    failed. `secret_in_url`: the URL itself is a credential (a Slack webhook's path), so plain
    `http://` is allowed to loopback only."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # raises ValueError for a port that is no number
    except ValueError:
        return "is not a valid URL"
    if parts.scheme not in ("https", "http"):
        return "must be an http(s) URL"
    if "@" in parts.netloc:
        return "must not carry credentials (user:password@)"
    if not parts.hostname:
        return "has no host"
    if secret_in_url and parts.scheme == "http" and not is_loopback(parts.hostname):
        return "must be https:// (http:// would send the URL, a credential, in cleartext)"
    return None
