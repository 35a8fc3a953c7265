"""Sends Requests through the official client's urllib3 pool; owns timeouts, retries and limits.

Each attempt has a total deadline (the read timeout, or the list timeout for a streamed list
answer, capped by the run's remaining time),
not just a per-socket-read timeout: a peer dripping one byte a second cannot hold a run. The
exchange runs in a daemon thread while the caller waits in ticks, so a stop (SIGTERM,
`--timeout`) abandons a request in flight at once. A body over MAX_BODY_BYTES is refused.
A list answer can instead be streamed to a consumer as it arrives (`send(consume=...)`): its
chunks are handed over in the caller's thread, at most MAX_STREAM_BYTES of them, and an answer
that breaks off after the consumer saw some of it is StreamBroken, never retried here (the
consumer cannot take back what it saw: the access layer restarts the list).

Requests go straight to the client's urllib3 pool, with the client's credentials
(`Credentials`), not through its ApiClient.call_api: that re-ran the kubeconfig's refresh hook
(the whole kubeconfig re-applied, the proxy environment read again) and rebuilt every header for
every request: a tenth of a run's CPU at 1,000 upstream clusters.

Each request goes straight to its server or through the proxy chosen for its URL, as Go's
net/http chooses (`Routes`, `urls.proxy_route`): never the client's own choice, made once for
the kubeconfig's host. A request that would carry a credential in cleartext to a proxy is not
sent (ProxyRefused).

The client's own urllib3 retries are switched off (see connect.py): they would re-send a
DELETE silently. Retries happen here only, bounded in attempts and time, and a response
says whether the request was re-sent after an attempt that may have been applied (no
answer, or a 5xx), so the access layer can tell "my earlier attempt applied" from "someone
else deleted it".
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol
from urllib.parse import quote
from weakref import WeakKeyDictionary

import urllib3
from kubernetes.client import ApiClient
from urllib3.util.url import parse_url

from gcjob.budget import RunBudget
from gcjob.kube.errors import (
    AnswerTooLarge,
    KubeError,
    ProxyRefused,
    Stopped,
    TlsFailure,
    Unavailable,
)
from gcjob.kube.requests import Request
from gcjob.redact import error_line, keep_authorization, redact
from gcjob.urls import ProxyEnv, proxy_authorization, proxy_env, proxy_route
from gcjob.urls import ProxyRefused as RouteRefused

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})

# The largest response body read. A metadata-only list page of 500 objects is a few MB even
# with large annotations (a 500-item page at 128 KiB of annotations each is 64 MB); an
# unpaginated metadata list of 20,000 objects is 30-60 MB. Past this, the answer is refused:
# that list or cluster is unavailable, never a memory blow-up (decoded JSON costs ~5-10x).
MAX_BODY_BYTES = 128 * 1024 * 1024
# A streamed list answer is decoded as it arrives, so its size costs time, not memory: the
# cap only ends an answer that would not end. 1 GiB is about a million metadata-only objects in
# one answer (a 1.25 watch cache ignores `limit`); past that, list with --list-from etcd.
MAX_STREAM_BYTES = 1024 * 1024 * 1024
_CHUNK = 64 * 1024
_QUEUED_CHUNKS = 8  # read ahead of the consumer at most this much (512 KiB)
# One for every transport: a generator's state is 2.5 KiB, 2.4 MiB over 1,000 upstreams.
_JITTER = random.Random()
# After a stop, the one read that settles a delete in flight (`final`) gets at most this long.
FINAL_READ_SECONDS = 5.0
# How soon a waiting request notices a stop request or its deadline.
TICK = 0.1


class NestedTooDeeply(ValueError):
    """JSON deeper than Python's decoder can follow: malformed input, not a crash."""


def decode_json(body: bytes) -> Any:
    """JSON, or ValueError (NestedTooDeeply where the RecursionError would have escaped)."""
    try:
        return json.loads(body)
    except RecursionError:
        raise NestedTooDeeply("nested too deeply to decode") from None


