"""Sends Requests through the official client's urllib3 pool; owns timeouts and retries.

The client's own urllib3 retries are switched off (see connect.py): they would re-send a
DELETE silently. Retries happen here only, bounded in attempts and time, and a response
says whether the request was re-sent after an attempt that may have been applied (no
answer, or a 5xx), so the access layer can tell "my earlier attempt applied" from "someone
else deleted it".
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from gcjob.budget import RunBudget
from gcjob.kube.errors import KubeError, Stopped, TlsFailure, Unavailable
from gcjob.kube.requests import Request

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 5
    base_delay: float = 0.25
    max_delay: float = 8.0
    max_total: float = 30.0  # never spend longer than this on one request's retries


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float = 5.0
    read: float = 30.0


@dataclass(slots=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes
    resent_after_maybe_applied: bool = False  # an earlier attempt may have been applied

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class RequestStats:
    """API requests made, per target ("hub", "upstream/<cluster>")."""

    def __init__(self) -> None:
        self.by_target: Counter[str] = Counter()

    def count(self, target: str) -> None:
        self.by_target[target] += 1

    @property
    def total(self) -> int:
        return sum(self.by_target.values())


class Transport:
    def __init__(
        self,
        api_client: ApiClient,
        target: str,
        *,
        stats: RequestStats,
        budget: RunBudget,
        timeouts: Timeouts = Timeouts(),
        retry: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.api_client = api_client
        self.target = target
        self.stats = stats
        self.budget = budget
        self.timeouts = timeouts
        self.retry = retry
        self._sleep = sleep
        self._rng = rng or random.Random()
        # Pinned now: the client's token refresh hook re-applies the kubeconfig, host included,
        # on every request, which would silently send a templated upstream's requests elsewhere.
        self._server = str(api_client.configuration.host).rstrip("/")

    @property
    def server(self) -> str:
        return self._server

    def send(self, request: Request, *, final: bool = False) -> Response:
        """Send with retries. `final`: one attempt, even after a stop request (the read
        that settles what a delete in flight did, so the report does not guess). A KubeError
        raised here says whether an attempt may have been applied (`maybe_applied`)."""
        started = time.monotonic()
        maybe_applied = False
        attempt = 0
        while True:
            attempt += 1
            stop = None if final else self.budget.stop_reason()
            if stop is not None:
                raise _with(
                    Stopped(f"{request.method} {request.path} not sent: {stop}"), maybe_applied
                )
            try:
                response = self._send_once(request)
            except ApiException as exc:  # how the client reports TLS failures: not transient
                reason = " ".join(str(exc.reason).split())[:200]  # one line
                raise TlsFailure(
                    f"{request.method} {request.path} on {self.target}: {reason}"
                ) from exc
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                # No answer: the request may or may not have been applied.
                maybe_applied = True
                failure = f"{type(exc).__name__}: {str(exc)[:160]}"
                retry_after = None
            else:
                response.resent_after_maybe_applied = maybe_applied
                if response.status not in RETRYABLE_STATUS:
                    return response
                # A 5xx can come after the server applied the request (a proxy timing out,
                # etcd slow to answer); a 429 is refused before anything is done.
                maybe_applied = maybe_applied or response.status != 429
                failure = f"HTTP {response.status}"
                retry_after = _retry_after(response.headers)
            delay = self._delay(attempt, retry_after)
            spent = time.monotonic() - started
            if final or attempt >= self.retry.attempts or spent + delay > self.retry.max_total:
                raise _with(
                    Unavailable(
                        f"{request.method} {request.path} on {self.target} failed after "
                        f"{attempt} attempts: {failure}"
                    ),
                    maybe_applied,
                )
            remaining = self.budget.remaining()
            if remaining is not None and delay >= remaining:
                raise _with(
                    Stopped(f"{request.method} {request.path}: deadline before next retry"),
                    maybe_applied,
                )
            self.budget.sleep(delay, self._sleep)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.retry.max_delay)
        ceiling = min(self.retry.max_delay, self.retry.base_delay * 2 ** (attempt - 1))
        return self._rng.uniform(ceiling / 2, ceiling)  # jitter keeps retries of runs apart

    def _send_once(self, request: Request) -> Response:
        headers = {"Accept": request.accept}
        if request.content_type:
            headers["Content-Type"] = request.content_type
        self.stats.count(self.target)
        method, url, header_params, body, post_params = self.api_client.param_serialize(
            method=request.method,
            resource_path=request.path,
            query_params=list(request.query) or None,
            header_params=headers,
            body=request.body,
            auth_settings=["BearerToken"],
            _host=self._server,
        )
        raw = self.api_client.call_api(
            method,
            url,
            header_params=header_params,
            body=body,
            post_params=post_params,
            _request_timeout=(self.timeouts.connect, self.timeouts.read),
        )
        try:
            data = raw.read()
        finally:
            raw.response.release_conn()  # back to the pool: keep-alive across pages
        return Response(raw.status, dict(raw.headers or {}), data or b"")


def _with(error: KubeError, maybe_applied: bool) -> KubeError:
    error.maybe_applied = maybe_applied
    return error


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
