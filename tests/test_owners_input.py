"""ownerReferences and Secret marks as hostile input (issue 20 item 19): whatever shape they
take, a companion with any owner, a Secret marked as a service account token or Helm release,
and a route a controller other than an anchor owns are never deleted."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.decide.common import is_anchor
from gcjob.kube import reduce
from gcjob.kube.resources import CONFIGMAPS, SECRETS
from gcjob.kube.snapshot import _fields_match
from gcjob.model import ClusterStatus, OwnerRef, RouteTarget, UpstreamView
from gcjob.sweeps.companions.judge import companion_verdict
from gcjob.sweeps.routes.judge import route_verdict
from testbed.model import MIN_AGE
from testbed.objects import configmap, httproute

NOW = datetime(2026, 12, 1, tzinfo=UTC)
ANCHOR = f"anchor-{uuid.UUID(int=7)}"

ODD = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
OWNER_REF = st.one_of(
    st.fixed_dictionaries(
        {
            "apiVersion": st.sampled_from(["v1", "apps/v1", "x/v1"]),
            "kind": st.sampled_from(["ConfigMap", "Deployment", "Secret"]),
            "name": st.sampled_from([ANCHOR, "web", "anchor-web", ANCHOR.upper(), ""]),
            "uid": st.just("u"),
        },
        optional={"controller": st.one_of(st.booleans(), ODD), "blockOwnerDeletion": ODD},
    ),
    ODD,
)
OWNER_REFS = st.one_of(st.none(), st.lists(OWNER_REF, max_size=3), ODD)


def _with_owners(obj: dict[str, Any], refs: Any, present: bool) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    if present:
        obj["metadata"]["ownerReferences"] = refs
    return obj


@given(OWNER_REFS, st.booleans())
def test_a_companion_with_any_owner_is_never_deleted(refs: Any, present: bool) -> None:
    obj = _with_owners(configmap(), refs, present)
    verdict = companion_verdict(reduce.companion(CONFIGMAPS)(obj), frozenset(), NOW, MIN_AGE)
    if verdict.delete:
        assert not present or refs is None or refs == []
    elif present and refs not in (None, []):
        assert verdict.reason == "owned"


def _foreign_controller(ref: Any) -> bool:
    """A controller ownerReference to anything but an anchor ConfigMap, or one not readable."""
    if not isinstance(ref, dict):
        return True
    controller = ref.get("controller")
    if controller is None or controller is False:
        return False
    anchor = ref["apiVersion"] == "v1" and ref["kind"] == "ConfigMap" and ref["name"] == ANCHOR
    return not anchor


@given(OWNER_REFS, st.booleans())
def test_a_route_a_controller_owns_is_never_deleted_unless_it_is_an_anchor(
    refs: Any, present: bool
) -> None:
    obj = _with_owners(httproute(), refs, present)
    target = RouteTarget("single", "default", ("web-gateway",))
    view = UpstreamView(ClusterStatus.OK, gateways=frozenset())
    verdict = route_verdict(reduce.route(obj), target, view, NOW, MIN_AGE)
    foreign = present and (
        (refs is not None and not isinstance(refs, list))
        or (isinstance(refs, list) and any(_foreign_controller(r) for r in refs))
    )
    assert verdict.delete is not foreign
    if foreign:
        assert verdict.reason == "owned"


@pytest.mark.parametrize(
    ("name", "kind", "api_version", "anchor"),
    [
        (ANCHOR, "ConfigMap", "v1", True),
        ("anchor-web", "ConfigMap", "v1", False),  # a tenant's ConfigMap, no uuid
        (ANCHOR.upper(), "ConfigMap", "v1", False),  # not canonical
        (ANCHOR, "Secret", "v1", False),
        (ANCHOR, "ConfigMap", "x/v1", False),
    ],
)
def test_what_an_anchor_is(name: str, kind: str, api_version: str, anchor: bool) -> None:
    assert is_anchor(OwnerRef(api_version, kind, name, controller=True)) is anchor


@pytest.mark.parametrize(
    ("meta", "kept"),
    [
        ({"annotations": {"kubernetes.io/service-account.name": "default"}}, True),
        ({"labels": {"owner": "helm"}}, True),
        ({"name": "sh.helm.release.v1.web.v3"}, True),
        ({"labels": {"owner": "someone"}}, False),
        ({}, False),
    ],
)
def test_the_metadata_marks_of_a_secret_gcjob_never_deletes(
    meta: dict[str, Any], kept: bool
) -> None:
    obj = configmap()
    obj["kind"] = "Secret"
    for key, value in meta.items():
        if isinstance(value, dict):
            obj["metadata"].setdefault(key, {}).update(value)
        else:
            obj["metadata"][key] = value
    secret = reduce.companion(SECRETS)(obj)
    verdict = companion_verdict(secret, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is not kept
    if kept:
        assert verdict.reason == "owned-secret-type"
    # a ConfigMap with the same metadata is no Secret: the marks do not apply
    assert reduce.companion(CONFIGMAPS)(obj).secret_marks == ()


@pytest.mark.parametrize(
    ("secret_type", "selector", "listed"),
    [
        ("Opaque", "metadata.name=s,type!=helm.sh/release.v1", True),
        ("helm.sh/release.v1", "metadata.name=s,type!=helm.sh/release.v1", False),
        ("Opaque", "metadata.name=other,type!=helm.sh/release.v1", False),
        ("kubernetes.io/tls", "type=kubernetes.io/tls", True),
    ],
)
def test_a_snapshot_filters_secrets_by_type_as_a_server_does(
    secret_type: str, selector: str, listed: bool
) -> None:
    obj = {"kind": "Secret", "type": secret_type, "metadata": {"name": "s", "namespace": "n"}}
    assert _fields_match(obj, selector) is listed
