"""A bare kube-apiserver look-alike over real HTTP, for end-to-end tests.

Bare means no controller manager: finalizers hold forever, ownerReferences cascade nothing and
namespaces never finish deleting. See ``FakeKube`` for the test-facing API.

Behaviours copied from the real server that a client may trip over:
- DELETE that removes the object at once answers a ``Status`` (status Success, details with
  name/group/kind=plural/uid), not the object; a DELETE that only marks it terminating answers
  the object. (This client's delete_* methods return plain dicts.)
- propagationPolicy Foreground / Orphan add the foregroundDeletion / orphan finalizer: with no
  garbage collector the object then stays terminating forever.
- Lists of built-in kinds carry no kind/apiVersion per item; CR lists do. remainingItemCount
  is left out when a label or field selector filters the list.
- PATCH takes merge-patch+json and json-patch+json only: strategic merge (what CoreV1Api sends
  for a dict body unless ``_content_type`` is given) answers 415.
- PUT without metadata.resourceVersion: allowed for built-in kinds, 422 for custom resources.
- POST: a set resourceVersion is a 500, names are validated (422), deletionTimestamp is dropped,
  a terminating namespace refuses new objects (403). A given creationTimestamp is KEPT (test
  leniency: the real server overwrites it).
- No-op updates do not bump resourceVersion. ``dryRun=All`` is honoured. No watch (405).
"""

from __future__ import annotations

import builtins
import contextlib
import json
import re
import socket
import sys
import threading
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from .resources import VERBS, Registry, Resource
from .store import JSON, ApiError, JSONList, Store, bad_request, json_copy, not_found

# ---------------------------------------------------------------------------------------------
# public data types


@dataclass
class Fault:
    """A misbehaviour injected for matching requests (checked in insertion order)."""

    method: str | None = None  # None = any; e.g. "DELETE"
    path: str | None = None  # regex searched (re.search) in the URL path; None = any
    query: dict[str, str] | None = None  # each key present with that value ("*": present at all)
    status: int | None = None  # answer this status instead of handling
    body: dict[str, Any] | str | None = None  # override body (dict -> JSON, str -> text/plain)
    headers: dict[str, str] | None = None  # e.g. {"Retry-After": "1"}
    delay: float = 0.0  # sleep this long before answering
    drop: bool = False  # close the TCP connection without any response
    apply_first: bool = False  # perform the real operation, then drop/answer/delay
    times: int | None = 1  # how many matching requests it affects; None = forever
    hits: int = 0  # incremented each time it fires

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
class RecordedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case keys
    body: Any  # parsed JSON, or None (no body or not JSON)
    raw_body: bytes = b""
    status: int | None = None  # status sent; None if the connection was dropped (or not yet)

    @property
    def accept(self) -> str:
        return self.headers.get("accept", "")


# ---------------------------------------------------------------------------------------------
# responses and content negotiation

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}

META_GROUP = "meta.k8s.io"
META_VERSIONS = ("v1", "v1beta1")
ACCEPTED = (
    "application/json, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, "
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
)


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, status: int, obj: Any, headers: dict[str, str] | None = None) -> Response:
        data = json.dumps(obj, separators=(",", ":")).encode()
        return cls(status, data, "application/json", dict(headers or {}))

    @classmethod
    def text(cls, status: int, text: str) -> Response:
        return cls(status, text.encode(), "text/plain; charset=utf-8")

    @classmethod
    def error(cls, err: ApiError) -> Response:
        return cls.json(err.code, err.status())


def page_not_found() -> Response:
    return Response.text(404, "404 page not found\n")


def resource_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def method_not_allowed() -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


@dataclass(frozen=True)
class Format:
    """The negotiated response form: full objects or PartialObjectMetadata(List)."""

    meta: bool = False
    meta_version: str = "v1"

    @property
    def meta_api_version(self) -> str:
        return f"{META_GROUP}/{self.meta_version}"


