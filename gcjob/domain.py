"""The names, labels and annotations of the world gcjob cleans up (see docs/rules.md)."""

from __future__ import annotations

import re
import sys
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

COMPANION_LABEL = "compute.datumapis.com/referenced-data"
REFERRERS_ANNOTATION = "compute.datumapis.com/referenced-by"

POLICY_KEY = "propagationpolicy.karmada.io/name"
CLUSTER_POLICY_KEY = "clusterpropagationpolicy.karmada.io/name"
CITY_POLICY_PREFIX = "city-"

UPSTREAM_CLUSTER_LABEL = "meta.datumapis.com/upstream-cluster-name"
UPSTREAM_GROUP_LABEL = "meta.datumapis.com/upstream-group"
UPSTREAM_KIND_LABEL = "meta.datumapis.com/upstream-kind"
UPSTREAM_NAME_LABEL = "meta.datumapis.com/upstream-name"
UPSTREAM_NAMESPACE_LABEL = "meta.datumapis.com/upstream-namespace"
HTTP01_SOLVER_LABEL = "meta.datumapis.com/http01-solver"
GATEWAY_GROUP = "gateway.networking.k8s.io"
GATEWAY_KIND = "Gateway"
HTTPROUTE_KIND = "HTTPRoute"

# Any object carrying this annotation with value "true" is never deleted by gcjob.
PROTECT_ANNOTATION = "gcjob.datumapis.com/protect"
# Karmada's deletion protection: its webhook (resourcedeletionprotection.karmada.io) refuses any
# delete of an object labelled so with exactly this value (other values it lets through).
# gcjob keeps such an orphan without sending the delete Karmada would refuse.
DELETION_PROTECTED_LABEL = "resourcetemplate.karmada.io/deletion-protected"
DELETION_PROTECTED_VALUE = "Always"
# Where it is found, as a Protect entry (gcjob/model.py) says it.
KARMADA_PROTECTED = f"label {DELETION_PROTECTED_LABEL}"

# Secrets gcjob never deletes, whoever labels them a companion: their owners manage them (a
# service account's token; a Helm release's record; a bootstrap token). A Secret's type is not
# in its metadata: these are its marks there, and the types a field selector excludes.
SERVICE_ACCOUNT_NAME_ANNOTATION = "kubernetes.io/service-account.name"
HELM_OWNER_LABEL = "owner"  # `owner: helm` on a Helm release's Secret
HELM_RELEASE_PREFIX = "sh.helm.release.v1."
NEVER_DELETED_SECRET_TYPES = (
    "kubernetes.io/service-account-token",
    "helm.sh/release.v1",
    "bootstrap.kubernetes.io/token",
)
# NSO copies a ConfigMap or Secret to the hub only when it carries this label (any value).
GATEWAY_SYNC_LABEL = "networking.datumapis.com/gateway-sync"
# The name prefix of an anchor ConfigMap (docs/rules.md "Anchors"): `anchor-<uid>`.
ANCHOR_PREFIX = "anchor-"

# gcjob's mark on an object it found orphaned and will delete once the grace period is over
# (see gcjob/marks.py): the state of a pending deletion lives on the object itself.
ORPHANED_LABEL = "gcjob.datumapis.com/orphaned"
ORPHANED_SINCE_ANNOTATION = "gcjob.datumapis.com/orphaned-since"
ORPHANED_REASON_ANNOTATION = "gcjob.datumapis.com/orphaned-reason"
ORPHANED_EVIDENCE_ANNOTATION = "gcjob.datumapis.com/orphaned-evidence"

# The five labels NSO puts on what it copies from upstream (and on an anchor).
UPSTREAM_LABELS = (
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
)
# Label keys gcjob reads from downstream routes; every other label is dropped on read.
ROUTE_LABELS = (*UPSTREAM_LABELS, HTTP01_SOLVER_LABEL)

