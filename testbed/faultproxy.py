"""A fault-injecting HTTPS proxy in front of a real API server.

gcjob talks to the proxy; the proxy forwards every request to the real server (a local
envtest pair or any real cluster) and hands back its answer unchanged, unless a test's
`Fault` matches the request. Then the proxy answers a status of its own (with a body and
headers such as Retry-After), waits, or resets the connection, either before the request
reaches the server or after the server applied it (`apply_first`), so that a DELETE can be
applied while its answer is lost. Kubernetes semantics all come from the real server: the
proxy only breaks the wire, and keeps a log of what gcjob asked for.

For one path a fault can also `serve` an answer of its own, streamed as it is made: what a
hostile or broken upstream sends (`hostile_list`: a list of millions of items that ignores
`limit`, gzip-encoded though nobody asked for it, a `continue` token on every page, empty
pages forever). Those answers are not Kubernetes; they are what gcjob must survive.
"""

from __future__ import annotations

import builtins
import http.client
import json
import re
import socket
import ssl
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import trustme

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    502: "BadGateway",
    503: "ServiceUnavailable",
    504: "Timeout",
}
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "upgrade"}
)


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case keys
    body: Any  # parsed JSON, or None (no body or not JSON)
    raw_body: bytes = b""
    status: int | None = None  # status sent back; None if the connection was reset (or not yet)
    received: float = field(default_factory=time.monotonic)  # when the proxy read it
    answered: float | None = None  # when the proxy finished sending its answer
    response_body: bytes = field(default=b"", repr=False)

    @property
    def accept(self) -> str:
        return self.headers.get("accept", "")


@dataclass
class Fault:
    """A misbehaviour for matching requests (checked in the order they were added)."""

    method: str | None = None  # None: any; e.g. "DELETE"
    path: str | None = None  # regex searched in the URL path; None: any
    query: dict[str, str] | None = None  # each key present with that value ("*": present at all)
    status: int | None = None  # answer this status instead of the server's
    body: dict[str, Any] | str | None = None  # dict -> JSON, str -> text/plain; None -> a Status
    headers: dict[str, str] | None = None  # e.g. {"Retry-After": "1"}
    delay: float = 0.0  # wait this long before answering (or before forwarding)
    hold: threading.Event | None = None  # and until this is set (60 s at most)
    drop: bool = False  # reset the connection (TCP RST) instead of answering
    apply_first: bool = False  # forward to the real server first, then delay/answer/drop
    serve: Callable[[RecordedRequest], Served] | None = None  # an answer of the proxy's own
    times: int | None = 1  # how many matching requests it affects; None: every one
    hits: int = 0  # how many requests it has affected

    def matches(self, rec: RecordedRequest) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if self.method is not None and self.method.upper() != rec.method:
            return False
        if self.path is not None and not re.search(self.path, rec.path):
            return False
        for key, want in (self.query or {}).items():
            have = rec.query.get(key)
            if have is None or (want != "*" and want not in have):
                return False
        return True


@dataclass
class Served:
    """An answer the proxy makes itself: its body streamed chunk by chunk as it is made
    (Transfer-Encoding: chunked), so a body of gigabytes costs the proxy nothing."""

    status: int
    headers: list[tuple[str, str]]
    chunks: Iterator[bytes]


