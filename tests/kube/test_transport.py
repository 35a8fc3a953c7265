"""gcjob/kube/transport.py over real HTTP (the real hub behind the fault proxy): retries,
backoff, deadlines."""

from __future__ import annotations

import base64
import gzip
import socket
import threading
import time
from email.utils import parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import urllib3
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.client import ApiClient, Configuration

from gcjob.budget import RunBudget
from gcjob.kube import requests
from gcjob.kube import transport as transport_module
from gcjob.kube.connect import hub_client
from gcjob.kube.errors import Stopped, TlsFailure, Unavailable
from gcjob.kube.resources import CONFIGMAPS
from gcjob.kube.transport import (
    CREDENTIALS_RECHECK,
    MAX_BODY_BYTES,
    Credentials,
    ExchangeThreads,
    NestedTooDeeply,
    RequestStats,
    RetryPolicy,
    StreamBroken,
    Timeouts,
    Transport,
    decode_json,
    request_url,
)
from gcjob.redact import keep_secret
from testbed.faultproxy import Fault, FaultProxy
from testbed.forwardproxy import ForwardProxy
from testbed.hostile import Hostile, hostile_transport

LIST = requests.list_page(
    CONFIGMAPS,
    namespace=None,
    label_selector=None,
    limit=10,
    continue_token=None,
    metadata_only=True,
)


# How late a bounded wait may end on a loaded CI machine (four test workers on two cores).
# The peers below drip for 100 s and the read timeouts are 30 s: any bound well under those
# proves the deadline held.
SLACK = 1.5


@pytest.fixture
def kubeconfig(faults: FaultProxy, hub_kubeconfig: str) -> str:
    return hub_kubeconfig