# Of a Secret, gcjob keeps the values of only these labels and annotations: the ones its rules
# read (the companion, copy and protect rules, its mark, the marks of the Secret types it never
# deletes), and the label selectors it lists Secrets by. Every other label and annotation (a
# `kubectl apply`'s last-applied-configuration, which holds the Secret's data) is kept by its
# key alone, its value dropped as the Secret is decoded (secret_as_kept), before anything
# else sees it: gcjob keeps no value no rule reads, so none can reach a record, a report, a
# log, a metric, a webhook or an explanation.
SECRET_KEYS_READ: dict[str, tuple[str, ...]] = {
    "labels": (
        COMPANION_LABEL,
        ORPHANED_LABEL,
        PROTECT_ANNOTATION,
        DELETION_PROTECTED_LABEL,
        HELM_OWNER_LABEL,
        *UPSTREAM_LABELS,
        GATEWAY_SYNC_LABEL,
    ),
    "annotations": (
        REFERRERS_ANNOTATION,
        PROTECT_ANNOTATION,
        ORPHANED_SINCE_ANNOTATION,
        ORPHANED_REASON_ANNOTATION,
        ORPHANED_EVIDENCE_ANNOTATION,
        SERVICE_ACCOUNT_NAME_ANNOTATION,
    ),
}
# What a dropped value reads as: not a value the Secret had, and not one any rule reads.
VALUE_NOT_KEPT = "(value not kept)"
# The metadata of a Secret gcjob reads: its identity, times, owners, finalizers (the names of
# what holds a deletion: docs/rules.md "Deletion states") and the two maps. The rest
# (managedFields, whose fieldsV1 names the data's keys and whose `manager` is free text;
# generateName; selfLink) is read by no rule, and dropped.
_SECRET_NAMES = ("name", "namespace", "uid", "resourceVersion")
_SECRET_TIMES = ("creationTimestamp", "deletionTimestamp")
_OWNER_REFERENCE_FIELDS = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")


def _scalar(value: Any) -> Any:
    return value if isinstance(value, str | int | bool) or value is None else VALUE_NOT_KEPT


def _kept_map(values: Any, read: tuple[str, ...]) -> Any:
    """A Secret's labels or annotations: each key kept, the value only where a rule reads it
    (the protect key in any case, as its rule reads it). A value that is not a map stays not a
    map (the rules keep what they cannot read), without its content."""
    if not isinstance(values, dict):
        return values if values is None else VALUE_NOT_KEPT
    protect = PROTECT_ANNOTATION.casefold()
    return {
        # Not a string (a dump's null, number or map): kept as one, without its content.
        key: (value if isinstance(value, str) or value is None else [])
        if key in read or key.casefold() == protect
        else VALUE_NOT_KEPT
        for key, value in values.items()
        if isinstance(key, str)
    }


def _kept_owners(refs: Any) -> Any:
    if not isinstance(refs, list):
        return refs if refs is None else VALUE_NOT_KEPT  # unreadable: still no list
    return [
        {k: _scalar(ref[k]) for k in _OWNER_REFERENCE_FIELDS if k in ref}
        if isinstance(ref, dict)
        else VALUE_NOT_KEPT
        for ref in refs
    ]


def secret_as_kept(obj: Any) -> dict[str, Any]:
    """What gcjob keeps of a Secret as it is read (from the API or a snapshot), before anything
    else sees it: its kind, type and the metadata its rules read, every label and annotation
    by its key and, unless a rule reads it (SECRET_KEYS_READ), with its value dropped. Never
    its data: a value nobody's rule reads cannot leak (docs/threat-model.md, N5)."""
    if not isinstance(obj, dict):
        return {}
    kept: dict[str, Any] = {
        k: obj[k] for k in ("apiVersion", "kind", "type") if isinstance(obj.get(k), str)
    }
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        kept["metadata"] = {}
        return kept
    # Not a string: a name is then absent (as the rules read one), a time unreadable.
    found = {k: meta[k] for k in _SECRET_NAMES if isinstance(meta.get(k), str)}
    found.update({k: _scalar(meta[k]) for k in _SECRET_TIMES if k in meta})
    for place, read in SECRET_KEYS_READ.items():
        if place in meta:
            found[place] = _kept_map(meta[place], read)
    if "ownerReferences" in meta:
        found["ownerReferences"] = _kept_owners(meta["ownerReferences"])
    if "finalizers" in meta:
        names = meta["finalizers"]
        found["finalizers"] = (
            [_scalar(name) for name in names] if isinstance(names, list) else VALUE_NOT_KEPT
        )
    kept["metadata"] = found
    return kept


_RESERVED_EXACT = frozenset({"karmada-system", "karmada-cluster"})
_RESERVED_PREFIXES = ("kube-", "karmada-es-")

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def is_reserved_namespace(namespace: str) -> bool:
    """Karmada's and Kubernetes' own namespaces: never swept, whatever the flags."""
    return namespace in _RESERVED_EXACT or namespace.startswith(_RESERVED_PREFIXES)


def is_dns1123_label(value: str) -> bool:
    return len(value) <= 63 and _DNS1123_LABEL.fullmatch(value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(value) is not None


def binding_name(object_name: str, kind: str) -> str:
    """Karmada's ResourceBinding name for an object: never strip a legacy prefix."""
    return f"{object_name}-{kind}".lower().replace(":", ".")


def sorted_names(names: Iterable[str]) -> tuple[str, ...]:
    """`names` sorted, each once, without a set: a set of 10,000 cluster names is 0.5 MiB, and
    several at once were the run's peak at 10,000 projects."""
    ordered = sorted(names)
    return tuple(name for at, name in enumerate(ordered) if not at or ordered[at - 1] != name)


V = TypeVar("V")


class ByName(Mapping[str, V]):
    """A map over names kept as one sorted tuple (`sorted_names`), its values made when asked
    (`__getitem__`, the subclass's): what is looked up per name is not copied for each."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self._names = names

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        at = bisect_left(self._names, name)
        return at < len(self._names) and self._names[at] == name

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def decode_cluster_label(value: str) -> str | None:
    """`cluster-<name>` with `/` written as `_` -> the upstream cluster name.

    Older labels carry a leading `/` (`cluster-_proj`), which is stripped. Returns None for a
    value that does not follow the encoding.
    """
    if not value.startswith("cluster-"):
        return None
    name = value.removeprefix("cluster-").replace("_", "/").removeprefix("/")
    # Interned: every route and upstream owner of a cluster holds its name (25,000 at 100k).
    return sys.intern(name) if name else None


@dataclass(frozen=True, slots=True)
class JudgedKind:
    """One kind a sweep judges: the one table of them (docs/rules.md), from which the
    replicated kinds, their plurals, gcjob/kube/resources.py's resources, the sweep each kind
    belongs to (decide/explanation.py SWEEP_OF) and the names explain takes are derived, and
    against which the report schema's kinds are tested."""

    group: str  # "" for the core group
    kind: str
    plural: str  # its resource's name, as RBAC names it
    # The version gcjob names it by before reading it (explain, restore, the companions and
    # bindings sweeps); the copies sweep takes versions from discovery.
    version: str
    sweep: str  # the sweep that judges it by its kind (model.Sweep's value)
    # NSO's resource replicator copies it (the copies sweep reads it): its defaults
    # (ConfigMaps and Secrets only when labelled gateway-sync; anchors are ConfigMaps), and
    # what its gateway controller writes.
    replicated: bool = True
    short_names: tuple[str, ...] = ()  # kubectl's, which explain and restore take too
    namespaced: bool = True  # a Namespace is not (explain names it `ns/NAME`)


_ENVOY = "gateway.envoyproxy.io"
_DATUM_NET = "networking.datumapis.com"
JUDGED_KINDS: tuple[JudgedKind, ...] = (
    JudgedKind("", "ConfigMap", "configmaps", "v1", "companions", short_names=("cm",)),
    JudgedKind("", "Secret", "secrets", "v1", "companions"),
    JudgedKind(
        "work.karmada.io",
        "ResourceBinding",
        "resourcebindings",
        "v1alpha2",
        "bindings",
        replicated=False,
        short_names=("rb",),
    ),
    JudgedKind(GATEWAY_GROUP, HTTPROUTE_KIND, "httproutes", "v1", "routes", replicated=False),
    JudgedKind(_ENVOY, "Backend", "backends", "v1alpha1", "copies"),
    JudgedKind(_ENVOY, "BackendTrafficPolicy", "backendtrafficpolicies", "v1alpha1", "copies"),
    JudgedKind(_ENVOY, "SecurityPolicy", "securitypolicies", "v1alpha1", "copies"),
    JudgedKind(_ENVOY, "HTTPRouteFilter", "httproutefilters", "v1alpha1", "copies"),
    JudgedKind(GATEWAY_GROUP, "BackendTLSPolicy", "backendtlspolicies", "v1alpha3", "copies"),
    JudgedKind(GATEWAY_GROUP, GATEWAY_KIND, "gateways", "v1", "copies"),
    JudgedKind(
        _DATUM_NET, "TrafficProtectionPolicy", "trafficprotectionpolicies", "v1alpha", "copies"
    ),
    JudgedKind(_DATUM_NET, "HTTPProxy", "httpproxies", "v1alpha", "copies"),
    JudgedKind(_DATUM_NET, "NetworkContext", "networkcontexts", "v1alpha", "copies"),
    JudgedKind(_DATUM_NET, "Subnet", "subnets", "v1alpha", "copies"),
    JudgedKind(_DATUM_NET, "Connector", "connectors", "v1alpha1", "copies"),
    JudgedKind("discovery.k8s.io", "EndpointSlice", "endpointslices", "v1", "copies"),
    JudgedKind(
        "",
        "Namespace",
        "namespaces",
        "v1",
        "namespaces",
        replicated=False,
        short_names=("ns",),
        namespaced=False,
    ),
)

# (group, kind) of what NSO copies to the hub: the kinds the copies sweep reads.
REPLICATED_KINDS: tuple[tuple[str, str], ...] = tuple(
    (k.group, k.kind) for k in JUDGED_KINDS if k.replicated
)


def kind_name(group: str, kind: str) -> str:
    """How a kind is named in flags and reports: `Kind.group`, or `Kind` for the core group."""
    return f"{kind}.{group}" if group else kind


REPLICATED_KIND_NAMES = tuple(kind_name(group, kind) for group, kind in REPLICATED_KINDS)
# Their resources' names, as RBAC names them (the sweep itself takes them from discovery).
REPLICATED_PLURALS: dict[tuple[str, str], str] = {
    (k.group, k.kind): k.plural for k in JUDGED_KINDS if k.replicated
}

# How `gcjob explain` and `gcjob restore` name an object's kind (TARGET is KIND/NAMESPACE/NAME,
# KIND in any case): every kind a sweep judges, by its kind, its plural and kubectl's short
# name where it has one.
TARGET_KINDS: dict[str, str] = {
    name: k.kind for k in JUDGED_KINDS for name in (k.kind.lower(), k.plural, *k.short_names)
}


def target_kinds_said() -> str:
    """TARGET_KINDS for a person, each kind once: its lower-case name, then its short name
    (`configmap (cm)`); the plurals go unsaid."""
    names: dict[str, list[str]] = {}
    for name, kind in TARGET_KINDS.items():
        names.setdefault(kind, []).append(name)
    said = []
    for kind, all_names in names.items():
        short = [n for n in all_names if len(n) < len(kind)]
        said.append(f"{kind.lower()} ({', '.join(short)})" if short else kind.lower())
    return ", ".join(said)


# What Kubernetes puts in every namespace ((group, kind, name); "" any name): never a sign that
# a hub namespace is in use (the namespaces sweep).
EVERY_NAMESPACE: tuple[tuple[str, str, str], ...] = (
    ("", "ConfigMap", "kube-root-ca.crt"),
    ("", "ServiceAccount", "default"),
    ("", "Event", ""),
    ("events.k8s.io", "Event", ""),
)


def in_every_namespace(group: str, kind: str, name: str) -> bool:
    """What Kubernetes puts in every namespace: never a sign of use."""
    return any((group, kind) == (g, k) and (not n or n == name) for g, k, n in EVERY_NAMESPACE)