class BodyTooLarge(Exception):
    """The answer was larger than the transport's body cap: not read further, not retried."""


class EncodingRefused(Exception):
    """The answer came in a Content-Encoding gcjob did not ask for (it asks for `identity`):
    not decoded, not retried. A gzip body of a few hundred KB can decode to gigabytes."""


class AttemptTimedOut(Exception):
    """An attempt did not finish (headers and whole body) within its deadline."""


class StreamBroken(Unavailable):
    """A streamed answer failed after its consumer had seen part of it: not retried."""


class BodyConsumer(Protocol):
    """Takes a 2xx answer's body chunk by chunk (see ListStream)."""

    def feed(self, chunk: bytes) -> None: ...


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
    # A streamed list answer's attempt (None: `read`). A watch-cache list sends nothing until
    # the server has converted the whole collection: at 100k ResourceBindings that took over
    # 15 s before the first byte on the benchmark machine.
    list: float | None = None

    def attempt(self, *, streamed: bool) -> float:
        """The total time one attempt may take."""
        return self.list if streamed and self.list is not None else self.read


@dataclass(slots=True)
class Response:
    status: int
    headers: Mapping[str, str]
    body: bytes  # empty when the body went to a consumer
    resent_after_maybe_applied: bool = False  # an earlier attempt may have been applied
    streamed: bool = False  # the body went to the consumer

    def json(self) -> Any:
        return decode_json(self.body) if self.body else None


class CountsRequests(Protocol):
    """What keeps one upstream cluster's own count of requests (kube/upstreams.Shared)."""

    def count_request(self) -> None: ...


class RequestStats:
    """API requests made, per kind of target ("hub"; "upstream", the Project API's with them);
    counted from many threads. Each upstream cluster's own count is kept with what its
    readers share (`count`'s `cluster`), not in a map here: one keyed by its target was a
    string and an entry a cluster for the run."""

    def __init__(self) -> None:
        self.by_target: Counter[str] = Counter()
        self._lock = threading.Lock()

    def count(self, target: str, cluster: CountsRequests | None = None) -> None:
        kind = target.partition("/")[0]
        with self._lock:
            self.by_target[kind] += 1
        if cluster is not None:
            cluster.count_request()

    @property
    def total(self) -> int:
        return sum(self.by_target.values())


# How often the client's credentials are looked at again (its refresh hook run): it renews an
# exec plugin's token 5 minutes before it expires, and re-reads an in-cluster token file once
# a minute, so a second's delay never sends an expired token.
CREDENTIALS_RECHECK = 1.0


class Credentials:
    """The headers an API client's requests carry for their credentials (its bearer token,
    if it has one), as the client itself sends them, with its refresh hook run at most every
    CREDENTIALS_RECHECK seconds instead of before every request. One for each client,
    shared by the transports that use it (the templated upstream clusters share one)."""

    __slots__ = ("_checked", "_clock", "_configuration", "_headers", "_lock")

    def __init__(self, api_client: ApiClient, clock: Callable[[], float] = time.monotonic) -> None:
        self._configuration = api_client.configuration
        self._clock = clock
        self._lock = threading.Lock()
        self._checked: float | None = None
        self._headers: dict[str, str] = {}

    def headers(self) -> dict[str, str]:
        now = self._clock()
        with self._lock:
            if self._checked is None or now - self._checked >= CREDENTIALS_RECHECK:
                self._headers = self._look()
                self._checked = now
            return self._headers

    def _look(self) -> dict[str, str]:
        """What ApiClient.update_params_for_auth would add: the `authorization` header, from
        Configuration.auth_settings (which runs the refresh hook)."""
        setting = self._configuration.auth_settings().get("BearerToken")
        value = setting.get("value") if setting else None
        if value is None:
            return {}
        keep_authorization(value)  # a refreshed token too: redacted by value wherever it shows
        return {str(setting["key"]): str(value)}

    def sent(self) -> bool:
        """Whether the requests carry a credential (what a proxy must not read)."""
        return bool(self.headers())


