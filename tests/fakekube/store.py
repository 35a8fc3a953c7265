"""The object store of the fake API server.

Objects live in ``{(group, plural): {namespace: {name: object}}}`` ("" is the namespace of
cluster-scoped objects). A stored object is never mutated once stored: every write stores a new
dict. That lets list snapshots and HTTP responses hold references without copying, and lets the
server serialise them outside the lock. Whatever leaves through the direct (non-HTTP) API is copied.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import random
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .resources import Registry, Resource

JSON = dict[str, Any]
JSONList = list[JSON]  # (also usable inside classes that define a list() method)

# ---------------------------------------------------------------------------------------------
# errors


class ApiError(Exception):
    """An error answered as a ``Status`` object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: JSON | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> JSON:
        body: JSON = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _details(res: Resource, name: str, **extra: Any) -> JSON:
    d: JSON = {"name": name}
    if res.group:
        d["group"] = res.group
    d["kind"] = res.plural
    d.update(extra)
    return d


def not_found(res: Resource, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{res.qualified} "{name}" not found', _details(res, name))


def conflict(res: Resource, name: str, message: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {res.qualified} "{name}": {message}',
        _details(res, name),
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def invalid(res: Resource, name: str, message: str) -> ApiError:
    return ApiError(
        422, "Invalid", f'{res.kind} "{name}" is invalid: {message}', _details(res, name)
    )


def expired() -> ApiError:
    return ApiError(
        410,
        "Expired",
        "The provided continue parameter is too old to display a consistent list result. "
        "You can start a new list without the continue parameter.",
    )


MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)

# ---------------------------------------------------------------------------------------------
# helpers


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def json_copy(obj: Any) -> Any:
    """Deep copy of JSON-like data (dicts, lists/tuples, scalars); 3x faster than deepcopy."""
    if isinstance(obj, dict):
        return {
            k: json_copy(v) if isinstance(v, (dict, list, tuple)) else v for k, v in obj.items()
        }
    if isinstance(obj, (list, tuple)):
        return [json_copy(v) if isinstance(v, (dict, list, tuple)) else v for v in obj]
    return obj


_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_GEN_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def _validate_name(res: Resource, name: str) -> None:
    if res.is_namespace:
        if len(name) > 63 or not _LABEL.match(name):
            raise invalid(
                res,
                name,
                f'metadata.name: Invalid value: "{name}": a lowercase RFC 1123 label must consist '
                "of lower case alphanumeric characters or '-', and must start and end with an "
                "alphanumeric character",
            )
    elif len(name) > 253 or not _SUBDOMAIN.match(name):
        raise invalid(
            res,
            name,
            f'metadata.name: Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist '
            "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
            "alphanumeric character",
        )


def _drop_empty(meta: JSON) -> None:
    """Like Go's omitempty: empty finalizers/labels/annotations/ownerReferences are not kept."""
    for key in ("finalizers", "labels", "annotations", "ownerReferences"):
        if key in meta and not meta[key]:
            del meta[key]


def has_finalizers(res: Resource, obj: JSON) -> bool:
    if obj.get("metadata", {}).get("finalizers"):
        return True
    return res.is_namespace and bool((obj.get("spec") or {}).get("finalizers"))


def is_terminating(obj: JSON) -> bool:
    return bool(obj.get("metadata", {}).get("deletionTimestamp"))


# ---------------------------------------------------------------------------------------------
# label selectors (k8s.io/apimachinery/pkg/labels syntax)

_LS_TOKEN = re.compile(r"\s*(?:(==|!=|=|!|\(|\)|,|<|>)|([^\s=!(),<>]+))")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

Requirement = tuple[str, str, tuple[str, ...]]  # (key, operator, values)


def _selector_error(selector: str, detail: str) -> ApiError:
    return bad_request(f"unable to parse requirement: {detail} (in selector {selector!r})")


def _check_key(selector: str, key: str) -> None:
    prefix, _, name = key.rpartition("/")
    if (
        not name
        or len(name) > 63
        or not _LABEL_NAME.match(name)
        or (prefix and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)))
        or ("/" in key and not prefix)
    ):
        raise _selector_error(selector, f"invalid label key {key!r}")


def _check_value(selector: str, value: str) -> None:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise _selector_error(selector, f"invalid label value {value!r}")


def _tokenize(selector: str) -> list[tuple[str, str]]:
    """Tokens as (type, text): type is the operator text itself, or "id"."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(selector):
        if selector[pos:].strip() == "":
            break
        m = _LS_TOKEN.match(selector, pos)
        if not m or m.end() == pos:
            raise _selector_error(selector, f"unexpected character at {pos}")
        if m.group(1):
            tokens.append((m.group(1), m.group(1)))
        else:
            tokens.append(("id", m.group(2)))
        pos = m.end()
    return tokens


def parse_label_selector(selector: str | None) -> list[Requirement]:
    """Parse ``k=v,k!=v,k,!k,k in (a,b),k notin (a),k>1``; raises ApiError(400) if malformed."""
    if selector is None or not selector.strip():
        return []
    toks = _tokenize(selector)
    reqs: list[Requirement] = []
    i = 0

    def peek(offset: int = 0) -> tuple[str, str] | None:
        return toks[i + offset] if i + offset < len(toks) else None

    while True:
        tok = peek()
        if tok is None:
            raise _selector_error(selector, "expected a requirement")
        if tok[0] == "!":
            i += 1
            key_tok = peek()
            if key_tok is None or key_tok[0] != "id":
                raise _selector_error(selector, "expected a label key after '!'")
            _check_key(selector, key_tok[1])
            reqs.append((key_tok[1], "!", ()))
            i += 1
        elif tok[0] == "id":
            key = tok[1]
            _check_key(selector, key)
            i += 1
            op = peek()
            if op is None or op[0] == ",":
                reqs.append((key, "exists", ()))
            elif op[0] in ("=", "==", "!="):
                i += 1
                val = peek()
                if val is not None and val[0] == "id":
                    value = val[1]
                    i += 1
                else:
                    value = ""
                _check_value(selector, value)
                reqs.append((key, "!=" if op[0] == "!=" else "=", (value,)))
            elif op[0] in ("<", ">"):
                i += 1
                val = peek()
                if val is None or val[0] != "id" or not re.fullmatch(r"-?\d+", val[1]):
                    raise _selector_error(selector, f"expected an integer after {op[0]!r}")
                reqs.append((key, op[0], (val[1],)))
                i += 1
            elif op[0] == "id" and op[1] in ("in", "notin"):
                i += 1
                if peek() is None or peek() != ("(", "("):
                    raise _selector_error(selector, f"expected '(' after {op[1]!r}")
                i += 1
                values: list[str] = []
                while True:
                    t = peek()
                    if t is None:
                        raise _selector_error(selector, "unterminated value list")
                    if t[0] == ")":
                        i += 1
                        break
                    if t[0] == ",":
                        i += 1
                        continue
                    if t[0] != "id":
                        raise _selector_error(selector, f"unexpected {t[1]!r} in value list")
                    _check_value(selector, t[1])
                    values.append(t[1])
                    i += 1
                if not values:
                    raise _selector_error(
                        selector, "for 'in', 'notin' operators, values set can't be empty"
                    )
                reqs.append((key, op[1], tuple(values)))
            else:
                raise _selector_error(selector, f"unexpected {op[1]!r} after key {key!r}")
        else:
            raise _selector_error(selector, f"unexpected {tok[1]!r}")
        nxt = peek()
        if nxt is None:
            return reqs
        if nxt[0] != ",":
            raise _selector_error(selector, f"expected ',' but found {nxt[1]!r}")
        i += 1


def labels_match(reqs: list[Requirement], labels: dict[str, str] | None) -> bool:
    labels = labels or {}
    for key, op, values in reqs:
        present = key in labels
        if op == "exists":
            ok = present
        elif op == "!":
            ok = not present
        elif op in ("=", "in"):
            ok = present and labels[key] in values
        elif op in ("!=", "notin"):
            ok = not present or labels[key] not in values
        else:  # "<" / ">"
            try:
                have = int(labels[key]) if present else None
            except ValueError:
                have = None
            want = int(values[0])
            ok = have is not None and (have < want if op == "<" else have > want)
        if not ok:
            return False
    return True


FieldRequirement = tuple[str, bool, str]  # (field, equal?, value)
FIELDS = ("metadata.name", "metadata.namespace")


def parse_field_selector(selector: str | None) -> list[FieldRequirement]:
    if selector is None or not selector.strip():
        return []
    reqs: list[FieldRequirement] = []
    for term in selector.split(","):
        m = re.fullmatch(r"\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*", term)
        if not m:
            raise bad_request(f"invalid field selector term {term!r}")
        fld, op, value = m.groups()
        if fld not in FIELDS:
            raise bad_request(f'"{fld}" is not a known field selector: only {FIELDS!r}')
        reqs.append((fld, op != "!=", value))
    return reqs


def fields_match(reqs: list[FieldRequirement], namespace: str, name: str) -> bool:
    for fld, equal, value in reqs:
        have = name if fld == "metadata.name" else namespace
        if (have == value) != equal:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# patches


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (returns a new value; ``target`` is not modified)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result: JSON = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class PatchFailed(Exception):
    pass


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchFailed(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    cur = doc
    for p in parts:
        if isinstance(cur, dict):
            if p not in cur:
                raise PatchFailed(f"path element {p!r} not found")
            cur = cur[p]
        elif isinstance(cur, list):
            try:
                cur = cur[int(p)]
            except (ValueError, IndexError) as exc:
                raise PatchFailed(f"invalid array index {p!r}") from exc
        else:
            raise PatchFailed(f"cannot descend into {p!r}")
    return cur


def _index(container: list[Any], p: str, *, insert: bool) -> int:
    if insert and p == "-":
        return len(container)
    try:
        idx = int(p)
    except ValueError as exc:
        raise PatchFailed(f"invalid array index {p!r}") from exc
    limit = len(container) if insert else len(container) - 1
    if idx < 0 or idx > limit:
        raise PatchFailed(f"array index {idx} out of bounds")
    return idx


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, insert=True), value)
    else:
        raise PatchFailed("cannot add to a scalar")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    if not parts:
        raise PatchFailed("cannot remove the whole document")
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchFailed(f"path element {last!r} not found")
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, insert=False))
    raise PatchFailed("cannot remove from a scalar")


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 JSON patch: add, remove, replace, test, move, copy. ``doc`` is modified."""
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation {op!r}")
        kind = op["op"]
        parts = _pointer(str(op["path"]))
        if kind in ("add", "replace", "test") and "value" not in op:
            raise bad_request(f"json patch {kind!r} operation lacks a value")
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "replace":
            _walk(doc, parts)  # must exist
            if parts:
                _remove(doc, parts)
            doc = _add(doc, parts, copy.deepcopy(op["value"]))
        elif kind == "test":
            if _walk(doc, parts) != op["value"]:
                raise PatchFailed(f"testing value {op['path']} failed")
        elif kind in ("move", "copy"):
            src = _pointer(str(op.get("from", "")))
            value = _walk(doc, src)
            if kind == "move":
                _remove(doc, src)
            doc = _add(doc, parts, copy.deepcopy(value))
        else:
            raise bad_request(f"unsupported json patch operation {kind!r}")
    return doc