class Clock:
    """Fake time shared by the budget and the sleeps, so backoffs cost nothing."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def make(
    kubeconfig: str, *, budget: RunBudget | None = None, attempts: int = 5, keeps_date: bool = True
):
    clock = Clock()
    stats = RequestStats()
    transport = Transport(
        hub_client(kubeconfig, None),
        "hub",
        stats=stats,
        budget=budget or RunBudget(None, clock=clock),
        timeouts=Timeouts(1.0, 1.0),
        retry=RetryPolicy(attempts=attempts),
        sleep=clock.sleep,
        keeps_date=keeps_date,
    )
    return transport, clock, stats


def test_the_hubs_transport_keeps_the_date_of_its_last_answer_and_an_upstreams_none(
    kubeconfig: str,
) -> None:
    hub, _, _ = make(kubeconfig)
    upstream, _, _ = make(kubeconfig, keeps_date=False)

    assert hub.send(LIST).status == 200 and upstream.send(LIST).status == 200

    assert hub.last_date is not None
    assert parsedate_to_datetime(hub.last_date).tzinfo is not None  # the server's own Date
    assert upstream.last_date is None  # a string a cluster for the run, and never read


def test_transient_errors_are_retried_with_growing_backoff(
    faults: FaultProxy, kubeconfig: str
) -> None:
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", status=503, times=2))
    transport, clock, stats = make(kubeconfig)

    response = transport.send(LIST)

    assert response.status == 200
    assert stats.by_target["hub"] == 3
    # Two backoffs with jitter: 0.125-0.25 s, then 0.25-0.5 s.
    assert 0.375 <= sum(clock.slept) <= 0.75


def test_idle_connections_are_closed_on_request_and_reopened_when_needed(
    faults: FaultProxy, kubeconfig: str
) -> None:
    transport, _, _ = make(kubeconfig)
    assert transport.send(LIST).status == 200
    pools = transport.api_client.rest_client.pool_manager.pools
    keys = pools.keys()  # RecentlyUsedContainer: no iteration of its own
    kept = [conn for key in keys for conn in list(pools[key].pool.queue) if conn]
    assert [conn.sock is not None for conn in kept] == [True]  # kept alive after the answer

    transport.close_idle()

    assert len(pools) == 0
    assert kept[0].sock is None  # closed, not only forgotten
    assert transport.send(LIST).status == 200  # a later request connects again
    assert len(faults.requests) == 2


def test_retry_after_is_honoured(faults: FaultProxy, kubeconfig: str) -> None:
    faults.add_fault(
        Fault(method="GET", path="/api/v1/configmaps$", status=429, headers={"Retry-After": "3"})
    )
    transport, clock, _ = make(kubeconfig)

    assert transport.send(LIST).status == 200
    assert sum(clock.slept) == pytest.approx(3.0)


def test_retries_are_bounded(faults: FaultProxy, kubeconfig: str) -> None:
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", status=500, times=None))
    transport, _, stats = make(kubeconfig, attempts=3)

    with pytest.raises(Unavailable, match="after 3 attempts: HTTP 500"):
        transport.send(LIST)
    assert stats.total == 3


def test_forbidden_is_answered_not_retried(faults: FaultProxy, kubeconfig: str) -> None:
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", status=403, times=None))
    transport, clock, stats = make(kubeconfig)

    assert transport.send(LIST).status == 403
    assert stats.total == 1 and clock.slept == []


def test_a_dropped_connection_is_resent_and_says_so(faults: FaultProxy, kubeconfig: str) -> None:
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", drop=True))
    transport, _, stats = make(kubeconfig)

    response = transport.send(LIST)

    assert response.status == 200
    assert response.resent_after_maybe_applied is True
    assert stats.total == 2


def test_no_request_after_the_deadline(faults: FaultProxy, kubeconfig: str) -> None:
    now = [100.0]
    budget = RunBudget(5.0, clock=lambda: now[0])
    now[0] = 106.0
    transport, _, stats = make(kubeconfig, budget=budget)

    with pytest.raises(Stopped, match="deadline"):
        transport.send(LIST)
    assert stats.total == 0


def test_a_stop_request_ends_retrying(faults: FaultProxy, kubeconfig: str) -> None:
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", status=503, times=None))
    budget = RunBudget(None)
    transport, _, stats = make(kubeconfig, budget=budget)
    transport._sleep = lambda _seconds: budget.request_stop("SIGTERM")

    with pytest.raises(Stopped, match="SIGTERM"):
        transport.send(LIST)
    assert stats.total == 1


# -- a hostile network peer (not Kubernetes): slow drips and huge bodies ------------------


def drip(conn: socket.socket) -> None:
    """Headers promptly, then the body one byte a second: every socket read succeeds."""
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    )
    for _ in range(100):
        conn.sendall(b" ")
        time.sleep(1.0)


def huge(conn: socket.socket) -> None:
    """A body far over the cap, sent fast and without a Content-Length (chunk after chunk)."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
    conn.sendall(b'{"items": [')
    block = b'"' + b"x" * (1024 * 1024 - 3) + b'",'
    for _ in range(MAX_BODY_BYTES // len(block) + 16):
        conn.sendall(block)


def test_a_dripping_answer_cannot_outlast_the_run() -> None:
    transport, peer = hostile_transport(drip, RunBudget(2.0))
    started = time.monotonic()
    try:
        with pytest.raises(Stopped):
            transport.send(LIST)
    finally:
        peer.close()
    # Each read got a byte within the 30 s read timeout; the run's 2 s deadline still held.
    assert time.monotonic() - started < 2.0 + SLACK


def test_an_attempt_has_a_total_deadline() -> None:
    # A byte a second never lets a 1.5 s socket read time out: only the attempt's deadline can.
    transport, peer = hostile_transport(drip, RunBudget(None), read=1.5)
    started = time.monotonic()
    try:
        with pytest.raises(Unavailable, match="after 2 attempts: AttemptTimedOut"):
            transport.send(LIST)
    finally:
        peer.close()
    # Two attempts of at most the read timeout (1.5 s) each, and one short backoff (0.25 s).
    assert time.monotonic() - started < 2 * 1.5 + 0.25 + SLACK


def test_a_stop_abandons_the_request_in_flight() -> None:
    budget = RunBudget(None)
    transport, peer = hostile_transport(drip, budget)
    threading.Timer(1.0, budget.request_stop, args=("SIGTERM",)).start()
    started = time.monotonic()
    try:
        with pytest.raises(Stopped, match="abandoned in flight: SIGTERM") as stopped:
            transport.send(LIST)
    finally:
        peer.close()
    assert time.monotonic() - started < 1.0 + SLACK
    assert stopped.value.maybe_applied is False  # a GET applies nothing


def test_a_huge_body_is_refused_not_read_into_memory() -> None:
    transport, peer = hostile_transport(huge, RunBudget(None))
    try:
        with pytest.raises(Unavailable, match="over the 128 MiB limit"):
            transport.send(LIST)
    finally:
        peer.close()
    assert transport.stats.total == 1  # an oversized answer is not asked for again


def test_a_declared_huge_body_is_refused_before_reading() -> None:
    def declared(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n{")

    transport, peer = hostile_transport(declared, RunBudget(None))
    try:
        with pytest.raises(Unavailable, match="99999999999 bytes is over the 128 MiB limit"):
            transport.send(LIST)
    finally:
        peer.close()


def test_json_nested_deeper_than_python_follows_is_a_value_error() -> None:
    deep = b'{"status": ' + b'{"a": ' * 3000 + b"1" + b"}" * 3001
    with pytest.raises(NestedTooDeeply):
        decode_json(deep)
    assert decode_json(b'{"a": [1]}') == {"a": [1]}


# -- streamed answers (send(consume=...)) ------------------------------------------------------


class Chunks:
    def __init__(self, fail_after: int | None = None) -> None:
        self.chunks: list[bytes] = []
        self.fail_after = fail_after

    def feed(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        if self.fail_after is not None and sum(map(len, self.chunks)) > self.fail_after:
            raise ValueError("consumer refuses")

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


def test_a_2xx_body_goes_to_the_consumer_and_others_are_read_whole(
    faults: FaultProxy, kubeconfig: str
) -> None:
    transport, _, _ = make(kubeconfig)
    consumer = Chunks()
    answer = transport.send(LIST, consume=consumer)
    assert answer.status == 200
    assert answer.streamed
    assert answer.body == b""
    assert decode_json(consumer.body)["kind"] == "PartialObjectMetadataList"

    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", status=403))
    refused = Chunks()
    answer = transport.send(LIST, consume=refused)
    assert answer.status == 403
    assert not answer.streamed
    assert decode_json(answer.body)["reason"] == "Forbidden"
    assert refused.chunks == []


def test_a_streamed_list_answer_gets_the_list_timeout_and_nothing_else_does(
    faults: FaultProxy, kubeconfig: str
) -> None:
    # Slow to start answering, as a watch cache converting a whole large collection is.
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", delay=1.5, times=None))
    transport = Transport(
        hub_client(kubeconfig, None),
        "hub",
        stats=RequestStats(),
        budget=RunBudget(None),
        timeouts=Timeouts(1.0, 0.5, list=5.0),
        retry=RetryPolicy(attempts=1),
    )

    consumer = Chunks()
    assert transport.send(LIST, consume=consumer).status == 200
    assert decode_json(consumer.body)["kind"] == "PartialObjectMetadataList"
    with pytest.raises(Unavailable, match=r"after 1 attempts: (AttemptTimedOut|ReadTimeoutError)"):
        transport.send(LIST)  # read whole: --read-timeout


def test_the_list_timeout_is_still_cut_to_the_runs_remaining_time(
    faults: FaultProxy, kubeconfig: str
) -> None:
    faults.add_fault(Fault(method="GET", path="/api/v1/configmaps$", delay=3.0))
    transport = Transport(
        hub_client(kubeconfig, None),
        "hub",
        stats=RequestStats(),
        budget=RunBudget(1.0),
        timeouts=Timeouts(1.0, 0.5, list=60.0),
        retry=RetryPolicy(attempts=1),
    )
    started = time.monotonic()
    with pytest.raises((Stopped, Unavailable)):
        transport.send(LIST, consume=Chunks())
    assert time.monotonic() - started < 1.0 + SLACK  # < 3.0: the delayed answer never came


def test_a_consumer_error_ends_the_attempt_and_is_not_retried() -> None:
    transport, peer = hostile_transport(huge, RunBudget(None))
    try:
        with pytest.raises(ValueError, match="consumer refuses"):
            transport.send(LIST, consume=Chunks(fail_after=1024 * 1024))
    finally:
        peer.close()
    assert transport.stats.total == 1


def test_a_streamed_body_over_its_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The streamed cap counts bytes read; nothing of them is kept by the transport."""
    monkeypatch.setattr(transport_module, "MAX_STREAM_BYTES", 8 * 1024 * 1024)
    transport, peer = hostile_transport(huge, RunBudget(None))
    consumer = Chunks()
    try:
        with pytest.raises(Unavailable, match="over the 8 MiB limit"):
            transport.send(LIST, consume=consumer)
    finally:
        peer.close()
    assert len(consumer.body) <= 8 * 1024 * 1024
    assert transport.stats.total == 1


def test_a_streamed_answer_that_breaks_off_is_stream_broken_not_retried() -> None:
    def broken(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        )
        conn.sendall(b'{"items": [{"a": 1},')
        time.sleep(0.2)
        # then the connection closes, 980 bytes short

    transport, peer = hostile_transport(broken, RunBudget(None))
    consumer = Chunks()
    try:
        with pytest.raises(StreamBroken, match="broke off after 20 bytes"):
            transport.send(LIST, consume=consumer)
    finally:
        peer.close()
    assert consumer.body == b'{"items": [{"a": 1},'
    assert transport.stats.total == 1  # a retry would feed the consumer the same items twice


def test_a_dripping_streamed_answer_has_the_same_total_deadline() -> None:
    transport, peer = hostile_transport(drip, RunBudget(None), read=1.5)
    consumer = Chunks()
    started = time.monotonic()
    try:
        with pytest.raises(StreamBroken, match="AttemptTimedOut"):
            transport.send(LIST, consume=consumer)
    finally:
        peer.close()
    assert time.monotonic() - started < 1.5 + SLACK
    assert consumer.body.strip() == b""


def test_a_stop_abandons_a_streamed_answer_in_flight() -> None:
    budget = RunBudget(None)
    transport, peer = hostile_transport(drip, budget)
    threading.Timer(1.0, budget.request_stop, args=("SIGTERM",)).start()
    started = time.monotonic()
    try:
        with pytest.raises(Stopped, match="abandoned in flight: SIGTERM"):
            transport.send(LIST, consume=Chunks())
    finally:
        peer.close()
    assert time.monotonic() - started < 1.0 + SLACK


def test_requests_are_counted_exactly_from_many_threads() -> None:
    stats = RequestStats()

    def count() -> None:
        for _ in range(10_000):
            stats.count("hub")

    threads = [threading.Thread(target=count) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stats.by_target["hub"] == 80_000


# -- encodings not asked for, and a smaller cap for upstreams (issue 20 item 7) ----------------


def gzipped(conn: socket.socket) -> None:
    """A list sent gzip-encoded although the client asked for `identity`: 10 MB of items in a
    few KB on the wire."""
    body = gzip.compress(b'{"items": [' + b'{"a": 1},' * (1024 * 1024) + b'{"a": 1}]}')
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
def test_an_encoding_not_asked_for_is_refused_not_decoded(streamed: bool) -> None:
    peer = Hostile(gzipped)
    configuration = Configuration()
    configuration.host = peer.url
    configuration.retries = False
    transport = Transport(
        ApiClient(configuration),
        "upstream/x",
        stats=RequestStats(),
        budget=RunBudget(None),
        timeouts=Timeouts(1.0, 5.0),
        retry=RetryPolicy(attempts=3),
    )
    consumer = Chunks()
    try:
        with pytest.raises(Unavailable, match="Content-Encoding 'gzip', not asked for"):
            transport.send(LIST, consume=consumer if streamed else None)
    finally:
        peer.close()
    assert consumer.chunks == []  # not a byte of it decoded
    assert transport.stats.total == 1  # not asked again
    assert b"accept-encoding: identity" in peer.received[0].lower()  # what gcjob asked for


@given(value=st.text(max_size=40))
def test_only_identity_or_no_encoding_is_accepted(value: str) -> None:
    headers = {"Content-Encoding": value}
    if value.strip().lower() in ("", "identity"):
        transport_module._check_encoding(headers)
    else:
        with pytest.raises(transport_module.EncodingRefused) as refused:
            transport_module._check_encoding(headers)
        assert "\n" not in str(refused.value)


def test_a_transport_can_have_a_smaller_body_cap() -> None:
    def megabyte(conn: socket.socket) -> None:
        body = b'{"kind": "Status", "message": "' + b"x" * (2 * 1024 * 1024) + b'"}'
        conn.sendall(
            b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
            + body
        )

    peer = Hostile(megabyte)
    configuration = Configuration()
    configuration.host = peer.url
    configuration.retries = False
    transport = Transport(
        ApiClient(configuration),
        "upstream/x",
        stats=RequestStats(),
        budget=RunBudget(None),
        max_body_bytes=1024 * 1024,
    )
    try:
        with pytest.raises(Unavailable, match="over the 1 MiB limit"):
            transport.send(LIST)
    finally:
        peer.close()


def test_an_exchange_never_waits_for_a_busy_thread_and_idle_threads_are_kept_few() -> None:
    """Exchange threads are kept for the next exchange, but one held by a peer that never
    answers (abandoned, its socket not yet timed out) holds up no other."""

    workers = ExchangeThreads(idle=2, name="test-exchange")
    held, release = threading.Event(), threading.Event()
    workers.run(lambda: (held.set(), release.wait(10)))
    assert held.wait(5)
    ran = [threading.Event() for _ in range(5)]
    for event in ran:
        workers.run(event.set)  # each while the first is still held
    assert all(event.wait(5) for event in ran)
    release.set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _exchange_threads() > 2:
        time.sleep(0.01)
    assert _exchange_threads() <= 2  # the rest ended once idle


def _exchange_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "test-exchange")


# -- requests as the client would send them, without its per-request machinery -------------

_QUERY_VALUE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@given(
    path=st.sampled_from(["/api/v1/configmaps", "/apis/g.example/v1/namespaces/a b/x", "/apis"]),
    query=st.lists(
        st.tuples(
            st.sampled_from(["limit", "labelSelector", "continue", "fieldSelector"]),
            _QUERY_VALUE,
        ),
        max_size=4,
    ),
)
def test_a_request_url_is_the_one_the_client_builds(
    path: str, query: list[tuple[str, str]]
) -> None:
    """Any selector or continue token (the server's, so anything) is quoted as
    ApiClient.param_serialize quotes it."""
    server = "https://127.0.0.1:6443/apis/resourcemanager.miloapis.com/v1alpha1/projects/p/cp"
    request = requests.Request("GET", path, tuple(query))
    _, expected, _, _, _ = ApiClient(Configuration()).param_serialize(
        method="GET", resource_path=path, query_params=list(query) or None, _host=server
    )
    assert request_url(server, request) == expected


def _bearer(token: str) -> Configuration:
    configuration = Configuration()
    configuration.api_key["BearerToken"] = token
    return configuration


def test_credentials_are_the_clients_and_its_hook_runs_once_a_recheck() -> None:
    configuration = _bearer("Bearer one")
    runs: list[str] = []

    def hook(target: Configuration) -> None:  # as the client's: re-applies the token
        runs.append(target.api_key["BearerToken"])

    configuration.refresh_api_key_hook = hook
    now = [10.0]
    credentials = Credentials(ApiClient(configuration), clock=lambda: now[0])

    assert credentials.headers() == {"authorization": "Bearer one"}
    configuration.api_key["BearerToken"] = "Bearer two"  # what a renewed token does
    now[0] += CREDENTIALS_RECHECK / 2
    assert credentials.headers() == {"authorization": "Bearer one"}
    assert len(runs) == 1
    now[0] += CREDENTIALS_RECHECK
    assert credentials.headers() == {"authorization": "Bearer two"}
    assert len(runs) == 2
    # The same header ApiClient.update_params_for_auth would have set.
    headers: dict[str, str] = {}
    ApiClient(configuration).update_params_for_auth(headers, [], ["BearerToken"], "/", "GET", None)
    assert credentials.headers() == headers


def test_a_client_without_a_token_sends_no_authorization() -> None:
    assert Credentials(ApiClient(Configuration())).headers() == {}


def test_the_server_sees_the_headers_the_client_sent(faults: FaultProxy, kubeconfig: str) -> None:
    transport, _, _ = make(kubeconfig)
    client = transport.api_client
    selector = "app in (a,b),!gcjob.io/x"
    request = requests.list_page(
        CONFIGMAPS,
        namespace="default",
        label_selector=selector,
        limit=10,
        continue_token=None,
        metadata_only=True,
    )

    assert transport.send(request).status == 200
    seen = faults.requests[-1]
    assert seen.query["labelSelector"] == [selector]
    assert seen.accept == request.accept
    assert seen.headers["user-agent"] == client.default_headers["User-Agent"]
    assert seen.headers["authorization"] == client.configuration.get_api_key_with_prefix(
        "BearerToken"
    )


def test_a_body_is_sent_as_json(faults: FaultProxy, kubeconfig: str) -> None:
    transport, _, _ = make(kubeconfig)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "w36c-"}}
    response = transport.send(requests.create(CONFIGMAPS, "default", body))

    assert response.status == 201
    seen = faults.requests[-1]
    assert seen.method == "POST" and seen.body == body
    assert seen.headers["content-type"] == "application/json"
    name = response.json()["metadata"]["name"]
    meta = response.json()["metadata"]
    # A delete's preconditions reach the server in its body: pinned to another version, it is
    # refused, and nothing is deleted.
    stale = requests.delete(CONFIGMAPS, "default", name, meta["uid"], "1")
    assert transport.send(stale).status == 409
    assert faults.requests[-1].body["preconditions"] == {"uid": meta["uid"], "resourceVersion": "1"}
    delete = requests.delete(CONFIGMAPS, "default", name, meta["uid"], meta["resourceVersion"])
    assert transport.send(delete).status == 200


def test_a_server_whose_certificate_does_not_verify_is_a_tls_failure(kubeconfig: str) -> None:
    """Not retried, one line, as the client's own words said it."""
    import certifi

    client = hub_client(kubeconfig, None)
    client.configuration.ssl_ca_cert = certifi.where()  # not the test CA
    stranger = ApiClient(client.configuration)
    transport = Transport(stranger, "hub", stats=RequestStats(), budget=RunBudget(None))

    with pytest.raises(TlsFailure, match=r"SSLError .*CERTIFICATE_VERIFY_FAILED") as raised:
        transport.send(LIST)
    assert "\n" not in str(raised.value)
    assert transport.stats.total == 1


def test_a_get_reaches_the_server_as_the_pool_manager_sends_it(
    faults: FaultProxy, kubeconfig: str
) -> None:
    """The GET fast path (straight to the connection pool) puts the same path on the wire as
    PoolManager.request: odd characters quoted, dot segments resolved, the query as built."""
    transport, _, _ = make(kubeconfig)
    pool_manager = transport.api_client.rest_client.pool_manager
    odd = [
        requests.Request("GET", "/api/v1/namespaces/default/configmaps/a b"),
        requests.Request("GET", "/api/v1/namespaces/x/../default/configmaps/./é"),
        requests.Request("GET", "/api/v1/configmaps", (("labelSelector", "a in (b, c)"),)),
    ]
    for request in odd:
        transport.send(request)
        pool_manager.request(
            "GET",
            request_url(transport.server, request),
            headers={"Accept": request.accept},
            preload_content=True,
        )
    seen = [(r.path, r.query) for r in faults.requests]
    assert len(seen) == 2 * len(odd)
    assert seen[0::2] == seen[1::2]


@pytest.mark.parametrize("location", ["/api", "https://127.0.0.1:9/elsewhere"])
def test_a_redirect_is_answered_as_it_is_not_followed(
    faults: FaultProxy, kubeconfig: str, location: str
) -> None:
    """On this host or another: the token never goes where a Location says."""
    faults.add_fault(
        Fault(method="GET", path="/api/v1/configmaps$", status=302, headers={"Location": location})
    )
    transport, _, stats = make(kubeconfig)

    assert transport.send(LIST).status == 302
    assert stats.total == 1 and len(faults.requests) == 1


def test_a_proxied_client_and_a_write_go_through_the_pool_managers_request() -> None:
    """Only a GET without a proxy takes the fast path: a ProxyManager sends its own way."""
    sent: list[str] = []

    def through(manager: urllib3.PoolManager, method: str) -> None:
        request = manager.request

        def spy(*args: object, **kwargs: object) -> object:
            sent.append(method)
            return request(*args, **kwargs)

        manager.request = spy  # type: ignore[method-assign]
        with pytest.raises(urllib3.exceptions.HTTPError):  # nothing listens on port 9
            transport_module._open(
                manager,
                method,
                "http://127.0.0.1:9/api/v1/configmaps",
                body=None,
                headers={},
                timeout=urllib3.Timeout(1.0),
            )

    through(urllib3.ProxyManager("http://127.0.0.1:9", retries=False), "GET")
    through(urllib3.PoolManager(retries=False), "DELETE")
    through(urllib3.PoolManager(retries=False), "GET")
    assert sent == ["GET", "DELETE"]


# -- a proxy's own credentials, and redaction before a cut (issue 46, the audit of finding 6) --


class _Answers(BaseHTTPRequestHandler):
    """A server behind the proxy: an empty list for any GET."""

    def do_GET(self) -> None:
        body = b'{"kind": "ConfigMapList", "metadata": {}, "items": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_proxy_password_outside_latin_1_goes_to_the_proxy_as_go_sends_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """urllib3.make_headers encodes a proxy's userinfo as latin-1: `€` raised
    UnicodeEncodeError out of every request through that proxy, not a KubeError, and the run
    ended (exit 70). The credentials go as Go's net/http sends them: base64 of the
    percent-decoded bytes."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    proxy = ForwardProxy(hosts={"cluster.gcjob.test": "127.0.0.1"})
    try:
        proxy_url = proxy.url.replace("://", "://user:p%E2%82%AC%FFss@")
        monkeypatch.setenv("HTTP_PROXY", proxy_url)
        monkeypatch.delenv("http_proxy", raising=False)
        host = f"http://cluster.gcjob.test:{server.server_address[1]}"
        transport = Transport(  # no token: an http:// server may go through a proxy
            ApiClient(Configuration(host=host)),
            "upstream",
            stats=RequestStats(),
            budget=RunBudget(None),
            timeouts=Timeouts(2.0, 2.0),
            retry=RetryPolicy(attempts=1),
        )
        assert transport.send(LIST).status == 200
    finally:
        proxy.stop()
        server.shutdown()
        server.server_close()
    [forwarded] = proxy.requests
    assert forwarded.target.startswith(host + "/api/v1/configmaps")
    pair = "user:p€".encode() + b"\xffss"
    assert forwarded.headers["proxy-authorization"] == "Basic " + base64.b64encode(pair).decode()


def test_a_failure_is_redacted_before_it_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """The failure text was cut at 160 characters, then redacted: a credential the cut split
    kept its first characters, which no longer match it by value."""
    secret = "cut-in-two-secret-0123456789"
    keep_secret(secret)

    def fails(*args: object, **kwargs: object) -> object:
        raise urllib3.exceptions.ProtocolError("x" * 150 + f" {secret} was refused")

    monkeypatch.setattr(transport_module, "_open", fails)
    transport = Transport(
        ApiClient(Configuration(host="http://127.0.0.1:9")),
        "upstream",
        stats=RequestStats(),
        budget=RunBudget(None),
        timeouts=Timeouts(1.0, 1.0),
        retry=RetryPolicy(attempts=1),
    )
    with pytest.raises(Unavailable) as failed:
        transport.send(LIST)
    message = str(failed.value)
    assert "ProtocolError: xxx" in message and "***" in message
    assert secret[:8] not in message