_CREDENTIALS: WeakKeyDictionary[ApiClient, Credentials] = WeakKeyDictionary()
_CREDENTIALS_LOCK = threading.Lock()


def credentials_of(api_client: ApiClient) -> Credentials:
    """The one Credentials of `api_client`, made on first need."""
    with _CREDENTIALS_LOCK:
        found = _CREDENTIALS.get(api_client)
        if found is None:
            found = _CREDENTIALS[api_client] = Credentials(api_client)
        return found


_UNCHOSEN = object()


class Routes:
    """Which pool manager a request goes through: the client's own, straight to the server, or
    a proxy manager made from the same settings (its TLS trust and client certificate, its
    kept-alive connections), through the proxy `urls.proxy_route` chooses for the request's
    server; chosen once per server and whether the request carries a credential. One for each
    client, shared by the transports that use it (the templated upstream clusters share one),
    as `Credentials`. The environment is read when it is made (each run makes its clients)."""

    __slots__ = ("__weakref__", "_chosen", "_client", "_env", "_lock", "_managers")

    def __init__(self, api_client: ApiClient, env: ProxyEnv | None = None) -> None:
        self._client = api_client
        self._env = proxy_env(os.environ) if env is None else env
        self._lock = threading.Lock()
        self._chosen: dict[tuple[str, bool], object] = {}  # a proxy URL, None or a refusal
        self._managers: dict[str, urllib3.PoolManager] = {}

    def manager(self, server: str, credentials: bool) -> urllib3.PoolManager:
        """The pool manager for requests to `server`; raises ProxyRefused (a KubeError, not
        retried) for a request that must not be sent."""
        key = (server, credentials)
        chosen = self._chosen.get(key, _UNCHOSEN)  # without the lock: every request asks
        if chosen is _UNCHOSEN:
            explicit = self._client.configuration.proxy or None  # the kubeconfig's proxy-url
            try:
                chosen = proxy_route(server, self._env, credentials=credentials, explicit=explicit)
            except RouteRefused as refused:
                chosen = refused
            with self._lock:
                chosen = self._chosen.setdefault(key, chosen)
        if isinstance(chosen, RouteRefused):
            raise ProxyRefused(str(chosen))
        direct: urllib3.PoolManager = self._client.rest_client.pool_manager
        if chosen is None:
            return direct
        assert isinstance(chosen, str)
        manager = self._managers.get(chosen)
        if manager is None:
            with self._lock:
                manager = self._managers.get(chosen)
                if manager is None:
                    manager = self._managers[chosen] = _proxy_manager(chosen, direct)
        return manager

    def clear(self) -> None:
        """Close the kept-alive connections (Transport.close_idle), unless the client's pool
        keeps them for the other clusters that share it (connect.SharedPoolManager)."""
        direct = self._client.rest_client.pool_manager
        direct.clear()
        if getattr(direct, "keeps_connections", False):
            return
        with self._lock:
            managers = list(self._managers.values())
        for manager in managers:
            manager.clear()


def _proxy_manager(proxy: str, direct: urllib3.PoolManager) -> urllib3.PoolManager:
    """A proxy manager for `proxy` with `direct`'s connection settings: an https:// server
    through a CONNECT tunnel, TLS end to end. A proxy's userinfo is its basic auth
    (Proxy-Authorization, as Go sends it: urls.proxy_authorization), redacted by value from
    the start (urls.keep_proxy_credentials). Raises ProxyRefused for a proxy
    gcjob cannot use (a socks5 proxy: no SOCKS support is installed; an unknown scheme):
    never straight to the server instead, which the proxy may exist to prevent."""
    try:
        parsed = parse_url(proxy)
    except urllib3.exceptions.LocationParseError:
        raise ProxyRefused("the proxy chosen for it is not a valid URL: not sent") from None
    scheme = (parsed.scheme or "http").lower()
    where = f"{parsed.host}:{parsed.port}" if parsed.port else str(parsed.host)
    if scheme not in ("http", "https"):
        raise ProxyRefused(
            f"the proxy {where} is {scheme}://, which gcjob cannot use (http:// or https:// "
            "only): not sent"
        )
    # Not urllib3's make_headers: it encodes as latin-1, and a password with `€` in it
    # raised UnicodeEncodeError out of every request (issue 46).
    authorization = proxy_authorization(proxy)
    headers = {"proxy-authorization": authorization} if authorization else {}
    bare = parsed._replace(auth=None, path=None, query=None, fragment=None).url
    kw = dict(direct.connection_pool_kw)
    return urllib3.ProxyManager(bare, proxy_headers=headers, **kw)


