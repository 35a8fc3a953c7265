"""Properties of the three decisions over random, often malformed, inputs.

Each property checks a `delete` verdict against an oracle written from docs/rules.md,
independently of gcjob's own helpers; and that no input makes a decision raise.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from gcjob.model import (
    Binding,
    BoundResource,
    ClusterStatus,
    Companion,
    ParentRef,
    Protect,
    Route,
    RouteTarget,
    UpstreamView,
)
from gcjob.sweeps.bindings.judge import Existence, binding_verdict
from gcjob.sweeps.companions.judge import companion_verdict
from gcjob.sweeps.routes.judge import route_target, route_verdict
from testbed.model import HUB_NS, MIN_AGE, NOW, OLD, ref

PROPERTY = settings(max_examples=200, deadline=None)

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

GW_GROUP = "gateway.networking.k8s.io"
CLUSTER_LABEL = "meta.datumapis.com/upstream-cluster-name"
NAMESPACE_LABEL = "meta.datumapis.com/upstream-namespace"
NAME_LABEL = "meta.datumapis.com/upstream-name"
GROUP_LABEL = "meta.datumapis.com/upstream-group"
KIND_LABEL = "meta.datumapis.com/upstream-kind"
SOLVER_LABEL = "meta.datumapis.com/http01-solver"

# --- shared strategies -------------------------------------------------------------------

# Each hold-back is drawn a quarter of the time or less, so deletions are reached often.
created_st = st.one_of(
    st.just(OLD),
    st.none(),
    st.timedeltas(min_value=timedelta(minutes=-10), max_value=timedelta(hours=2)).map(
        lambda age: NOW - age
    ),
)
uid_st = st.sampled_from(["uid-1", "uid-1", "uid-1", ""])
rv_st = st.sampled_from(["42", "42", "42", ""])
flag_st = st.sampled_from([False, False, False, True])
# gcjob's protect key wherever it may be set, with any value: only exactly "false" lets go.
PROTECT_KEY = "gcjob.datumapis.com/protect"
protect_value_st = st.one_of(
    st.sampled_from(["true", "false", "True", "yes", "1", " true", "false ", "", "FALSE"]),
    st.text(max_size=8),
)
protect_st = st.one_of(
    st.just(()),
    st.lists(
        st.tuples(
            st.sampled_from(
                [f"annotation {PROTECT_KEY}", f"label {PROTECT_KEY}", "annotations (not a map)"]
            ),
            protect_value_st,
        ),
        max_size=2,
    ).map(tuple),
)


def is_protected(protect: Protect) -> bool:
    return any(value != "false" for _, value in protect)


def old_enough(created: datetime | None) -> bool:
    return created is not None and NOW - created >= MIN_AGE


# --- companions --------------------------------------------------------------------------

WD_NAMES = ["web", "web-dfw", "api", "db.v2", "worker"]
valid_key_st = st.builds(
    "{}/{}".format, st.sampled_from(["default", "proj-b", "ns-1", "web"]), st.sampled_from(WD_NAMES)
)
junk_key_st = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "",
            "/",
            "web",
            "/web",
            "default/",
            "a/b/c",
            "Default/web",
            "default/Web",
            "default/web_dfw",
            "x" * 64 + "/web",
            "default/" + "x" * 254,
            " default/web",
        ]
    ),
)
json_value_st = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
referrers_st = st.one_of(
    st.none(),
    st.text(max_size=30),
    st.lists(valid_key_st, min_size=1, max_size=4).map(lambda keys: json.dumps(sorted(keys))),
    st.lists(st.one_of(valid_key_st, junk_key_st), max_size=4).map(json.dumps),
    json_value_st.map(json.dumps),
)


def spec_keys(raw: str | None) -> list[str] | None:
    """The referrer keys, when the annotation is a non-empty JSON array of valid keys."""
    if raw is None or not raw.strip():
        return None
    try:
        keys: Any = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
        return None
    for key in keys:
        parts = key.split("/")
        if len(parts) != 2:
            return None
        namespace, name = parts
        if not (len(namespace) <= 63 and _LABEL.fullmatch(namespace)):
            return None
        if not (len(name) <= 253 and _SUBDOMAIN.fullmatch(name)):
            return None
    return keys


@PROPERTY
@given(
    raw=referrers_st,
    live=st.frozensets(st.sampled_from([*WD_NAMES, "other", "default"])),
    kind=st.sampled_from(["ConfigMap", "Secret"]),
    created=created_st,
    terminating=flag_st,
    protect=protect_st,
    uid=uid_st,
    rv=rv_st,
)
def test_companion_deleted_only_when_spec_says_orphan(
    raw: str | None,
    live: frozenset[str],
    kind: str,
    created: datetime | None,
    terminating: bool,
    protect: Protect,
    uid: str,
    rv: str,
) -> None:
    c = Companion(
        ref(kind, uid=uid, resource_version=rv, created=created, terminating=terminating),
        raw,
        protect=protect,
    )
    verdict = companion_verdict(c, live, NOW, MIN_AGE)
    event(f"delete={verdict.delete}")
    keys = spec_keys(raw)
    orphan = keys is not None and not any(k.split("/")[1] in live for k in keys)
    deletable = old_enough(created) and not terminating and not is_protected(protect) and uid and rv
    if verdict.delete:
        assert keys, raw
        assert not any(k.split("/")[1] in live for k in keys)
        assert old_enough(created)
        assert not terminating
        assert not is_protected(protect)
        assert uid and rv
        assert verdict.reason == "orphaned"
    else:
        assert verdict.reason != "orphaned"
        # An orphan that nothing holds back is deleted.
        assert not (orphan and deletable), (raw, live, verdict)


# --- routes ------------------------------------------------------------------------------

_NSO_LABELS = {
    CLUSTER_LABEL: "cluster-org_proj",
    GROUP_LABEL: GW_GROUP,
    KIND_LABEL: "HTTPRoute",
    NAME_LABEL: "web",
    NAMESPACE_LABEL: "default",
}
random_labels_st = st.fixed_dictionaries(
    {},
    optional={
        CLUSTER_LABEL: st.sampled_from(
            ["cluster-single", "cluster-org_proj", "cluster-_proj", "single", "cluster-", ""]
        ),
        GROUP_LABEL: st.sampled_from([GW_GROUP, "example.com", ""]),
        KIND_LABEL: st.sampled_from(["HTTPRoute", "GRPCRoute"]),
        NAME_LABEL: st.sampled_from(["web", ""]),
        NAMESPACE_LABEL: st.sampled_from(["default", "team-a", ""]),
        SOLVER_LABEL: st.sampled_from(["true", "false"]),
    },
)
# Half of the routes carry NSO's labels, so that deletions are reached at all.
labels_st = st.one_of(st.just(_NSO_LABELS), random_labels_st)
GATEWAYS = ["gw-a", "gw-b", "gw-c"]
random_parent_st = st.builds(
    ParentRef,
    name=st.sampled_from(GATEWAYS),
    group=st.sampled_from([None, GW_GROUP, "", "example.com"]),
    kind=st.sampled_from([None, "Gateway", "Service", "gateway"]),
    namespace=st.sampled_from([None, HUB_NS, "default", "ns-other"]),
)
# NSO writes a bare name: most parents are that.
nso_parent_st = st.builds(ParentRef, st.sampled_from(GATEWAYS), st.none(), st.none(), st.none())
parent_st = st.one_of(nso_parent_st, nso_parent_st, random_parent_st)
random_view_st = st.builds(
    UpstreamView,
    cluster_status=st.sampled_from(list(ClusterStatus)),
    cluster_detail=st.just("detail"),
    gateways=st.one_of(st.none(), st.frozensets(st.sampled_from([*GATEWAYS, "web"]))),
    lookup_error=st.just(""),
    namespace_exists=st.sampled_from([None, True, False]),
)
ok_view_st = st.builds(
    UpstreamView,
    cluster_status=st.just(ClusterStatus.OK),
    gateways=st.frozensets(st.sampled_from([*GATEWAYS, "web"])),
    namespace_exists=st.sampled_from([None, True, False]),
)
view_st = st.one_of(ok_view_st, random_view_st)


def spec_is_gateway(p: ParentRef) -> bool:
    group = GW_GROUP if p.group is None else p.group
    kind = "Gateway" if p.kind is None else p.kind
    return group == GW_GROUP and kind == "Gateway"


@PROPERTY
@given(
    labels=labels_st,
    parents=st.lists(parent_st, max_size=4).map(tuple),
    view=view_st,
    created=created_st,
    terminating=flag_st,
    protect=protect_st,
    uid=uid_st,
    rv=rv_st,
)
def test_route_deleted_only_when_every_gateway_proven_gone(
    labels: dict[str, str],
    parents: tuple[ParentRef, ...],
    view: UpstreamView,
    created: datetime | None,
    terminating: bool,
    protect: Protect,
    uid: str,
    rv: str,
) -> None:
    r = Route(
        ref(
            "HTTPRoute",
            "web",
            uid=uid,
            resource_version=rv,
            created=created,
            terminating=terminating,
        ),
        labels=labels,
        parent_refs=parents,
        protect=protect,
    )
    target = route_target(r)
    if isinstance(target, RouteTarget):
        verdict = route_verdict(r, target, view, NOW, MIN_AGE)
    else:
        verdict = target
    cluster = labels.get(CLUSTER_LABEL, "")
    spec_orphan = bool(
        all(labels.get(k) for k in (CLUSTER_LABEL, NAMESPACE_LABEL, NAME_LABEL))
        # NSO's copy of an upstream HTTPRoute of its own name (decide/upstream_labels.py)
        and labels.get(GROUP_LABEL) == GW_GROUP
        and labels.get(KIND_LABEL) == "HTTPRoute"
        and labels[NAME_LABEL] == "web"
        and labels.get(SOLVER_LABEL) != "true"
        and cluster.startswith("cluster-")
        and cluster.removeprefix("cluster-").replace("_", "/").removeprefix("/")
        and parents
        and all(spec_is_gateway(p) and p.namespace in (None, HUB_NS) for p in parents)
        and view.cluster_status is ClusterStatus.OK
        and view.gateways is not None
        and not any(p.name in view.gateways for p in parents)
        and old_enough(created)
        and not terminating
        and not is_protected(protect)
        and uid
        and rv
    )
    event(f"delete={verdict.delete}")
    assert verdict.delete is spec_orphan, (labels, parents, view, verdict)
    if verdict.delete:
        assert isinstance(target, RouteTarget)
        assert target.namespace == labels[NAMESPACE_LABEL]
        assert set(target.gateways) == {p.name for p in parents}
        gone = "upstream-namespace-gone" if view.namespace_exists is False else None
        assert verdict.reason == (gone or "upstream-gateways-gone")
    else:
        assert verdict.reason not in {"upstream-gateways-gone", "upstream-namespace-gone"}


# --- bindings ----------------------------------------------------------------------------

POLICIES = [None, "city-dfw", "city-", "global", "", "xcity-a", "City-dfw"]


SUFFIXES = ["-configmap", "-secret", "-httproute", "-workloaddeployment", "", "-configmaps"]


@PROPERTY
@given(
    base=st.sampled_from(["app-config", "x-secret", "configmap.app", "web", ""]),
    suffix=st.one_of(st.sampled_from(["-configmap", "-secret"]), st.sampled_from(SUFFIXES)),
    annotation=st.one_of(st.just("city-dfw"), st.sampled_from(POLICIES)),
    label=st.sampled_from(POLICIES),
    cluster_policy=flag_st,
    presence=st.sampled_from(
        [Existence.ABSENT, Existence.ABSENT, Existence.EXISTS, Existence.UNKNOWN]
    ),
    created=created_st,
    terminating=flag_st,
    protect=protect_st,
    uid=uid_st,
    rv=rv_st,
    resource_kind=st.sampled_from(
        ["ConfigMap", "ConfigMap", "Secret", "Secret", "Deployment", None]
    ),
    resource_name=st.sampled_from(["app-config", "x-secret", "configmap.app", "web", "other", ""]),
    resource_namespace=st.sampled_from([HUB_NS, HUB_NS, "", "ns-other"]),
)
def test_binding_deleted_only_when_city_object_proven_absent(
    base: str,
    suffix: str,
    annotation: str | None,
    label: str | None,
    cluster_policy: bool,
    presence: Existence,
    created: datetime | None,
    terminating: bool,
    protect: Protect,
    uid: str,
    rv: str,
    resource_kind: str | None,
    resource_name: str,
    resource_namespace: str,
) -> None:
    name = base + suffix
    resource = (
        None
        if resource_kind is None
        else BoundResource("v1", resource_kind, resource_namespace, resource_name, "uid-x")
    )
    b = Binding(
        ref(
            "ResourceBinding",
            name,
            uid=uid,
            resource_version=rv,
            created=created,
            terminating=terminating,
        ),
        policy_annotation=annotation,
        policy_label=label,
        cluster_policy=cluster_policy,
        resource=resource,
        protect=protect,
    )
    verdict = binding_verdict(b, presence, NOW, MIN_AGE)
    event(f"delete={verdict.delete}")
    policy = annotation or label  # an empty annotation names no policy
    spec_orphan = bool(
        presence is Existence.ABSENT
        and policy is not None
        and policy.startswith("city-")
        and not cluster_policy
        # The spec's rule is on the whole name: "x-secret" + "" still ends with -secret.
        and any(name.endswith(sfx) and len(name) > len(sfx) for sfx in ("-configmap", "-secret"))
        # spec.resource names that very object: kind, name minus suffix, namespace where set
        and resource is not None
        and f"{resource.name}-{resource.kind.lower()}" == name
        and resource.kind in ("ConfigMap", "Secret")
        and resource.namespace in ("", HUB_NS)
        and old_enough(created)
        and not terminating
        and not is_protected(protect)
        and uid
        and rv
    )
    assert verdict.delete is spec_orphan, (name, annotation, label, presence, verdict)
    if verdict.delete:
        assert verdict.reason == "orphaned"
        assert presence is Existence.ABSENT
        assert policy is not None and policy.startswith("city-")
        assert not cluster_policy
        assert name.endswith(("-configmap", "-secret"))
        assert not name.endswith(("-httproute", "-workloaddeployment"))
        assert old_enough(created)
        assert not terminating
        assert not is_protected(protect)
        assert uid and rv
    else:
        assert verdict.reason != "orphaned"
