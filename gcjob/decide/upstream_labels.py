"""Whether a hub object is NSO's copy of an upstream object, read from its five
`meta.datumapis.com/upstream-*` labels: the one rule every sweep that reads those labels
applies (routes, downstream copies; docs/rules.md "What is a copy"). Pure.

NSO writes a copy under its upstream object's own name, with the labels naming that object.
So an object is a copy only when its name is its `upstream-name` label, its own group and
kind are the labels', the namespace label is a namespace name (or empty: a cluster-scoped
owner) and the cluster label decodes. Anything else is not NSO's copy: nothing about an
upstream object follows from it, so it is never looked up under the name its labels give,
and it is kept for its own reason. The one exception is an anchor, NSO's bookkeeping, whose
`upstream-name` is never its own name (its name is `anchor-<owner uid>`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from gcjob.decide.common import CANONICAL_UUID
from gcjob.decide.trace import Trace, given
from gcjob.domain import (
    ANCHOR_PREFIX,
    GATEWAY_SYNC_LABEL,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_LABELS,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
    decode_cluster_label,
    is_dns1123_label,
    is_dns1123_subdomain,
)
from gcjob.model import OwnerRef, UpstreamOwner
from gcjob.reasons import Reason

# A label value's maximum length: a value this long may have been cut short, and a cut name
# names another object (or none): it proves nothing.
LABEL_LIMIT = 63


@dataclass(frozen=True, slots=True)
class Copied:
    """NSO's copy of `owner` (or, with `anchor_uid`, the anchor of the owner of that UID)."""

    owner: UpstreamOwner
    anchor_uid: str | None = None


@dataclass(frozen=True, slots=True)
class NotCopied:
    """Not NSO's copy of anything: why, and the trace's rule that said so. `cluster`: the
    decoded upstream cluster, when the labels got that far."""

    reason: Reason
    detail: str
    rule: str
    cluster: str | None = None


@lru_cache(maxsize=256)
def group_understood(group: str) -> bool:
    """An `upstream-group` NSO writes: "" is the core group, and NSO writes no other spelling
    of it (`core`, `v1` are not NSO's); any other, an API group's name. (A hub has a handful
    of groups: each is checked once.)"""
    return group not in ("core", "v1") and (not group or is_dns1123_subdomain(group))


def anchor_uid_of(name: str) -> str | None:
    """The owner UID an anchor's name carries: `anchor-<canonical uuid>`, else None."""
    uid = name.removeprefix(ANCHOR_PREFIX)
    if name.startswith(ANCHOR_PREFIX) and CANONICAL_UUID.fullmatch(uid):
        return sys.intern(uid)  # the owner's uid as read upstream is the same string
    return None


def copy_of(
    name: str,
    group: str,
    kind: str,
    labels: Mapping[str, str],
    owners: Sequence[OwnerRef] = (),
    trace: Trace | None = None,
) -> Copied | NotCopied:
    """What the hub object `name` of `group` ("" for core) and `kind` copies, by its labels;
    `owners`: its ownerReferences (an anchor has none). Traced as the rules `labels`, then
    `anchor` or `copy`."""
    trace = given(trace)

    def no(reason: Reason, detail: str, rule: str, cluster: str | None = None) -> NotCopied:
        trace.hold(rule, reason, detail)
        return NotCopied(reason, detail, rule, cluster)

    values = [labels.get(key) for key in UPSTREAM_LABELS]
    if None in values:
        missing = ", ".join(k for k, v in zip(UPSTREAM_LABELS, values, strict=True) if v is None)
        return no(Reason.LABELS_MISSING, f"missing label {missing}", "labels")
    cut = [k for k, v in zip(UPSTREAM_LABELS, values, strict=True) if len(v or "") >= LABEL_LIMIT]
    if cut:
        detail = f"label {cut[0]} is {LABEL_LIMIT} characters long: it may be cut short"
        return no(Reason.LABEL_AT_LIMIT, detail, "labels")
    upstream_group = labels[UPSTREAM_GROUP_LABEL]
    if not group_understood(upstream_group):
        detail = f"{UPSTREAM_GROUP_LABEL}={upstream_group[:80]!r} is not an API group NSO writes"
        return no(Reason.UPSTREAM_GROUP_NOT_UNDERSTOOD, detail, "labels")
    # Each part of the name an object name: it is put into a URL path (a template's
    # `{cluster}`), where `..` or an empty part could name another project.
    cluster = decode_cluster_label(labels[UPSTREAM_CLUSTER_LABEL])
    if cluster is None or not all(map(is_dns1123_subdomain, cluster.split("/"))):
        value = labels[UPSTREAM_CLUSTER_LABEL][:80]
        return no(
            Reason.CLUSTER_LABEL_MALFORMED,
            f"{UPSTREAM_CLUSTER_LABEL}={value!r} is not cluster-<name>",
            "labels",
        )
    namespace = labels[UPSTREAM_NAMESPACE_LABEL]
    if namespace and not is_dns1123_label(namespace):
        # A label value allows what a namespace name does not (capitals, `.`, `_`): such a
        # namespace cannot exist, so its NotFound would prove nothing.
        detail = f"{UPSTREAM_NAMESPACE_LABEL}={namespace[:80]!r} is not a namespace name"
        return no(Reason.UPSTREAM_NAMESPACE_MALFORMED, detail, "labels", cluster)
    upstream_name, upstream_kind = labels[UPSTREAM_NAME_LABEL], labels[UPSTREAM_KIND_LABEL]
    if not upstream_name or not upstream_kind or not is_dns1123_subdomain(upstream_name):
        detail = (
            f"{UPSTREAM_NAME_LABEL}={upstream_name[:80]!r} / "
            f"{UPSTREAM_KIND_LABEL}={upstream_kind[:80]!r}: no upstream object"
        )
        return no(Reason.NOT_A_COPY, detail, "labels", cluster)
    # One string for each value however many copies name it (most projects' copies name the
    # same kinds, namespaces and names; each project's many copies, its cluster).
    intern = sys.intern
    owner = UpstreamOwner(
        intern(cluster),
        intern(upstream_group),
        intern(upstream_kind),
        intern(namespace),
        intern(upstream_name),
    )
    trace.passed("labels", lambda: f"names upstream owner {owner}")
    synced = GATEWAY_SYNC_LABEL in labels
    anchor_uid = anchor_uid_of(name)
    if (
        anchor_uid is not None
        and group == ""
        and kind == "ConfigMap"
        and not synced
        and upstream_name != name
    ):
        # Anchors own; nothing owns an anchor.
        if owners:
            return no(
                Reason.OWNED, "an anchor with ownerReferences is not NSO's", "anchor", cluster
            )
        trace.passed("anchor", lambda: f"anchor of {owner}: owner uid {anchor_uid}")
        return Copied(owner, anchor_uid)
    if name != upstream_name or group != upstream_group or kind != upstream_kind:
        mine = f"{kind}.{group}" if group else kind
        detail = f"{mine} {name[:80]} does not copy {owner}"
        return no(Reason.NOT_A_COPY, detail, "copy", cluster)
    if group == "" and kind in ("ConfigMap", "Secret") and not synced:
        # NSO copies only ConfigMaps and Secrets labelled gateway-sync.
        detail = f"a {kind} without {GATEWAY_SYNC_LABEL}: not one NSO copies"
        return no(Reason.NOT_A_COPY, detail, "copy", cluster)
    trace.passed("copy", lambda: f"same name, group and kind as {owner}")
    return Copied(owner)
