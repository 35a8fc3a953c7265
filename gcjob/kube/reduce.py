"""Raw API objects -> compact records. Tolerant of malformed input: an odd field becomes a
value the decisions refuse to delete on (no uid, no age, an unreadable annotation)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from gcjob.domain import (
    CLUSTER_POLICY_KEY,
    DELETION_PROTECTED_LABEL,
    HELM_OWNER_LABEL,
    HELM_RELEASE_PREFIX,
    KARMADA_PROTECTED,
    ORPHANED_EVIDENCE_ANNOTATION,
    ORPHANED_LABEL,
    ORPHANED_REASON_ANNOTATION,
    ORPHANED_SINCE_ANNOTATION,
    POLICY_KEY,
    PROTECT_ANNOTATION,
    REFERRERS_ANNOTATION,
    ROUTE_LABELS,
    SERVICE_ACCOUNT_NAME_ANNOTATION,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_NAME_LABEL,
)
from gcjob.kube.resources import HTTPROUTES, RESOURCEBINDINGS, Resource
from gcjob.model import (
    UNREADABLE_OWNER,
    Binding,
    BoundResource,
    Companion,
    Deletion,
    Mark,
    ObjectRef,
    OwnerRef,
    ParentRef,
    Protect,
    Route,
)
from gcjob.times import parse_time

Obj = dict[str, Any]


NAMESPACE_NAME_MAX = 63  # a namespace's name is a DNS-1123 label


def one_string(value: str) -> str:
    """One string for equal values met lately: a namespace, shared by the records read of it
    (a list holds a namespace's objects together). Not sys.intern: the interpreter's table of
    interned strings never shrinks, and each read of 10,000 namespaces grew it again (1.8 MiB
    at the first read of the hub, 3.7 at the copies' second read: the run's peak). A value
    longer than any namespace's name is not shared: the cache would keep it."""
    return _recent(value) if len(value) <= NAMESPACE_NAME_MAX else value


@lru_cache(maxsize=256)
def _recent(value: str) -> str:
    return value


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _str_map(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def object_ref(obj: Obj, resource: Resource) -> ObjectRef:
    meta = _meta(obj)
    return ObjectRef(
        api_version=resource.api_version,
        kind=resource.kind,
        namespace=one_string(_text(meta.get("namespace"))),
        name=_text(meta.get("name")),
        uid=_text(meta.get("uid")),
        resource_version=_text(meta.get("resourceVersion")),
        created=parse_time(meta.get("creationTimestamp")),
        terminating=meta.get("deletionTimestamp") is not None,
        has_labels=isinstance(meta.get("labels"), dict),
        has_annotations=isinstance(meta.get("annotations"), dict),
        mark=mark(meta),
        deletion=deletion(meta),
    )


def deletion(meta: Obj) -> Deletion | None:
    """A terminating object's deletion (most objects have none: no record is made for them)."""
    if meta.get("deletionTimestamp") is None:
        return None
    return Deletion(parse_time(meta.get("deletionTimestamp")), finalizers_of({"metadata": meta}))


def finalizers_of(obj: Any) -> tuple[str, ...]:
    """An object's finalizers as read (metadata.finalizers), each a string; one that is not
    reads as `<unreadable>`, and so does a field that is no list."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    found = meta.get("finalizers") if isinstance(meta, dict) else None
    if found is None:
        return ()
    if not isinstance(found, list):
        return ("<unreadable>",)
    return tuple(f if isinstance(f, str) else "<unreadable>" for f in found)


def mark(meta: Obj) -> Mark | None:
    """gcjob's mark, verbatim; None when no part of it is there."""
    label = _label(meta, ORPHANED_LABEL)
    since = _annotation(meta, ORPHANED_SINCE_ANNOTATION)
    reason = _annotation(meta, ORPHANED_REASON_ANNOTATION)
    evidence = _annotation(meta, ORPHANED_EVIDENCE_ANNOTATION)
    if label is None and since is None and reason is None and evidence is None:
        return None  # most objects carry none: no Mark is made for them
    return Mark(label=label, since=since, reason=reason, evidence=evidence)


def _annotation(meta: Obj, key: str) -> str | None:
    value = _str_map(meta.get("annotations")).get(key)
    if value is None:
        return None
    return value if isinstance(value, str) else "<not a string>"


def _label(meta: Obj, key: str) -> str | None:
    value = _str_map(meta.get("labels")).get(key)
    return value if isinstance(value, str) else None


_PROTECT_KEY = PROTECT_ANNOTATION.casefold()


def protect(obj: Obj) -> Protect:
    """Every place the protect key is set, as an annotation or a label, with its value verbatim;
    and Karmada's deletion protection label, whatever its value (`Always`, the one value
    Karmada's webhook refuses a delete on, is `deletion-protected`; any other is one gcjob
    does not recognise, `deletion-protected-not-understood`: decide/common.py `protection`).

    The key is matched whatever its case (`.../Protect` is someone's intent too), and a map that
    is not a map is recorded as such: what cannot be read may hold the key (kept).
    """
    meta = _meta(obj)
    found: list[tuple[str, str]] = []
    for place in ("annotations", "labels"):
        values = meta.get(place)
        if values is None:
            continue
        if not isinstance(values, dict):
            found.append((f"{place} (not a map)", "<unreadable>"))
            continue
        for key, value in values.items():
            if isinstance(key, str) and key.casefold() == _PROTECT_KEY:
                where = f"{place.removesuffix('s')} {key}"
                found.append((where, value if isinstance(value, str) else "<not a string>"))
    labels = meta.get("labels")
    if isinstance(labels, dict) and DELETION_PROTECTED_LABEL in labels:
        # Any value, verbatim: `Always` is Karmada's; any other is one gcjob does not
        # recognise, and decide/common.py `protection` keeps it too (fail closed).
        value = labels[DELETION_PROTECTED_LABEL]
        found.append((KARMADA_PROTECTED, value if isinstance(value, str) else "<not a string>"))
    return tuple(found)


def owners(obj: Obj, controllers_only: bool = False, uids: bool = False) -> tuple[OwnerRef, ...]:
    """Its ownerReferences (or only the controller ones; with their uids where `uids`: only
    where a rule reads them, a binding's); one that cannot be read is kept as
    UNREADABLE_OWNER, which no rule lets go of."""
    refs = _meta(obj).get("ownerReferences")
    if refs is None:
        return ()
    if not isinstance(refs, list):
        return (UNREADABLE_OWNER,)
    found: list[OwnerRef] = []
    for ref in refs:
        if not isinstance(ref, dict):
            found.append(UNREADABLE_OWNER)
            continue
        controller = ref.get("controller")
        is_controller = controller is not None and controller is not False  # odd: controller
        if controllers_only and not is_controller:
            continue
        found.append(
            OwnerRef(
                api_version=sys.intern(_text(ref.get("apiVersion"))),
                kind=sys.intern(_text(ref.get("kind"))),
                name=_text(ref.get("name")),
                controller=is_controller,
                uid=_text(ref.get("uid")) if uids else "",
            )
        )
    return tuple(found)


def secret_marks(obj: Obj) -> tuple[str, ...]:
    """The metadata marks of a Secret type gcjob never deletes (a Secret's type is not in its
    metadata): a service account token's annotation, a Helm release's label or name."""
    meta = _meta(obj)
    marks = []
    if _annotation(meta, SERVICE_ACCOUNT_NAME_ANNOTATION) is not None:
        marks.append(f"annotation {SERVICE_ACCOUNT_NAME_ANNOTATION} (a service account token)")
    if _label(meta, HELM_OWNER_LABEL) == "helm":
        marks.append("label owner=helm (a Helm release)")
    if _text(meta.get("name")).startswith(HELM_RELEASE_PREFIX):
        marks.append(f"name {HELM_RELEASE_PREFIX}* (a Helm release)")
    return tuple(marks)


def companion(resource: Resource) -> Callable[[Obj], Companion]:
    def reduce(obj: Obj) -> Companion:
        return Companion(
            ref=object_ref(obj, resource),
            referrers_raw=_annotation(_meta(obj), REFERRERS_ANNOTATION),
            protect=protect(obj),
            owners=owners(obj),
            secret_marks=secret_marks(obj) if resource.kind == "Secret" else (),
        )

    return reduce


def _bound_resource(obj: Obj) -> BoundResource | None:
    spec = _str_map(obj.get("spec"))
    res = spec.get("resource")
    if not isinstance(res, dict):
        return None
    return BoundResource(
        api_version=sys.intern(_text(res.get("apiVersion"))),
        kind=sys.intern(_text(res.get("kind"))),
        namespace=one_string(_text(res.get("namespace"))),
        name=_text(res.get("name")),
        uid=_text(res.get("uid")),
    )


def binding(obj: Obj) -> Binding:
    meta = _meta(obj)
    return Binding(
        ref=object_ref(obj, RESOURCEBINDINGS),
        policy_annotation=_annotation(meta, POLICY_KEY),
        policy_label=_label(meta, POLICY_KEY),
        cluster_policy=(
            _annotation(meta, CLUSTER_POLICY_KEY) is not None
            or _label(meta, CLUSTER_POLICY_KEY) is not None
        ),
        resource=_bound_resource(obj),
        protect=protect(obj),
        owners=owners(obj, uids=True),
    )


def _parent_ref(value: object) -> ParentRef:
    if not isinstance(value, dict):
        # Not understood: a parent that is no Gateway, so the route is kept.
        return ParentRef(name="", group="<malformed>", kind="<malformed>", namespace=None)

    def optional(key: str) -> str | None:
        if key not in value:
            return None
        return sys.intern(value[key]) if isinstance(value[key], str) else "<malformed>"

    return ParentRef(
        name=sys.intern(_text(value.get("name"))),  # a few Gateways carry many routes
        group=optional("group"),
        kind=optional("kind"),
        namespace=optional("namespace"),  # "" is set, and not the route's namespace
    )


# Labels whose values are one for each project or object: held only while their object is
# judged (the cluster's name is kept decoded, interned once: domain.decode_cluster_label), so
# interning them would only grow the interpreter's table of interned strings, which never
# shrinks (about 16 bytes a string, doubled at each resize: 1.8 MiB at 10,000 projects).
_NOT_SHARED = frozenset({UPSTREAM_NAME_LABEL, UPSTREAM_CLUSTER_LABEL})


def _shared(key: str, value: str) -> str:
    """A label's value, interned where it is the same on thousands of objects (the group,
    kind and namespace labels)."""
    return value if key in _NOT_SHARED else sys.intern(value)


def labels_of(obj: Obj, keys: tuple[str, ...]) -> dict[str, str]:
    """Only these labels, where set to a string; every other label is dropped on read."""
    meta = _meta(obj)
    return {k: _shared(k, v) for k in keys if (v := _label(meta, k)) is not None}


def route(obj: Obj) -> Route:
    labels = labels_of(obj, ROUTE_LABELS)
    refs = _str_map(obj.get("spec")).get("parentRefs")
    parents = tuple(_parent_ref(p) for p in refs) if isinstance(refs, list) else ()
    return Route(
        ref=object_ref(obj, HTTPROUTES),
        labels=labels,
        parent_refs=parents,
        protect=protect(obj),
        owners=owners(obj, controllers_only=True),
    )


def uid_of(obj: Obj) -> str | None:
    return _text(_meta(obj).get("uid")) or None


def name_of(obj: Obj) -> str | None:
    return _text(_meta(obj).get("name")) or None


def namespace_and_name(obj: Obj) -> tuple[str, str] | None:
    meta = _meta(obj)
    name = _text(meta.get("name"))
    return (one_string(_text(meta.get("namespace"))), name) if name else None


def ref_of(resource: Resource) -> Callable[[Obj], ObjectRef]:
    return lambda obj: object_ref(obj, resource)