_ROUTES: WeakKeyDictionary[ApiClient, Routes] = WeakKeyDictionary()


def routes_of(api_client: ApiClient) -> Routes:
    """The one Routes of `api_client`, made on first need."""
    with _CREDENTIALS_LOCK:
        found = _ROUTES.get(api_client)
        if found is None:
            found = _ROUTES[api_client] = Routes(api_client)
        return found


def request_url(server: str, request: Request) -> str:
    """The URL as the client's ApiClient.param_serialize makes it: the path as given, each
    query value quoted (`/` kept), the names as they are."""
    if not request.query:
        return server + request.path
    query = "&".join(f"{name}={quote(value)}" for name, value in request.query)
    return f"{server}{request.path}?{query}"


class Transport:
    # Made for each use of an upstream cluster, thousands in a run: slots, not a dict each.
    __slots__ = (
        "_credentials",
        "_keeps_date",
        "_rng",
        "_routes",
        "_server",
        "_sleep",
        "api_client",
        "budget",
        "counts",
        "last_date",
        "max_body_bytes",
        "retry",
        "stats",
        "target",
        "timeouts",
    )

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
        max_body_bytes: int = MAX_BODY_BYTES,
        server: str | None = None,
        keeps_date: bool = True,
        counts: CountsRequests | None = None,
    ) -> None:
        """`max_body_bytes`: the largest answer read whole (an upstream's is far smaller
        than the hub's: it answers a handful of Gateways, and a hostile one is decoded too).
        `server`: where requests go when not the client's own host (the templated upstream
        clusters share one client, connect.UpstreamClient). `keeps_date`: whether
        `last_date` is kept (the hub's: the run's clock); an upstream's is not, a string
        a cluster for the run. `counts`: the upstream cluster's own count of its requests."""
        self.api_client = api_client
        self.counts = counts
        self.max_body_bytes = max_body_bytes
        self.target = target
        self.stats = stats
        self.budget = budget
        self.timeouts = timeouts
        self.retry = retry
        self._sleep = sleep
        self._rng = rng or _JITTER
        # Pinned now: the client's token refresh hook re-applies the kubeconfig, host included,
        # whenever it runs (Credentials), which would silently send a templated upstream's
        # requests elsewhere.
        self._server = (server or str(api_client.configuration.host)).rstrip("/")
        self._credentials = credentials_of(api_client)
        self._routes = routes_of(api_client)
        # The `Date` of the latest answer: a live run's clock is the hub's (times.run_clock).
        self.last_date: str | None = None
        self._keeps_date = keeps_date

    @property
    def server(self) -> str:
        return self._server

    def close_idle(self) -> None:
        """Close the kept-alive connections. A TLS connection costs about 50 KiB: a run that
        keeps one open to each of 1,000 upstream clusters holds 50 MiB for nothing. Requests
        in flight keep theirs (urllib3 closes it when it comes back to a cleared pool). The
        templated clusters' shared pool keeps its own (connect.SharedPoolManager)."""
        self._routes.clear()

    def send(
        self, request: Request, *, final: bool = False, consume: BodyConsumer | None = None
    ) -> Response:
        """Send with retries. `final`: one attempt, even after a stop request (the read
        that settles what a delete in flight did, so the report does not guess). A KubeError
        raised here says whether an attempt may have been applied (`maybe_applied`).
        `consume`: a 2xx answer's body goes there as it arrives (ValueError from it ends
        the attempt and is raised as is); other answers are read whole as usual."""
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
                response = self._send_once(request, final=final, consume=consume)
            except _Interrupted as exc:
                raise _with(
                    Stopped(f"{request.method} {request.path} abandoned in flight: {exc}"),
                    maybe_applied or request.method != "GET",
                ) from None
            except StreamBroken as exc:
                raise _with(exc, maybe_applied) from None
            except (BodyTooLarge, EncodingRefused) as exc:
                refused = AnswerTooLarge if isinstance(exc, BodyTooLarge) else Unavailable
                raise _with(
                    refused(f"{request.method} {request.path} on {self.target}: {exc}"),
                    maybe_applied,
                ) from None
            except ProxyRefused as exc:  # configuration: not transient, never sent
                raise ProxyRefused(
                    f"{request.method} {request.path} on {self.target}: {exc}"
                ) from None
            except _TlsRefused as exc:  # not transient
                raise TlsFailure(
                    f"{request.method} {request.path} on {self.target}: {exc}"
                ) from exc.__cause__
            except (urllib3.exceptions.HTTPError, OSError, AttemptTimedOut) as exc:
                # No answer: the request may or may not have been applied.
                maybe_applied = True
                failure = error_line(exc, 200)  # redacted before it is cut
                retry_after = None
            else:
                if self._keeps_date:
                    self.last_date = next(
                        (v for k, v in response.headers.items() if k.lower() == "date"), None
                    )
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

    def _send_once(
        self, request: Request, *, final: bool = False, consume: BodyConsumer | None = None
    ) -> Response:
        """One attempt, bounded in total time; abandoned within a tick of a stop request
        (unless `final`). The exchange runs in a daemon thread: a thread blocked in a socket
        read cannot be interrupted, but it can be left behind (its socket times out soon).
        A streamed body comes back through a short queue and is fed here, in this thread."""
        started = time.monotonic()
        # The whole attempt: connecting, sending, the whole answer.
        limit = self.timeouts.attempt(streamed=consume is not None)
        if final:
            limit = min(limit, FINAL_READ_SECONDS)
        else:
            remaining = self.budget.remaining()
            if remaining is not None:
                limit = max(0.0, min(limit, remaining))
        deadline = started + limit
        self.stats.count(self.target, self.counts)
        exchange = _Exchange(streaming=consume is not None)
        _WORKERS.run(partial(exchange.run, partial(self._exchange, request, limit, exchange)))
        head: Response | None = None
        fed = 0
        try:
            while True:
                try:
                    kind, value = exchange.events.get(timeout=TICK)
                except queue.Empty:
                    kind, value = "wait", None
                if kind == "error":
                    raise value
                if kind == "response":  # read whole (not streamed)
                    return value  # type: ignore[no-any-return]
                if kind == "end":
                    assert head is not None
                    return head
                stop = None if final else self.budget.stop_reason()
                if stop is not None:
                    raise _Interrupted(stop)
                if kind == "head":
                    head = value
                elif kind == "chunk":
                    fed += len(value)
                    if fed > MAX_STREAM_BYTES:
                        raise BodyTooLarge(f"answer is over the {_cap(MAX_STREAM_BYTES)} limit")
                    assert consume is not None
                    consume.feed(value)
                if time.monotonic() >= deadline:
                    raise AttemptTimedOut(f"no complete answer within {limit:.1f}s")
        except (urllib3.exceptions.HTTPError, OSError, AttemptTimedOut) as exc:
            exchange.abandon()
            if fed:  # the consumer saw part of an answer: a retry would feed it twice
                raise StreamBroken(
                    f"{request.method} {request.path} on {self.target}: the answer broke off "
                    f"after {fed} bytes: {error_line(exc, 200)}"
                ) from None
            raise
        except BaseException:
            exchange.abandon()
            raise

    def _exchange(self, request: Request, limit: float, exchange: _Exchange) -> None:
        # The headers in the order the client sent them: its own (User-Agent), then the token.
        headers = {"Accept": request.accept}
        if request.content_type:
            headers["Content-Type"] = request.content_type
        if request.if_none_match:
            headers["If-None-Match"] = request.if_none_match
        client = self.api_client
        headers.update(client.default_headers)
        if client.cookie:
            headers["Cookie"] = client.cookie
        credentials = self._credentials.headers()
        headers.update(credentials)
        # Straight to the server, or through the proxy chosen for it; never a credential in
        # cleartext to a proxy (ProxyRefused, raised to the caller, not retried).
        manager = self._routes.manager(self._server, bool(credentials or client.cookie))
        # Socket timeouts no longer than the attempt, so an abandoned thread ends soon too.
        socket_read = max(0.01, limit)
        socket_connect = max(0.01, min(self.timeouts.connect, limit))
        try:
            stream = _open(
                manager,
                request.method,
                request_url(self._server, request),
                body=None if request.body is None else json.dumps(request.body),
                headers=headers,
                timeout=urllib3.Timeout(connect=socket_connect, read=socket_read),
            )
        except urllib3.exceptions.SSLError as exc:
            raise _TlsRefused(redact(f"{type(exc).__name__} {exc}")[:200]) from exc
        exchange.stream = stream
        status, response_headers = stream.status, dict(stream.headers or {})
        try:
            _check_encoding(response_headers)
            if exchange.streaming and 200 <= status < 300:
                exchange.put("head", Response(status, response_headers, b"", streamed=True))
                _stream(stream, exchange)
                exchange.put("end", None)
            else:
                data = _read_capped(stream, exchange, self.max_body_bytes)
                exchange.put("response", Response(status, response_headers, data))
        except BaseException:
            stream.close()  # unread bytes must not reach the next request on this connection
            raise
        finally:
            stream.release_conn()  # back to the pool: keep-alive across pages