def negotiate(accept: str | None, *, is_list: bool) -> Format | None:
    """The first acceptable entry of an Accept header; None when nothing is acceptable."""
    if accept is None or not accept.strip():
        return Format()
    for entry in accept.split(","):
        parts = [p.strip() for p in entry.split(";")]
        mtype = parts[0].lower()
        params: dict[str, str] = {}
        for p in parts[1:]:
            k, _, v = p.partition("=")
            params[k.strip().lower()] = v.strip().strip('"')
        if mtype not in ("application/json", "*/*", "application/*", "*"):
            continue
        if "stream" in params:
            continue
        as_kind = params.get("as")
        if as_kind is None:
            return Format()
        if mtype != "application/json":
            continue
        if params.get("g") != META_GROUP or params.get("v") not in META_VERSIONS:
            continue
        wanted = "PartialObjectMetadataList" if is_list else "PartialObjectMetadata"
        if as_kind == wanted:
            return Format(meta=True, meta_version=params["v"])
    return None


def fault_response(fault: Fault) -> Response:
    status = fault.status if fault.status is not None else 500
    headers = dict(fault.headers or {})
    if isinstance(fault.body, str):
        resp = Response.text(status, fault.body)
    elif isinstance(fault.body, dict):
        resp = Response.json(status, fault.body)
    else:
        reason = REASONS.get(status, "Unknown")
        details: JSON | None = None
        retry_after = {k.lower(): v for k, v in headers.items()}.get("retry-after")
        if retry_after is not None and retry_after.isdigit():
            details = {"retryAfterSeconds": int(retry_after)}
        message = (
            "Too many requests, please try again later."
            if status == 429
            else f"injected fault ({status} {reason})"
        )
        resp = Response.error(ApiError(status, reason, message, details))
    resp.headers.update(headers)
    return resp


# ---------------------------------------------------------------------------------------------
# the API


def _discovery_entry(res: Resource) -> JSON:
    entry: JSON = {
        "name": res.plural,
        "singularName": res.singular,
        "namespaced": res.namespaced,
        "kind": res.kind,
        "verbs": list(VERBS),
    }
    if res.short_names:
        entry["shortNames"] = list(res.short_names)
    if res.categories:
        entry["categories"] = list(res.categories)
    return entry


