"""The names, labels and annotations of the world gcjob cleans up (see docs/rules.md)."""

from __future__ import annotations

import re
import sys

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

# Secrets gcjob never deletes, whoever labels them a companion: their owners manage them (a
# service account's token; a Helm release's record; a bootstrap token). A Secret's type is not
# in its metadata: these are its marks there, and the types a field selector excludes.
SERVICE_ACCOUNT_NAME_ANNOTATION = "kubernetes.io/service-account.name"
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

# The five labels NSO stamps on each copy, naming the upstream object it copies.
UPSTREAM_LABELS = (
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
)
# Label keys gcjob reads from downstream routes; every other label is dropped on read.
ROUTE_LABELS = (*UPSTREAM_LABELS, HTTP01_SOLVER_LABEL)

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


# (group, kind): NSO's resource replicator's defaults (ConfigMaps and Secrets only when
# labelled gateway-sync; anchors are ConfigMaps), and what its gateway controller writes.
REPLICATED_KINDS: tuple[tuple[str, str], ...] = (
    ("", "ConfigMap"),
    ("", "Secret"),
    ("gateway.envoyproxy.io", "Backend"),
    ("gateway.envoyproxy.io", "BackendTrafficPolicy"),
    ("gateway.envoyproxy.io", "SecurityPolicy"),
    ("gateway.envoyproxy.io", "HTTPRouteFilter"),
    (GATEWAY_GROUP, "BackendTLSPolicy"),
    (GATEWAY_GROUP, "Gateway"),
    ("networking.datumapis.com", "TrafficProtectionPolicy"),
    ("networking.datumapis.com", "HTTPProxy"),
    ("networking.datumapis.com", "NetworkContext"),
    ("networking.datumapis.com", "Subnet"),
    ("networking.datumapis.com", "Connector"),
    ("discovery.k8s.io", "EndpointSlice"),
)


def kind_name(group: str, kind: str) -> str:
    """How a kind is named in flags and reports: `Kind.group`, or `Kind` for the core group."""
    return f"{kind}.{group}" if group else kind


REPLICATED_KIND_NAMES = tuple(kind_name(group, kind) for group, kind in REPLICATED_KINDS)
# Their resources' names, as RBAC names them (the sweep itself takes them from discovery).
REPLICATED_PLURALS: dict[tuple[str, str], str] = {
    ("", "ConfigMap"): "configmaps",
    ("", "Secret"): "secrets",
    ("gateway.envoyproxy.io", "Backend"): "backends",
    ("gateway.envoyproxy.io", "BackendTrafficPolicy"): "backendtrafficpolicies",
    ("gateway.envoyproxy.io", "SecurityPolicy"): "securitypolicies",
    ("gateway.envoyproxy.io", "HTTPRouteFilter"): "httproutefilters",
    (GATEWAY_GROUP, "BackendTLSPolicy"): "backendtlspolicies",
    (GATEWAY_GROUP, "Gateway"): "gateways",
    ("networking.datumapis.com", "TrafficProtectionPolicy"): "trafficprotectionpolicies",
    ("networking.datumapis.com", "HTTPProxy"): "httpproxies",
    ("networking.datumapis.com", "NetworkContext"): "networkcontexts",
    ("networking.datumapis.com", "Subnet"): "subnets",
    ("networking.datumapis.com", "Connector"): "connectors",
    ("discovery.k8s.io", "EndpointSlice"): "endpointslices",
}