def hostile_list(
    items: int,
    *,
    continue_token: str | None = None,
    gzipped: bool = False,
    name_bytes: int = 8,
    wide: int = 0,
    drip: float = 0.0,
) -> Callable[[RecordedRequest], Served]:
    """A Gateway list answer of `items` tiny items whatever `limit` asked for, with
    `continue_token` on every page (None: the last page), gzip-encoded if `gzipped` (gcjob
    asks for `identity`). `hostile_list(0, continue_token="again")`: empty pages forever.
    `wide`: each item also holds an array of that many empty objects (costly to decode).
    `drip`: seconds to wait before each chunk (every answer in time, but slow)."""
    spec = b', "spec": [' + b",".join([b"{}"] * wide) + b"]" if wide else b""

    def body() -> Iterator[bytes]:
        meta = {"resourceVersion": "1"}
        if continue_token is not None:
            meta["continue"] = continue_token
        yield (
            '{"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", '
            f'"metadata": {json.dumps(meta)}, "items": ['
        ).encode()
        batch: list[bytes] = []
        for i in range(items):
            name = f"g{i:0{name_bytes}d}".encode()
            batch.append(b'%s{"metadata": {"name": "%s"}%s}' % (b"," if i else b"", name, spec))
            if len(batch) == 2048 or spec:
                yield b"".join(batch)
                batch.clear()
        yield b"".join(batch) + b"]}"

    def gzip_of(chunks: Iterator[bytes]) -> Iterator[bytes]:
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip stream
        for chunk in chunks:
            packed = packer.compress(chunk)
            if packed:
                yield packed
        yield packer.flush()

    def slowly(chunks: Iterator[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            time.sleep(drip)
            yield chunk

    def serve(rec: RecordedRequest) -> Served:
        headers = [("Content-Type", "application/json")]
        if gzipped:
            headers.append(("Content-Encoding", "gzip"))
        chunks = gzip_of(body()) if gzipped else body()
        return Served(200, headers, slowly(chunks) if drip else chunks)

    return serve


@dataclass(frozen=True)
class Target:
    """The real server behind the proxy."""

    url: str  # https://host:port
    ssl_context: ssl.SSLContext  # trusts the server (and presents a client cert if needed)


class FaultProxy:
    def __init__(
        self,
        target: Target,
        *,
        strip_prefix: str | None = None,
        tls: bool = True,
        names: tuple[str, ...] = (),
    ) -> None:
        """`strip_prefix`: a regex of a leading path part removed before forwarding, so one
        real server can stand behind many templated upstream URLs. `tls`: False serves plain
        http:// (an http:// upstream template on loopback, which gcjob allows). `names`: host
        names its certificate is for, besides 127.0.0.1 and localhost."""
        self.target = target
        self.tls = tls
        self.names = names
        self.strip_prefix = re.compile(strip_prefix) if strip_prefix else None
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._requests: list[RecordedRequest] = []
        self._unserved: dict[tuple[str, str], Fault] = {}
        # Rewrites the `Date` of every answer (the server's, or the proxy's own): a skewed or
        # missing server clock (None: no Date at all). Cleared with the faults.
        self.rewrite_date: Callable[[str], str | None] | None = None
        self._ca = trustme.CA()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle ---------------------------------------------------------------------

    def start(self, ca_dir: Path) -> FaultProxy:
        self.ca_file = ca_dir / "proxy-ca.pem"
        self._ca.cert_pem.write_to_path(str(self.ca_file))
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._ca.issue_cert("127.0.0.1", "localhost", *self.names).configure_cert(context)
        proxy = self

        class Handler(_Handler):
            owner = proxy

        server = _Server(("127.0.0.1", 0), Handler)
        if self.tls:
            server.socket = context.wrap_socket(
                server.socket, server_side=True, do_handshake_on_connect=False
            )
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    # -- faults and the request log ----------------------------------------------------

    def add_fault(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()
            self._unserved.clear()
            self.rewrite_date = None

    def unserve(self, group: str, version: str) -> None:
        """Answer as a server that does not serve group/version: a plain 404 for the path,
        and an aggregated discovery answer that does not name it."""
        fault = Fault(
            path=rf"^/apis/{re.escape(group)}/{re.escape(version)}(/|$)",
            status=404,
            body="404 page not found\n",
            times=None,
        )
        with self._lock:
            self._unserved[(group, version)] = fault
            self._faults.insert(0, fault)

    def serve(self, group: str, version: str) -> None:
        with self._lock:
            fault = self._unserved.pop((group, version), None)
            if fault is not None:
                self._faults.remove(fault)

    @property
    def requests(self) -> builtins.list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def _record(self, rec: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(rec)

    def _match(self, rec: RecordedRequest) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(rec):
                    fault.hits += 1
                    return fault
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up, or a connection a fault reset: nothing to report


@dataclass
class _Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    owner: FaultProxy
    protocol_version = "HTTP/1.1"  # keep-alive, as a real API server
    # An answer goes out as two writes (headers, then body). With Nagle's algorithm the second
    # waited for the client's delayed ACK of the first: 40 ms a request, which a real API
    # server (Go sets TCP_NODELAY) never adds.
    disable_nagle_algorithm = True

    def setup(self) -> None:
        self.upstream: http.client.HTTPSConnection | None = None  # one per client connection
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.do_handshake()  # in this connection's thread, not the acceptor's

    def finish(self) -> None:
        if self.upstream is not None:
            self.upstream.close()
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    def _handle(self) -> None:
        proxy = self.owner
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw) if raw else None
        except (ValueError, RecursionError):  # RecursionError: a body nested too deep to parse
            parsed = None
        rec = RecordedRequest(
            method=self.command,
            path=split.path,
            query=parse_qs(split.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=parsed,
            raw_body=raw,
        )
        proxy._record(rec)
        fault = proxy._match(rec)
        if fault is not None and not fault.apply_first and self._misbehave(fault, rec):
            return
        answer = self._forward(rec, raw)
        answer = self._unserved_dropped(answer)
        if fault is not None and fault.apply_first and self._misbehave(fault, rec):
            return
        self._send(rec, answer)

    def _misbehave(self, fault: Fault, rec: RecordedRequest) -> bool:
        """Delay, reset or answer for the fault; False when the request should go on as usual."""
        if fault.delay:
            time.sleep(fault.delay)
        if fault.hold is not None:
            fault.hold.wait(timeout=60)
        if fault.drop:
            self._reset()
            return True
        if fault.serve is not None:
            self._send_streamed(rec, fault.serve(rec))
            return True
        if fault.status is None:
            return False
        body = fault.body
        if body is None:
            body = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"injected {fault.status}",
                "reason": REASONS.get(fault.status, "Unknown"),
                "code": fault.status,
            }
        if isinstance(body, str):
            data, content_type = body.encode(), "text/plain; charset=utf-8"
        else:
            data, content_type = json.dumps(body).encode(), "application/json"
        headers = [("Content-Type", content_type), *(fault.headers or {}).items()]
        self._send(rec, _Answer(fault.status, headers, data))
        return True

    def _unserved_dropped(self, answer: _Answer) -> _Answer:
        """An aggregated discovery answer (`/apis`) without the group versions `unserve` took
        away, as a server that does not serve them would answer."""
        proxy = self.owner
        with proxy._lock:
            unserved = set(proxy._unserved)
        if not unserved or answer.status != 200 or b"APIGroupDiscoveryList" not in answer.body:
            return answer
        try:
            body = json.loads(answer.body)
        except ValueError:
            return answer
        for item in body.get("items") or ():
            group = (item.get("metadata") or {}).get("name") or ""
            item["versions"] = [
                v for v in item.get("versions") or () if (group, v.get("version")) not in unserved
            ]
        body["items"] = [item for item in body.get("items") or () if item["versions"]]
        data = json.dumps(body).encode()
        # Another document than the server's: not the server's ETag (nor any: no 304 for it).
        dropped = ("content-length", "etag")
        headers = [(k, v) for k, v in answer.headers if k.lower() not in dropped]
        return _Answer(answer.status, headers, data)

    def _forward(self, rec: RecordedRequest, raw: bytes) -> _Answer:
        proxy = self.owner
        path = self.path
        if proxy.strip_prefix is not None:
            path = proxy.strip_prefix.sub("", path, count=1) or "/"
        path = urlsplit(proxy.target.url).path.rstrip("/") + path  # a server under a prefix
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        with proxy._lock:
            unserving = bool(proxy._unserved)
        if unserving:  # its documents are not the server's: the server's 304 would say they were
            headers = {k: v for k, v in headers.items() if k.lower() != "if-none-match"}
        if raw:
            headers["Content-Length"] = str(len(raw))
        for attempt in (1, 2):  # once more on a fresh connection if the kept one went stale
            try:
                connection = self._connection(fresh=attempt == 2)
                connection.request(rec.method, path, body=raw or None, headers=headers)
                response = connection.getresponse()
                body = response.read()
            except (OSError, http.client.HTTPException):
                if self.upstream is not None:
                    self.upstream.close()
                if attempt == 2:
                    return _Answer(502, [("Content-Type", "text/plain")], b"proxy: no answer\n")
                continue
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
            return _Answer(response.status, kept, body)
        raise AssertionError("unreachable")

    def _connection(self, *, fresh: bool) -> http.client.HTTPSConnection:
        if fresh or self.upstream is None:
            split = urlsplit(self.owner.target.url)
            self.upstream = http.client.HTTPSConnection(
                split.hostname or "127.0.0.1",
                split.port or 443,
                context=self.owner.target.ssl_context,
                timeout=60,
            )
            self.upstream.connect()
            # http.client sends a body over 2,000 bytes apart from its headers: no Nagle wait.
            self.upstream.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.upstream

    def _send(self, rec: RecordedRequest, answer: _Answer) -> None:
        rec.status = answer.status
        rec.response_body = answer.body
        # One Date, as a server sends: the forwarded one, else the proxy's own.
        date = next((v for k, v in answer.headers if k.lower() == "date"), None)
        date = date or self.date_time_string()
        rewrite = self.owner.rewrite_date
        if rewrite is not None:
            date = rewrite(date)
        self.send_response_only(answer.status)
        self.send_header("Server", self.version_string())
        if date is not None:
            self.send_header("Date", date)
        for key, value in answer.headers:
            if key.lower() != "date":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer.body)
        rec.answered = time.monotonic()

    def _send_streamed(self, rec: RecordedRequest, served: Served) -> None:
        rec.status = served.status
        self.send_response(served.status)
        for key, value in served.headers:
            self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in served.chunks:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client stopped reading and hung up: what a budget does
            self.close_connection = True

    def _reset(self) -> None:
        """Close with a TCP RST: the client sees the connection reset, no answer at all."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass
