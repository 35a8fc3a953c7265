"""Sweep 2 decisions (gcjob.sweeps.bindings.judge), from docs/rules.md "Sweep 2"."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gcjob.model import UNREADABLE_OWNER, Binding, BoundResource, OwnerRef
from gcjob.sweeps.bindings.judge import Existence, binding_verdict, bound_target
from testbed import model as builders
from testbed.model import HUB_NS, MIN_AGE, NOW, YOUNG, bound


def binding(name: str = "app-config-configmap", **kwargs: Any) -> Binding:
    """A binding as Karmada writes it: its spec.resource names what its name says."""
    if "resource" not in kwargs:
        kind = "Secret" if name.endswith("-secret") else "ConfigMap"
        kwargs["resource"] = bound(kind, name.rsplit("-", 1)[0], uid="uid-object")
    return builders.binding(name, **kwargs)


# --- bound_target: names -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("app-config-configmap", ("ConfigMap", "app-config")),
        ("db-creds-secret", ("Secret", "db-creds")),
        ("x-secret-configmap", ("ConfigMap", "x-secret")),
        ("x-configmap-secret", ("Secret", "x-configmap")),
        ("configmap.app-config-configmap", ("ConfigMap", "configmap.app-config")),
        ("secret.db-creds-secret", ("Secret", "secret.db-creds")),
        ("a-configmap", ("ConfigMap", "a")),
    ],
)
def test_bound_target_from_name_suffix(name: str, expected: tuple[str, str]) -> None:
    assert bound_target(binding(name)) == expected


@pytest.mark.parametrize(
    "name",
    [
        "web-httproute",
        "web-dfw-workloaddeployment",
        "web-configmap-workloaddeployment",
        "web-secret-httproute",
        "app-configmaps",
        "app-secrets",
        "app-config",
        "appconfigmap",
    ],
)
def test_other_kinds_out_of_scope(name: str) -> None:
    assert bound_target(binding(name)) is None


# --- bound_target: policy ----------------------------------------------------------------


def test_policy_from_annotation() -> None:
    b = binding(policy_annotation="city-dfw", policy_label=None)
    assert bound_target(b) == ("ConfigMap", "app-config")


def test_policy_label_fallback_when_annotation_absent() -> None:
    b = binding(policy_annotation=None, policy_label="city-dfw")
    assert bound_target(b) == ("ConfigMap", "app-config")


def test_annotation_wins_over_city_label() -> None:
    # Annotation present: the label is not consulted.
    b = binding(policy_annotation="global", policy_label="city-dfw")
    assert bound_target(b) is None


def test_city_annotation_wins_over_other_label() -> None:
    b = binding(policy_annotation="city-dfw", policy_label="global")
    assert bound_target(b) == ("ConfigMap", "app-config")


def test_an_empty_annotation_names_no_policy_so_the_label_is_read() -> None:
    b = binding(policy_annotation="", policy_label="city-dfw")
    assert bound_target(b) == ("ConfigMap", "app-config")
    assert bound_target(binding(policy_annotation="", policy_label=None)) is None


def test_no_policy_at_all_out_of_scope() -> None:
    assert bound_target(binding(policy_annotation=None, policy_label=None)) is None


@pytest.mark.parametrize("policy", ["global", "default", "citydfw", "xcity-dfw", "dfw-city-"])
def test_non_city_policy_out_of_scope(policy: str) -> None:
    assert bound_target(binding(policy_annotation=policy)) is None


@pytest.mark.parametrize("policy", ["global", "default", "xcity-dfw"])
def test_non_city_label_policy_out_of_scope(policy: str) -> None:
    assert bound_target(binding(policy_annotation=None, policy_label=policy)) is None


def test_cluster_propagation_policy_out_of_scope() -> None:
    b = binding(policy_annotation="city-dfw", cluster_policy=True)
    assert bound_target(b) is None


# --- binding_verdict ----------------------------------------------------------------------


def test_absent_object_binding_deleted() -> None:
    b = binding("app-config-configmap")
    verdict = binding_verdict(b, Existence.ABSENT, NOW, MIN_AGE)
    assert verdict.delete is True
    assert verdict.reason == "orphaned"
    assert verdict.ref == b.ref


def test_absent_secret_binding_deleted() -> None:
    verdict = binding_verdict(binding("db-creds-secret"), Existence.ABSENT, NOW, MIN_AGE)
    assert verdict.delete is True
    assert verdict.reason == "orphaned"


def test_label_only_policy_binding_deleted_when_absent() -> None:
    b = binding(policy_annotation=None, policy_label="city-dfw")
    verdict = binding_verdict(b, Existence.ABSENT, NOW, MIN_AGE)
    assert verdict.delete is True
    assert verdict.reason == "orphaned"


def test_existing_object_keeps_binding() -> None:
    verdict = binding_verdict(binding(), Existence.EXISTS, NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "object-exists"
    assert verdict.healthy is True


def test_unknown_presence_keeps_binding() -> None:
    verdict = binding_verdict(binding(), Existence.UNKNOWN, NOW, MIN_AGE, "403 Forbidden")
    assert verdict.delete is False
    assert verdict.reason == "lookup-failed"
    assert "403 Forbidden" in verdict.detail


def test_young_binding_kept() -> None:
    verdict = binding_verdict(binding(created=YOUNG), Existence.ABSENT, NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "too-young"


def test_terminating_binding_left_alone_and_reported_as_such() -> None:
    verdict = binding_verdict(binding(terminating=True), Existence.ABSENT, NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "terminating"


@pytest.mark.parametrize("presence", list(Existence))
def test_terminating_binding_never_deleted_again(presence: Existence) -> None:
    verdict = binding_verdict(binding(terminating=True), presence, NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason in {"terminating", "object-exists", "lookup-failed"}


def test_protected_binding_kept() -> None:
    verdict = binding_verdict(binding(protected=True), Existence.ABSENT, NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "protected"


# Karmada's binding is owned by its resource template: the controller ownerReference whose
# apiVersion, kind, name and uid are its spec.resource's (issue 46 item 2).
OWN_TEMPLATE = OwnerRef("v1", "ConfigMap", "app-config", controller=True, uid="uid-object")


def test_a_binding_owned_by_its_own_resource_template_is_judged_on() -> None:
    verdict = binding_verdict(binding(owners=(OWN_TEMPLATE,)), Existence.ABSENT, NOW, MIN_AGE)
    assert (verdict.delete, verdict.reason) == (True, "orphaned")


@pytest.mark.parametrize(
    "owner",
    [
        # a live ConfigMap other than its spec.resource, as its controller
        pytest.param(OwnerRef("v1", "ConfigMap", "other", True, uid="uid-other"), id="other-cm"),
        # its template's kind and name, another uid: another object of that name
        pytest.param(OwnerRef("v1", "ConfigMap", "app-config", True, uid="uid-2"), id="other-uid"),
        pytest.param(OwnerRef("v1", "ConfigMap", "app-config", True), id="no-uid"),
        pytest.param(OwnerRef("v1", "Secret", "app-config", True, uid="uid-object"), id="kind"),
        # its template, but not as its controller: not as Karmada writes it
        pytest.param(replace(OWN_TEMPLATE, controller=False), id="not-controller"),
        # any other owner, controller or not, any kind
        pytest.param(OwnerRef("apps/v1", "Deployment", "web", False, uid="d"), id="deployment"),
        pytest.param(UNREADABLE_OWNER, id="unreadable"),
    ],
)
def test_a_binding_with_any_other_owner_is_its_owners(owner: OwnerRef) -> None:
    for owners in ((owner,), (OWN_TEMPLATE, owner)):
        verdict = binding_verdict(binding(owners=owners), Existence.ABSENT, NOW, MIN_AGE)
        assert (verdict.delete, verdict.reason) == (False, "owned"), owners


def test_unpinnable_binding_kept() -> None:
    verdict = binding_verdict(binding(uid=""), Existence.ABSENT, NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "unpinnable"


@pytest.mark.parametrize(
    "b",
    [
        pytest.param(binding("web-httproute"), id="httproute"),
        pytest.param(binding("web-dfw-workloaddeployment"), id="workloaddeployment"),
        pytest.param(binding(policy_annotation="global"), id="non-city"),
        pytest.param(binding(cluster_policy=True), id="cluster-policy"),
        pytest.param(
            binding(policy_annotation="global", policy_label="city-dfw"), id="annotation-wins"
        ),
    ],
)
@pytest.mark.parametrize("presence", list(Existence))
def test_out_of_scope_binding_never_deleted(b: Binding, presence: Existence) -> None:
    verdict = binding_verdict(b, presence, NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "out-of-scope"


# --- spec.resource must name that very object (issue 12 F) ---------------------------------


@pytest.mark.parametrize(
    ("resource", "why"),
    [
        (None, "binding has no spec.resource"),
        (bound("Deployment", "important"), "binding binds Deployment important"),
        (bound("Secret", "app-config"), "binding binds Secret app-config"),
        (bound("ConfigMap", "other"), "binding binds ConfigMap other"),
        (bound("ConfigMap", "app-config", namespace="ns-other"), "namespace ns-other"),
        # Karmada names a binding after the kind alone: a custom `ConfigMap` in another group
        (BoundResource("x.example.com/v1", "ConfigMap", HUB_NS, "app-config", "u"), "apiVersion"),
        (BoundResource("", "ConfigMap", HUB_NS, "app-config", "u"), "apiVersion ''"),
    ],
)
@pytest.mark.parametrize("presence", list(Existence))
def test_a_binding_whose_resource_names_another_object_is_never_deleted(
    resource: BoundResource | None, why: str, presence: Existence
) -> None:
    v = binding_verdict(binding(resource=resource), presence, NOW, MIN_AGE)
    assert not v.delete
    if presence is Existence.ABSENT:
        assert v.reason == "resource-mismatch"
        assert why in v.detail


def test_foo_secret_binding_a_deployment_is_kept() -> None:
    b = binding("foo-secret", resource=bound("Deployment", "important"))
    v = binding_verdict(b, Existence.ABSENT, NOW, MIN_AGE)
    assert (v.delete, v.reason) == (False, "resource-mismatch")


def test_a_resource_without_namespace_or_uid_still_matches_by_kind_and_name() -> None:
    resource = BoundResource("v1", "Secret", "", "db-creds", "")
    v = binding_verdict(
        binding("db-creds-secret", resource=resource), Existence.ABSENT, NOW, MIN_AGE
    )
    assert (v.delete, v.reason) == (True, "orphaned")
