"""Errors of the access layer: each carries a one-line message fit for the report."""

from __future__ import annotations


class KubeError(Exception):
    """A request could not be answered with what gcjob needs."""

    # True when an attempt of the failed request may have been applied (no answer, or a 5xx):
    # a DELETE failing this way must be settled by looking before it is reported.
    maybe_applied: bool = False


class ApiError(KubeError):
    def __init__(self, status: int, reason: str, message: str, path: str) -> None:
        self.status = status
        self.reason = reason
        self.path = path
        super().__init__(f"HTTP {status} {reason} on {path}: {message}"[:300])


class Unavailable(KubeError):
    """No answer: connection refused or dropped, timeouts, retries used up."""


class TlsFailure(Unavailable):
    """The server could not be verified (or the TLS handshake failed): configuration."""


class Stopped(KubeError):
    """The run was stopped (deadline or signal) before this request could be made."""


class ConfigError(Exception):
    """Bad kubeconfig, context or flag combination: exit 2, nothing touched."""


class UnknownCluster(Exception):
    """No endpoint is configured for this upstream cluster name."""


class DeleteUncertain(KubeError):
    """A delete may have been applied, and looking could not tell: reported as such."""