def _first(query: dict[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def _dry_run(values: Iterable[str]) -> bool:
    vals = [v for v in values if v]
    for v in vals:
        if v != "All":
            raise bad_request(f'dryRun: Unsupported value: "{v}": supported values: "All"')
    return bool(vals)


class Api:
    """Turns one recorded request into a response (no socket work here)."""

    def __init__(self, registry: Registry, store: Store, token: str | None) -> None:
        self.registry = registry
        self.store = store
        self.token = token
        self.address = ""

    def handle(self, rec: RecordedRequest) -> Response:
        if self.token is not None:
            auth = rec.headers.get("authorization", "")
            scheme, _, value = auth.partition(" ")
            if scheme.lower() != "bearer" or value.strip() != self.token:
                return Response.error(ApiError(401, "Unauthorized", "Unauthorized"))
        try:
            return self._route(rec)
        except ApiError as err:
            return Response.error(err)

    # -- routing -------------------------------------------------------------------------

    def _route(self, rec: RecordedRequest) -> Response:
        parts = [unquote(p) for p in rec.path.split("/") if p]
        if not parts:
            return Response.json(200, {"paths": ["/api", "/api/v1", "/apis", "/version"]})
        if parts == ["version"]:
            return Response.json(
                200,
                {
                    "major": "1",
                    "minor": "31",
                    "gitVersion": "v1.31.0-fake",
                    "platform": "linux/amd64",
                },
            )
        if parts[0] in ("healthz", "livez", "readyz") and len(parts) == 1:
            return Response.text(200, "ok")
        if parts[0] == "api":
            if len(parts) == 1:
                return self._get_only(rec, self._api_versions())
            if parts[1] != "v1":
                return page_not_found()
            group, version, rest = "", "v1", parts[2:]
        elif parts[0] == "apis":
            if len(parts) == 1:
                return self._get_only(rec, self._group_list())
            group = parts[1]
            groups = self.registry.groups()
            if group not in groups:
                return page_not_found()
            if len(parts) == 2:
                return self._get_only(rec, self._group(group, groups[group]))
            version, rest = parts[2], parts[3:]
            if version not in groups[group]:
                return page_not_found()
        else:
            return page_not_found()
        if not rest:
            return self._get_only(rec, self._resource_list(group, version))
        return self._resource_request(rec, group, version, rest)

    def _get_only(self, rec: RecordedRequest, body: JSON) -> Response:
        if rec.method != "GET":
            return Response.error(method_not_allowed())
        return Response.json(200, body)

    def _api_versions(self) -> JSON:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": self.address}
            ],
        }

    def _group(self, group: str, versions: list[str]) -> JSON:
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": gvs,
            "preferredVersion": gvs[0],
        }

    def _group_list(self) -> JSON:
        groups = []
        for group, versions in self.registry.groups().items():
            g = self._group(group, versions)
            del g["kind"], g["apiVersion"]
            groups.append(g)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def _resource_list(self, group: str, version: str) -> JSON:
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": [_discovery_entry(r) for r in self.registry.resources_in(group, version)],
        }

    def _resource_request(
        self, rec: RecordedRequest, group: str, version: str, rest: list[str]
    ) -> Response:
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, plural, tail = rest[1], rest[2], rest[3:]
        else:
            plural, tail = rest[0], rest[1:]
        res = self.registry.lookup(group, version, plural)
        if res is None or len(tail) > 1:
            raise resource_not_found()
        if namespace is not None and not res.namespaced:
            raise resource_not_found()
        name = tail[0] if tail else None
        if name is not None and res.namespaced and namespace is None:
            raise resource_not_found()
        api_version = res.api_version(version)
        method = rec.method
        if name is None:
            if method == "GET":
                return self._list(rec, res, api_version, namespace)
            if method == "POST" and (namespace is not None or not res.namespaced):
                return self._create(rec, res, api_version, namespace)
            raise method_not_allowed()
        if method == "GET":
            fmt = self._negotiate(rec, is_list=False)
            obj = self.store.get(res, namespace, name)
            if obj is None:
                raise not_found(res, name)
            return self._object(200, res, obj, api_version, fmt)
        if method == "PUT":
            return self._update(rec, res, api_version, namespace, name)
        if method == "PATCH":
            return self._patch(rec, res, api_version, namespace, name)
        if method == "DELETE":
            return self._delete(rec, res, api_version, namespace, name)
        raise method_not_allowed()

    # -- rendering -----------------------------------------------------------------------

    def _negotiate(self, rec: RecordedRequest, *, is_list: bool) -> Format:
        fmt = negotiate(rec.headers.get("accept"), is_list=is_list)
        if fmt is None:
            raise ApiError(
                406,
                "NotAcceptable",
                f"only the following media types are accepted: {ACCEPTED}",
            )
        return fmt

    @staticmethod
    def _render(obj: JSON, api_version: str, fmt: Format) -> JSON:
        if fmt.meta:
            return {
                "kind": "PartialObjectMetadata",
                "apiVersion": fmt.meta_api_version,
                "metadata": obj["metadata"],
            }
        if obj.get("apiVersion") == api_version:
            return obj
        return {**obj, "apiVersion": api_version}

    def _object(self, status: int, res: Resource, obj: JSON, av: str, fmt: Format) -> Response:
        return Response.json(status, self._render(obj, av, fmt))

    def _body(self, rec: RecordedRequest) -> JSON:
        ctype = rec.headers.get("content-type", "application/json").split(";")[0].strip()
        if ctype not in ("application/json", ""):
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types "
                f'include: application/json (got "{ctype}")',
            )
        if not isinstance(rec.body, dict):
            raise bad_request("the request body must be a JSON object")
        return cast(JSON, json_copy(rec.body))

    # -- verbs ---------------------------------------------------------------------------

    def _list(
        self, rec: RecordedRequest, res: Resource, api_version: str, namespace: str | None
    ) -> Response:
        q = rec.query
        if _first(q, "watch") in ("true", "1"):
            raise ApiError(405, "MethodNotAllowed", "watch is not supported by the fake server")
        fmt = self._negotiate(rec, is_list=True)
        limit_s = _first(q, "limit")
        limit: int | None = None
        if limit_s:
            try:
                limit = int(limit_s)
            except ValueError as exc:
                raise bad_request(f"invalid limit {limit_s!r}") from exc
            if limit <= 0:
                limit = None
        page = self.store.list(
            res,
            namespace,
            label_selector=_first(q, "labelSelector"),
            field_selector=_first(q, "fieldSelector"),
            limit=limit,
            continue_token=_first(q, "continue") or None,
        )
        meta: JSON = {"resourceVersion": page.resource_version}
        if page.continue_token:
            meta["continue"] = page.continue_token
            if page.remaining is not None:
                meta["remainingItemCount"] = page.remaining
        if fmt.meta:
            mav = fmt.meta_api_version
            items: JSONList = [
                {"kind": "PartialObjectMetadata", "apiVersion": mav, "metadata": o["metadata"]}
                for o in page.items
            ]
            body: JSON = {"kind": "PartialObjectMetadataList", "apiVersion": mav, "metadata": meta}
        else:
            if res.builtin:  # typed lists of built-in kinds carry no kind/apiVersion per item
                items = [
                    {k: v for k, v in o.items() if k != "kind" and k != "apiVersion"}
                    for o in page.items
                ]
            else:
                items = [self._render(o, api_version, fmt) for o in page.items]
            body = {"kind": res.list_kind, "apiVersion": api_version, "metadata": meta}
        body["items"] = items
        return Response.json(200, body)

    def _create(
        self, rec: RecordedRequest, res: Resource, api_version: str, namespace: str | None
    ) -> Response:
        fmt = self._negotiate(rec, is_list=False)
        body = self._body(rec)
        if body.get("kind") not in (None, res.kind):
            raise bad_request(
                f"the kind of the provided object ({body.get('kind')}) does not match the "
                f"resource ({res.kind})"
            )
        dry = _dry_run(rec.query.get("dryRun", []))
        obj = self.store.create(res, body, namespace=namespace, dry_run=dry)
        return self._object(201, res, obj, api_version, fmt)

    def _update(
        self, rec: RecordedRequest, res: Resource, av: str, namespace: str | None, name: str
    ) -> Response:
        fmt = self._negotiate(rec, is_list=False)
        body = self._body(rec)
        dry = _dry_run(rec.query.get("dryRun", []))
        obj, _removed = self.store.update(res, namespace, name, body, dry_run=dry)
        return self._object(200, res, obj, av, fmt)

    def _patch(
        self, rec: RecordedRequest, res: Resource, av: str, namespace: str | None, name: str
    ) -> Response:
        fmt = self._negotiate(rec, is_list=False)
        ctype = rec.headers.get("content-type", "").split(";")[0].strip().lower()
        kinds = {"application/merge-patch+json": "merge", "application/json-patch+json": "json"}
        if ctype not in kinds:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types "
                "include: application/json-patch+json, application/merge-patch+json "
                f'(got "{ctype}")',
            )
        if rec.body is None:
            raise bad_request("the patch body is not valid JSON")
        dry = _dry_run(rec.query.get("dryRun", []))
        obj, _removed = self.store.patch(
            res, namespace, name, kinds[ctype], json_copy(rec.body), dry_run=dry
        )
        return self._object(200, res, obj, av, fmt)

    def _delete(
        self, rec: RecordedRequest, res: Resource, av: str, namespace: str | None, name: str
    ) -> Response:
        fmt = self._negotiate(rec, is_list=False)  # before anything is deleted
        if rec.raw_body.strip() and not isinstance(rec.body, dict):
            raise bad_request("the request body must be a DeleteOptions object")
        opts: JSON = dict(rec.body) if isinstance(rec.body, dict) else {}
        q = rec.query
        if "propagationPolicy" not in opts and _first(q, "propagationPolicy"):
            opts["propagationPolicy"] = _first(q, "propagationPolicy")
        if "orphanDependents" not in opts and _first(q, "orphanDependents"):
            opts["orphanDependents"] = _first(q, "orphanDependents") == "true"
        dry_values = list(q.get("dryRun", [])) + list(opts.get("dryRun") or [])
        result = self.store.delete(res, namespace, name, opts, dry_run=_dry_run(dry_values))
        if result.removed:
            meta = result.obj["metadata"]
            details: JSON = {"name": name}
            if res.group:
                details["group"] = res.group
            details["kind"] = res.plural
            details["uid"] = meta.get("uid")
            return Response.json(
                200,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                },
            )
        return self._object(200, res, result.obj, av, fmt)


