"""Errors of the access layer: each carries a one-line message fit for the report."""

from __future__ import annotations

from gcjob.redact import redact
from gcjob.visible import clip

MAX_MESSAGE_CHARS = 300


class KubeError(Exception):
    """A request could not be answered with what gcjob needs. Its message is one redacted
    line whatever went into it: a server's Status message (a hostile upstream's included)
    reaches the report, stderr and the summary only this way."""

    # True when an attempt of the failed request may have been applied (no answer, or a 5xx):
    # a DELETE failing this way must be settled by looking before it is reported.
    maybe_applied: bool = False

    def __init__(self, *args: object) -> None:
        if len(args) == 1 and isinstance(args[0], str):
            args = (redact(args[0]),)
        super().__init__(*args)


class ApiError(KubeError):
    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        path: str,
        *,
        said: str | None = None,
        hint: str = "",
        namespace_terminating: bool = False,
        admission: bool = False,
    ) -> None:
        """`said`: the server's own words (its Status message), when `message` adds gcjob's
        `hint` to them (what to grant). `namespace_terminating`: a 403 whose Status names the
        cause NamespaceTerminating: nothing new in that namespace, which is being deleted
        (not a permission). `admission`: a 4xx an admission webhook or a
        ValidatingAdmissionPolicy answered (not RBAC)."""
        self.status = status
        self.reason = reason
        self.path = path
        self.said = redact(message if said is None else said)
        self.hint = hint
        self.namespace_terminating = namespace_terminating
        self.admission = admission
        # Redacted whole, then cut: a cut token would no longer look like one.
        super().__init__(
            clip(redact(f"HTTP {status} {reason} on {path}: {message}"), MAX_MESSAGE_CHARS)
        )

    def server_first(self) -> str:
        """The error with the server's reason first, then the request and gcjob's hint: for
        a person who acts on one object (`gcjob restore`), where a refusal's cause (a
        namespace being deleted) matters more than what gcjob would grant."""
        where = f"HTTP {self.status} {self.reason} on {self.path}"
        hint = f"; if RBAC refused it, {self.hint}" if self.hint else ""
        after = redact(" ".join(f" ({where}{hint})".split()))
        # The server's words are cut to leave room for the request and the hint after them.
        said = redact(" ".join((self.said or self.reason).split()))
        return clip(
            f"{clip(said, max(MAX_MESSAGE_CHARS - len(after) - 1, 40))} {after}", MAX_MESSAGE_CHARS
        )


class Unavailable(KubeError):
    """No answer: connection refused or dropped, timeouts, retries used up."""


class AnswerTooLarge(Unavailable):
    """An answer larger than the transport reads whole: refused unread."""


class TlsFailure(Unavailable):
    """The server could not be verified (or the TLS handshake failed): configuration."""


class ProxyRefused(Unavailable):
    """Not sent: it would carry a credential in cleartext to a proxy (an http:// server
    through one), or the proxy chosen for it cannot be used. Configuration: not retried."""


class Stopped(KubeError):
    """The run was stopped (deadline or signal) before this request could be made."""


class ConfigError(Exception):
    """Bad kubeconfig, context or flag combination: exit 2, nothing touched."""


class UnknownCluster(Exception):
    """No endpoint is configured for this upstream cluster name."""


class DeleteUncertain(KubeError):
    """A delete may have been applied, and looking could not tell: reported as such."""