def _open(
    pool_manager: urllib3.PoolManager,
    method: str,
    url: str,
    *,
    body: str | None,
    headers: dict[str, str],
    timeout: urllib3.Timeout,
) -> Any:
    """`pool_manager.request(...)`, its body left unread. A GET without a proxy goes to its
    connection pool as PoolManager.urlopen sends it, without the layers above that (about a
    tenth of a request's CPU): the same URL parsing (so the same path on the wire), the same
    pool. PoolManager.urlopen would then follow a redirect; it never does here, as retries
    are off (connect.py): a 3xx is answered as it is, both ways."""
    if method != "GET" or type(pool_manager).urlopen is not urllib3.PoolManager.urlopen:
        # A proxy's manager sends its own way; a body goes as request_encode_body puts it.
        return pool_manager.request(
            method,
            url,
            body=body,
            headers=headers,
            timeout=timeout,
            preload_content=False,
            redirect=False,
        )
    parsed = parse_url(url)
    pool = pool_manager.connection_from_host(parsed.host, port=parsed.port, scheme=parsed.scheme)
    return pool.urlopen(
        method,
        parsed.request_uri,
        headers=headers,
        timeout=timeout,
        preload_content=False,
        assert_same_host=False,
        redirect=False,
    )


class ExchangeThreads:
    """The daemon threads exchanges run in, each kept for a next one once its own is over: a
    thread made for every attempt cost about 150 µs of CPU, a tenth of an upstream request's.
    A job never waits for a busy thread: one is made whenever none is idle (an abandoned
    exchange runs on until its socket times out, and must not hold up the next). At most
    `idle` are kept idle; the others end."""

    def __init__(self, idle: int, name: str = "gcjob-exchange") -> None:
        self._max_idle = idle
        self._name = name
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0  # threads that will take a job without being made
        self._lock = threading.Lock()

    def run(self, job: Callable[[], None]) -> None:
        with self._lock:
            make = self._idle == 0
            if not make:
                self._idle -= 1
        self._jobs.put(job)
        if make:
            threading.Thread(target=self._work, name=self._name, daemon=True).start()

    def _work(self) -> None:
        while True:
            job: Callable[[], None] | None = self._jobs.get()
            assert job is not None
            job()  # _Exchange.run: hands every outcome to its caller, raises nothing
            job = None  # nothing of the request kept while idle
            with self._lock:
                if self._idle >= self._max_idle:
                    return
                self._idle += 1