# ---------------------------------------------------------------------------------------------
# HTTP plumbing


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, kube: FakeKube) -> None:
        self.kube = kube
        self.connections: set[socket.socket] = set()
        self.conn_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return  # client went away (timeouts, dropped connections)
        self.kube.errors.append(traceback.format_exc())
        super().handle_error(request, client_address)

    def close_connections(self) -> None:
        with self.conn_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def _srv(self) -> _HTTPServer:
        return cast(_HTTPServer, self.server)

    def setup(self) -> None:
        super().setup()
        # headers and body go out in separate writes: without this, Nagle + delayed ACK
        # add ~40 ms to every response
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._srv.conn_lock:
            self._srv.connections.add(self.connection)

    def finish(self) -> None:
        with self._srv.conn_lock:
            self._srv.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self) -> None:
        kube = self._srv.kube
        raw = self._read_body()
        url = urlsplit(self.path)
        headers: dict[str, str] = {}
        for key, value in self.headers.items():
            k = key.lower()
            headers[k] = f"{headers[k]}, {value}" if k in headers else value
        body: Any = None
        if raw.strip():
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        rec = RecordedRequest(
            method=self.command,
            path=url.path,
            query=parse_qs(url.query, keep_blank_values=True),
            headers=headers,
            body=body,
            raw_body=raw,
        )
        kube._record(rec)
        fault = kube._match_fault(rec)
        if fault is not None and not fault.apply_first:
            if fault.delay:
                kube._sleep(fault.delay)
            if fault.drop:
                self._drop()
                return
            if fault.status is not None:
                self._send(rec, fault_response(fault))
                return
        try:
            resp = kube._api.handle(rec)
        except Exception as exc:  # a bug of the fake: answer 500 and keep the traceback
            kube.errors.append(traceback.format_exc())
            resp = Response.error(ApiError(500, "InternalError", f"fake server error: {exc!r}"))
        if fault is not None and fault.apply_first:
            if fault.delay:
                kube._sleep(fault.delay)
            if fault.drop:
                self._drop()
                return
            if fault.status is not None:
                resp = fault_response(fault)
        self._send(rec, resp)

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send(self, rec: RecordedRequest, resp: Response) -> None:
        rec.status = resp.status
        try:
            self.send_response(resp.status)
            for key, value in resp.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Type", resp.content_type)
            self.send_header("Content-Length", str(len(resp.body)))
            self.end_headers()
            self.wfile.write(resp.body)
        except OSError:
            self.close_connection = True