# ---------------------------------------------------------------------------------------------
# the store


@dataclass
class ListPage:
    items: list[JSON]  # internal references: do not modify
    resource_version: str
    continue_token: str | None
    remaining: int | None


@dataclass
class _Snapshot:
    key: tuple[str, str]
    namespace: str | None
    items: list[JSON]
    resource_version: str


@dataclass
class DeleteResult:
    obj: JSON  # the object after the call (removed: as it was)
    removed: bool


class Store:
    """Thread-safe object store with Kubernetes write semantics."""

    SNAPSHOT_CACHE = 32  # list snapshots kept for continue tokens (oldest evicted -> 410)

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.lock = threading.RLock()
        self._rv = 0
        self._data: dict[tuple[str, str], dict[str, dict[str, JSON]]] = {}
        self._snapshots: OrderedDict[int, _Snapshot] = OrderedDict()
        self._next_snapshot = 1
        self._expired_below = 1  # snapshot ids below this answer 410

    # -- basics --------------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        return str(self._rv)

    def _bump(self) -> str:
        self._rv += 1
        return str(self._rv)

    def _bucket(self, res: Resource, namespace: str) -> dict[str, JSON]:
        return self._data.setdefault(res.key, {}).setdefault(namespace, {})

    def _ns(self, res: Resource, namespace: str | None) -> str:
        return (namespace or "") if res.namespaced else ""

    def get(self, res: Resource, namespace: str | None, name: str) -> JSON | None:
        """The stored object (internal reference: never modify it)."""
        with self.lock:
            return self._data.get(res.key, {}).get(self._ns(res, namespace), {}).get(name)

    def _put(self, res: Resource, obj: JSON) -> None:
        meta = obj["metadata"]
        self._bucket(res, self._ns(res, meta.get("namespace")))[meta["name"]] = obj

    def remove(self, res: Resource, namespace: str | None, name: str) -> JSON | None:
        with self.lock:
            buckets = self._data.get(res.key, {})
            ns = self._ns(res, namespace)
            bucket = buckets.get(ns)
            if bucket is None:
                return None
            obj = bucket.pop(name, None)
            if not bucket:
                del buckets[ns]
            return obj

    def namespace_obj(self, name: str) -> JSON | None:
        return self.get(self.registry.resources[("", "namespaces")], None, name)

    # -- create --------------------------------------------------------------------------

    def create(
        self,
        res: Resource,
        body: JSON,
        *,
        namespace: str | None = None,
        direct: bool = False,
        dry_run: bool = False,
    ) -> JSON:
        """POST semantics. ``body`` must be a private copy (it is stored as is).

        ``direct`` (FakeKube.create) relaxes the HTTP rules: the namespace need not exist, a
        given uid, deletionTimestamp and finalizers are kept (to build terminating objects).
        Both keep a given metadata.creationTimestamp (test leniency: the real server overwrites
        it) so tests can make old objects.
        """
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            meta = body["metadata"] = {}
        body["apiVersion"] = res.api_version()
        body["kind"] = res.kind
        if res.namespaced:
            ns = namespace or meta.get("namespace") or ("default" if direct else None)
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent "
                    "on the request"
                )
            if not ns:
                raise bad_request("a namespace is required for a namespaced object")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        with self.lock:
            name = meta.get("name")
            if not name:
                if meta.get("generateName"):
                    name = meta["generateName"] + "".join(random.choices(_GEN_CHARS, k=5))
                    meta["name"] = name
                else:
                    raise invalid(
                        res, "", "metadata.name: Required value: name or generateName is required"
                    )
            if not direct:
                _validate_name(res, name)
                if meta.get("resourceVersion"):
                    raise ApiError(
                        500,
                        "InternalError",
                        "Internal error occurred: resourceVersion should not be set on objects "
                        "to be created",
                    )
            if res.namespaced and not direct:
                ns_obj = self.namespace_obj(meta["namespace"])
                nsres = self.registry.resources[("", "namespaces")]
                if ns_obj is None:
                    raise not_found(nsres, meta["namespace"])
                if is_terminating(ns_obj):
                    msg = (
                        f"unable to create new content in namespace {meta['namespace']} "
                        "because it is being terminated"
                    )
                    raise ApiError(
                        403,
                        "Forbidden",
                        f'{res.qualified} "{name}" is forbidden: {msg}',
                        _details(
                            res,
                            name,
                            causes=[
                                {
                                    "reason": "NamespaceTerminating",
                                    "message": msg,
                                    "field": "metadata.namespace",
                                }
                            ],
                        ),
                    )
            if self.get(res, meta.get("namespace"), name) is not None:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{res.qualified} "{name}" already exists',
                    _details(res, name),
                )
            if not (direct and meta.get("uid")):
                meta["uid"] = str(uuid.uuid4())
            if not meta.get("creationTimestamp"):
                meta["creationTimestamp"] = now_rfc3339()
            meta["generation"] = 1
            _drop_empty(meta)
            meta.pop("managedFields", None)
            meta.pop("selfLink", None)
            if not direct:
                meta.pop("deletionTimestamp", None)
                meta.pop("deletionGracePeriodSeconds", None)
            elif meta.get("deletionTimestamp"):
                meta.setdefault("deletionGracePeriodSeconds", 0)
            if res.is_namespace:
                spec = body.get("spec") if isinstance(body.get("spec"), dict) else None
                if spec is None or not direct or "finalizers" not in spec:
                    body["spec"] = {**(spec or {}), "finalizers": ["kubernetes"]}
                phase = "Terminating" if meta.get("deletionTimestamp") else "Active"
                body["status"] = {**(body.get("status") or {}), "phase": phase}
                labels = meta.get("labels") or {}
                meta["labels"] = {**labels, "kubernetes.io/metadata.name": name}
            if dry_run:
                meta.pop("resourceVersion", None)
                return body
            meta["resourceVersion"] = self._bump()
            self._put(res, body)
            return body

    # -- update / patch ------------------------------------------------------------------

    def _current(self, res: Resource, namespace: str | None, name: str) -> JSON:
        cur = self.get(res, namespace, name)
        if cur is None:
            raise not_found(res, name)
        return cur

    def update(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        body: JSON,
        *,
        dry_run: bool = False,
    ) -> tuple[JSON, bool]:
        """PUT semantics; returns (object, removed). ``body`` must be a private copy."""
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            raise bad_request("metadata is required")
        if meta.get("name") not in (None, name):
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the "
                f"URL ({name})"
            )
        if res.namespaced and meta.get("namespace") not in (None, "", namespace):
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        if body.get("kind") not in (None, res.kind):
            raise bad_request(f"the kind of the provided object must be {res.kind}")
        with self.lock:
            cur = self._current(res, namespace, name)
            want = meta.get("resourceVersion")
            if not want:
                if not res.builtin:
                    raise invalid(
                        res,
                        name,
                        "metadata.resourceVersion: Invalid value: 0x0: must be specified for an "
                        "update",
                    )
            elif want != cur["metadata"]["resourceVersion"]:
                raise conflict(res, name, MODIFIED)
            return self._commit(res, cur, body, dry_run=dry_run)

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        patch_type: str,
        patch: Any,
        *,
        dry_run: bool = False,
    ) -> tuple[JSON, bool]:
        """PATCH semantics (``merge`` or ``json``); returns (object, removed)."""
        with self.lock:
            cur = self._current(res, namespace, name)
            doc = json_copy(cur)
            try:
                if patch_type == "merge":
                    if not isinstance(patch, dict):
                        raise bad_request("a merge patch must be a JSON object")
                    new = merge_patch(doc, patch)
                else:
                    new = json_patch(doc, patch)
            except PatchFailed as exc:
                raise ApiError(
                    422,
                    "Invalid",
                    f"the server rejected our request due to an error in our request: {exc}",
                ) from exc
            if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
                raise bad_request("the patched object is not a valid object")
            new_meta = new["metadata"]
            if new_meta.get("name") != name or (
                res.namespaced and new_meta.get("namespace") != cur["metadata"].get("namespace")
            ):
                raise bad_request("a patch may not change metadata.name or metadata.namespace")
            want = new_meta.get("resourceVersion")
            if want and want != cur["metadata"]["resourceVersion"]:
                raise conflict(res, name, MODIFIED)
            return self._commit(res, cur, new, dry_run=dry_run)

    def _commit(self, res: Resource, cur: JSON, new: JSON, *, dry_run: bool) -> tuple[JSON, bool]:
        """Store ``new`` in place of ``cur`` (caller holds the lock)."""
        old_meta = cur["metadata"]
        meta = new["metadata"]
        new["apiVersion"] = res.api_version()
        new["kind"] = res.kind
        meta.pop("managedFields", None)
        for key in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
        ):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        if res.is_namespace:  # spec.finalizers and status only change through subresources
            new["spec"] = {**(new.get("spec") or {}), **(cur.get("spec") or {})}
            if "status" in cur:
                new["status"] = cur["status"]
        if is_terminating(cur):
            added = set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
            if added:
                raise invalid(
                    res,
                    meta["name"],
                    "metadata.finalizers: Forbidden: no new finalizers can be added if the "
                    "object is being deleted, found new finalizers " + json.dumps(sorted(added)),
                )
        _drop_empty(meta)
        if new == cur:
            return cur, False  # no-op: the real server does not write (rv unchanged)

        def content(o: JSON) -> JSON:
            return {k: v for k, v in o.items() if k not in ("metadata", "status")}

        if content(new) != content(cur) and "generation" in meta:
            meta["generation"] = int(meta["generation"]) + 1
        if dry_run:
            return new, False
        meta["resourceVersion"] = self._bump()
        if is_terminating(new) and not has_finalizers(res, new):
            self.remove(res, meta.get("namespace"), meta["name"])
            return new, True
        self._put(res, new)
        return new, False

    # -- delete --------------------------------------------------------------------------

    def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        options: JSON | None = None,
        *,
        dry_run: bool = False,
    ) -> DeleteResult:
        opts = options or {}
        policy = opts.get("propagationPolicy")
        if policy not in (None, "Foreground", "Background", "Orphan"):
            raise invalid(
                res,
                name,
                f'propagationPolicy: Unsupported value: "{policy}": supported values: '
                '"Foreground", "Background", "Orphan"',
            )
        orphan = opts.get("orphanDependents")
        if orphan is not None and policy is not None:
            raise invalid(
                res,
                name,
                "propagationPolicy: Invalid value: orphanDependents and "
                "propagationPolicy cannot be both set",
            )
        with self.lock:
            cur = self._current(res, namespace, name)
            meta = cur["metadata"]
            pre = opts.get("preconditions") or {}
            if pre.get("uid") is not None and pre["uid"] != meta.get("uid"):
                raise ApiError(
                    409,
                    "Conflict",
                    f"Precondition failed: UID in precondition: {pre['uid']}, UID in object "
                    f"meta: {meta.get('uid')}",
                    _details(res, name),
                )
            if (
                pre.get("resourceVersion") is not None
                and pre["resourceVersion"] != meta["resourceVersion"]
            ):
                raise ApiError(
                    409,
                    "Conflict",
                    "Precondition failed: ResourceVersion in precondition: "
                    f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                    f"{meta['resourceVersion']}",
                    _details(res, name),
                )
            if is_terminating(cur):
                if res.is_namespace and not has_finalizers(res, cur):
                    if not dry_run:
                        self.remove(res, namespace, name)
                    return DeleteResult(cur, True)
                return DeleteResult(cur, False)
            finalizers = list(meta.get("finalizers") or [])
            # a bare API server: nothing ever removes these (no garbage collector runs)
            if policy == "Foreground" and "foregroundDeletion" not in finalizers:
                finalizers.append("foregroundDeletion")
            if (policy == "Orphan" or orphan is True) and "orphan" not in finalizers:
                finalizers.append("orphan")
            if finalizers or res.is_namespace:
                new = json_copy(cur)
                nmeta = new["metadata"]
                if finalizers:
                    nmeta["finalizers"] = finalizers
                nmeta["deletionTimestamp"] = now_rfc3339()
                nmeta["deletionGracePeriodSeconds"] = 0
                if "generation" in nmeta:
                    nmeta["generation"] = int(nmeta["generation"]) + 1
                if res.is_namespace:
                    new["status"] = {**(new.get("status") or {}), "phase": "Terminating"}
                if not dry_run:
                    nmeta["resourceVersion"] = self._bump()
                    self._put(res, new)
                return DeleteResult(new, False)
            if not dry_run:
                self.remove(res, namespace, name)
            return DeleteResult(cur, True)

    # -- list ----------------------------------------------------------------------------

    def _iter_sorted(self, res: Resource, namespace: str | None) -> Iterator[JSON]:
        buckets = self._data.get(res.key, {})
        if res.namespaced and namespace is not None:
            names = [namespace] if namespace in buckets else []
        else:
            names = sorted(buckets)
        for ns in names:
            bucket = buckets[ns]
            for name in sorted(bucket):
                yield bucket[name]

    def snapshot(self, res: Resource, namespace: str | None) -> list[JSON]:
        """Every object of ``res`` (in ``namespace`` if given) ordered by (namespace, name)."""
        with self.lock:
            return list(self._iter_sorted(res, namespace))

    def list(
        self,
        res: Resource,
        namespace: str | None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> ListPage:
        labels = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector)
        selective = bool(labels or fields)

        def matches(obj: JSON) -> bool:
            meta = obj["metadata"]
            if fields and not fields_match(fields, meta.get("namespace", ""), meta["name"]):
                return False
            return not labels or labels_match(labels, meta.get("labels"))

        ns_key = namespace if res.namespaced else None
        with self.lock:
            if continue_token:
                snap_id, offset = self._decode(continue_token)
                snap = self._snapshots.get(snap_id)
                if snap is None:
                    raise expired()
                if snap.key != res.key or snap.namespace != ns_key:
                    raise bad_request("invalid continue token: it was issued for another list")
                self._snapshots.move_to_end(snap_id)
                items, rv = snap.items, snap.resource_version
            else:
                snap_id, offset = 0, 0
                items, rv = list(self._iter_sorted(res, ns_key)), self.resource_version
        return self._page(res, ns_key, items, rv, snap_id, offset, limit, matches, selective)

    def _page(
        self,
        res: Resource,
        ns_key: str | None,
        items: JSONList,
        rv: str,
        snap_id: int,
        offset: int,
        limit: int | None,
        matches: Callable[[JSON], bool],
        selective: bool,
    ) -> ListPage:
        out: JSONList = []
        pos = offset
        total = len(items)
        if limit is None:
            out = [o for o in items[offset:] if matches(o)]
            return ListPage(out, rv, None, None)
        while pos < total and len(out) < limit:
            obj = items[pos]
            pos += 1
            if matches(obj):
                out.append(obj)
        if pos >= total:
            return ListPage(out, rv, None, None)
        with self.lock:
            if not snap_id:
                snap_id = self._next_snapshot
                self._next_snapshot += 1
                self._snapshots[snap_id] = _Snapshot(res.key, ns_key, items, rv)
                while len(self._snapshots) > self.SNAPSHOT_CACHE:
                    self._snapshots.popitem(last=False)
        token = self._encode(snap_id, pos, rv)
        # like the real server: no remainingItemCount when a selector filters the list
        remaining = None if selective else total - pos
        return ListPage(out, rv, token, remaining)

    @staticmethod
    def _encode(snap_id: int, offset: int, rv: str) -> str:
        raw = json.dumps({"v": "fake.k8s.io/v1", "s": snap_id, "o": offset, "rv": rv})
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    def _decode(self, token: str) -> tuple[int, int]:
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            data = json.loads(raw)
            snap_id, offset = int(data["s"]), int(data["o"])
        except (binascii.Error, ValueError, KeyError, TypeError) as exc:
            raise expired() from exc
        if snap_id < self._expired_below or offset < 0:
            raise expired()
        return snap_id, offset

    def expire_continue_tokens(self) -> None:
        with self.lock:
            self._expired_below = self._next_snapshot
            self._snapshots.clear()