# Idle exchange threads kept: one for each request in flight at a high --upstream-concurrency.
_WORKERS = ExchangeThreads(idle=256)


class _Interrupted(Exception):
    """A stop request abandoned the attempt in flight."""


class _TlsRefused(Exception):
    """The TLS handshake failed (the server's certificate, the client's): its one-line why."""


class _Exchange:
    """One attempt, handed from its worker thread to the waiting caller as events: a whole
    `response`; or `head`, `chunk`s and `end` for a streamed body; or an `error`."""

    def __init__(self, *, streaming: bool) -> None:
        self.streaming = streaming
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=_QUEUED_CHUNKS)
        self.abandoned = threading.Event()
        self.stream: Any = None  # the urllib3 response, once headers are in

    def run(self, exchange: Callable[[], None]) -> None:
        try:
            exchange()
        except _Interrupted:
            pass  # the caller is gone
        except BaseException as exc:  # handed to the caller, who raises it
            with contextlib.suppress(_Interrupted):
                self.put("error", exc)

    def put(self, kind: str, value: Any) -> None:
        """Waits for room (the consumer sets the pace), unless the caller is gone."""
        while not self.abandoned.is_set():
            try:
                self.events.put((kind, value), timeout=TICK)
                return
            except queue.Full:
                continue
        raise _Interrupted("abandoned")

    def abandon(self) -> None:
        self.abandoned.set()
        stream = self.stream
        if stream is not None:
            # Wakes the worker's blocked read at once; best effort: its socket timeout ends it too.
            with contextlib.suppress(Exception):
                stream.shutdown()