# ---------------------------------------------------------------------------------------------
# the test-facing class


class FakeKube:
    """In-process Kubernetes API server on 127.0.0.1 (random port).

    ``FakeKube(crd_paths=[...], token="test-token")``; ``token=None`` disables authentication.
    ``crds`` registers CRDs given as dicts.
    """

    def __init__(
        self,
        crd_paths: Iterable[str | PathLike[str]] = (),
        token: str | None = "test-token",
        crds: Iterable[JSON] = (),
    ) -> None:
        self.registry = Registry.build(crd_paths, crds)
        self.store = Store(self.registry)
        self.token = token
        self.errors: list[str] = []  # tracebacks of the fake's own bugs (answered 500)
        self._api = Api(self.registry, self.store, token)
        self._requests: list[RecordedRequest] = []
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> FakeKube:
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _HTTPServer(self)
        self._api.address = f"127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fakekube",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeKube:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeKube is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def write_kubeconfig(
        self,
        path: str | PathLike[str],
        context: str = "hub",
        extra: Sequence[tuple[str, FakeKube]] | None = None,
    ) -> str:
        """Write a kubeconfig whose current context is ``context`` (plus ``extra`` contexts)."""
        entries = [(context, self), *(extra or [])]
        names = [name for name, _ in entries]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate context names in {names}")
        cfg: JSON = {
            "apiVersion": "v1",
            "kind": "Config",
            "preferences": {},
            "clusters": [{"name": n, "cluster": {"server": k.url}} for n, k in entries],
            "users": [
                {"name": n, "user": {"token": k.token} if k.token else {}} for n, k in entries
            ],
            "contexts": [{"name": n, "context": {"cluster": n, "user": n}} for n, _ in entries],
            "current-context": context,
        }
        Path(path).write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
        return str(path)

    # -- direct store access (no HTTP, not recorded) -------------------------------------

    def create(self, obj: JSON) -> JSON:
        """Insert like a POST, but the namespace need not exist; a given creationTimestamp,
        uid, deletionTimestamp and finalizers are kept (to make old or terminating objects)."""
        api_version = str(obj.get("apiVersion", ""))
        res = self.registry.by_kind(api_version, str(obj.get("kind", "")))
        stored = self.store.create(res, cast(JSON, json_copy(obj)), direct=True)
        return self._out(stored, res, api_version)

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> JSON | None:
        res = self.registry.by_kind(api_version, kind)
        obj = self.store.get(res, namespace, name)
        return None if obj is None else self._out(obj, res, api_version)

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[JSON]:
        res = self.registry.by_kind(api_version, kind)
        return [self._out(o, res, api_version) for o in self.store.snapshot(res, namespace)]

    def patch(
        self, api_version: str, kind: str, namespace: str | None, name: str, patch: JSON
    ) -> JSON | None:
        """Apply a JSON merge patch like a PATCH (e.g. a controller dropping its finalizer).
        Returns the object, or None if the patch removed it (terminating, no finalizers left)."""
        res = self.registry.by_kind(api_version, kind)
        obj, removed = self.store.patch(res, namespace, name, "merge", json_copy(patch))
        return None if removed else self._out(obj, res, api_version)

    def delete_direct(self, api_version: str, kind: str, namespace: str | None, name: str) -> None:
        """Remove an object at once, whatever its finalizers."""
        self.store.remove(self.registry.by_kind(api_version, kind), namespace, name)

    @staticmethod
    def _out(obj: JSON, res: Resource, api_version: str) -> JSON:
        out = cast(JSON, json_copy(obj))
        if api_version and api_version.rpartition("/")[2] in res.versions:
            out["apiVersion"] = api_version
        return out

    # -- registry ------------------------------------------------------------------------

    def add_crd(self, crd: JSON) -> None:
        self.registry.add_crd(crd)

    def unserve(self, group: str, version: str) -> None:
        """Stop serving ``group/version`` (discovery and requests answer 404); data is kept."""
        self.registry.unserve(group, version)

    def serve(self, group: str, version: str) -> None:
        """Undo :meth:`unserve`."""
        self.registry.serve(group, version)

    def expire_continue_tokens(self) -> None:
        """Every continue token issued so far now answers 410 Gone (reason Expired)."""
        self.store.expire_continue_tokens()

    # -- requests and faults -------------------------------------------------------------

    @property
    def requests(self) -> builtins.list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def add_fault(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _record(self, rec: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(rec)

    def _match_fault(self, rec: RecordedRequest) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(rec):
                    fault.hits += 1
                    return fault
        return None

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)
