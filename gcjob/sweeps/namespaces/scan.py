"""What the namespaces sweep reads of the hub, metadata only: the candidate namespaces (both
upstream labels, selected on the server), what the namespace controller would delete in one
(discovery: namespaced, `list` and `delete`), one list of each such kind there, and Karmada's
Works owned by a Namespace (where the hub serves them)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from gcjob.domain import (
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
    in_every_namespace,
    kind_name,
)
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.reader import Reader
from gcjob.kube.resources import NAMESPACES, WORKS, Resource
from gcjob.model import Holdings, HubNamespace, Propagation
from gcjob.redact import redact

SELECTOR = f"{UPSTREAM_CLUSTER_LABEL},{UPSTREAM_NAMESPACE_LABEL}"
KEPT_LABELS = (UPSTREAM_CLUSTER_LABEL, UPSTREAM_NAMESPACE_LABEL)
EXECUTION_SPACE = "karmada-es-"


@runtime_checkable
class NamespacedDiscovery(Protocol):
    def namespaced_deletable(self) -> tuple[list[Resource], list[tuple[str, str]]]: ...


def hub_namespace(obj: dict[str, Any]) -> HubNamespace:
    return HubNamespace(
        reduce.object_ref(obj, NAMESPACES),
        reduce.labels_of(obj, KEPT_LABELS),
        reduce.owners(obj),
        reduce.protect(obj),
    )


def scan_namespaces(hub: Reader) -> list[HubNamespace]:
    """Every hub namespace carrying both upstream labels (the candidates are chosen from
    these by name, judge.py `upstream_of`)."""
    return hub.list(NAMESPACES, hub_namespace, label_selector=SELECTOR)


def read_namespace(hub: Reader, name: str) -> HubNamespace | None:
    """One namespace by name (explain)."""
    return hub.get(NAMESPACES, None, name, hub_namespace)


def what_it_deletes(hub: Reader) -> tuple[list[Resource], dict[str, str]]:
    """The kinds the namespace controller would delete in a namespace, and the groups whose
    discovery failed (their kinds are unknown: each namespace inspected names them). Events
    are left out: Kubernetes puts them in every namespace. Raises KubeError."""
    if not isinstance(hub, NamespacedDiscovery):
        raise KubeError("this source answers no discovery (a snapshot)")
    kinds, failed = hub.namespaced_deletable()
    wanted = [r for r in kinds if not in_every_namespace(r.group, r.kind, "")]
    return sorted(wanted, key=lambda r: (r.group, r.kind)), dict(failed)


def _name(obj: dict[str, Any]) -> str | None:
    return reduce.name_of(obj)


def holdings(
    hub: Reader, namespace: str, kinds: Iterable[Resource], undiscovered: dict[str, str]
) -> Holdings:
    """One metadata-only list of each kind in `namespace`: the objects that are not in every
    namespace, counted by kind, and the kinds that could not be listed (a 403, an error)."""
    counts: Counter[str] = Counter()
    not_listable: dict[str, str] = {f"group {g}": why for g, why in undiscovered.items()}
    for resource in kinds:
        name = kind_name(resource.group, resource.kind)
        try:
            names = hub.list(resource, _name, namespace=namespace)
        except Stopped:
            raise
        except KubeError as exc:
            not_listable[name] = redact(str(exc))[:200]
            continue
        held = sum(
            1 for n in names if n and not in_every_namespace(resource.group, resource.kind, n)
        )
        if held:
            counts[name] += held
    return Holdings(dict(counts), not_listable)


def _work_owner(obj: dict[str, Any]) -> tuple[str, str] | None:
    """A Work owned by a Namespace: (the namespace's uid, the member cluster)."""
    ref = reduce.object_ref(obj, WORKS)
    if not ref.namespace.startswith(EXECUTION_SPACE):
        return None
    for owner in reduce.owners(obj, uids=True):
        if owner.kind == "Namespace" and owner.uid:
            return owner.uid, ref.namespace.removeprefix(EXECUTION_SPACE)
    return None


def propagations(hub: Reader) -> dict[str, Propagation] | str:
    """Each Namespace's Works (by its uid): the member clusters Karmada propagated it to; or
    why that is not known (the hub does not serve Works, or they cannot be read)."""
    try:
        if not hub.served(WORKS):
            return "the hub serves no work.karmada.io/v1alpha1 Works"
        found = hub.list(WORKS, _work_owner)
    except Stopped:
        raise
    except KubeError as exc:
        return f"Works not read: {redact(str(exc))[:200]}"
    clusters: dict[str, set[str]] = defaultdict(set)
    for pair in found:
        if pair is not None:
            clusters[pair[0]].add(pair[1])
    return {uid: Propagation(tuple(sorted(names))) for uid, names in clusters.items()}