def _stream(stream: Any, exchange: _Exchange) -> None:
    length = stream.headers.get("Content-Length")
    if length is not None and length.isdigit() and int(length) > MAX_STREAM_BYTES:
        raise BodyTooLarge(
            f"answer of {int(length)} bytes is over the {_cap(MAX_STREAM_BYTES)} limit"
        )
    while True:
        chunk = stream.read1(_CHUNK)
        if not chunk:
            return
        exchange.put("chunk", chunk)


def _check_encoding(headers: Mapping[str, str]) -> None:
    """gcjob never asks for a compressed answer (http.client sends `Accept-Encoding:
    identity`), so any other Content-Encoding is refused before a byte of it is decoded."""
    for key, value in headers.items():
        if key.lower() == "content-encoding" and value.strip().lower() not in ("", "identity"):
            shown = " ".join(value.split())[:40]
            raise EncodingRefused(f"answer in Content-Encoding {shown!r}, not asked for: refused")


def _read_capped(stream: Any, exchange: _Exchange, limit: int = MAX_BODY_BYTES) -> bytes:
    length = stream.headers.get("Content-Length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise BodyTooLarge(f"answer of {int(length)} bytes is over the {_cap(limit)} limit")
    chunks: list[bytes] = []
    size = 0
    while not exchange.abandoned.is_set():
        chunk = stream.read1(_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"answer is over the {_cap(limit)} limit")
        chunks.append(chunk)
    raise _Interrupted("abandoned")


def _cap(limit: int = MAX_BODY_BYTES) -> str:
    if limit >= 1024 * 1024:
        return f"{limit // (1024 * 1024)} MiB"
    return f"{limit} bytes"


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
