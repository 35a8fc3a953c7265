"""gcjob.domain: names and scope, as docs/rules.md states them."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.decide.explanation import SWEEP_OF
from gcjob.domain import (
    JUDGED_KINDS,
    REPLICATED_KINDS,
    REPLICATED_PLURALS,
    TARGET_KINDS,
    binding_name,
    decode_cluster_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_reserved_namespace,
    sorted_names,
)
from gcjob.kube.resources import COMPANION_RESOURCES, JUDGED_RESOURCES, REPLICATED_RESOURCES
from gcjob.model import Sweep


@pytest.mark.parametrize(
    "namespace",
    [
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "karmada-system",
        "karmada-cluster",
        "karmada-es-member1",
        "karmada-es-cell-dfw",
    ],
)
def test_reserved_namespaces_are_never_swept(namespace: str) -> None:
    assert is_reserved_namespace(namespace) is True


@pytest.mark.parametrize(
    "namespace",
    [
        "default",
        "ns-6f1c2a9e-0d4b-4c1e-9a7f-2b3c4d5e6f70",
        "karmada-foo",
        "karmada",
        "kube",
        "my-kube-system",
        "team-karmada-system",
    ],
)
def test_user_namespaces_are_not_reserved(namespace: str) -> None:
    assert is_reserved_namespace(namespace) is False


@pytest.mark.parametrize("value", ["a", "0", "web", "web-dfw", "a1-b2", "x" * 63])
def test_dns1123_label_accepts(value: str) -> None:
    assert is_dns1123_label(value) is True


@pytest.mark.parametrize(
    "value", ["", "-web", "web-", "Web", "WEB", "web_dfw", "a.b", "web/dfw", "x" * 64, " web"]
)
def test_dns1123_label_rejects(value: str) -> None:
    assert is_dns1123_label(value) is False


@pytest.mark.parametrize(
    "value", ["a", "web", "db.v2", "a.b.c", "a-b.c-d", "configmap.app-config", "x" * 253]
)
def test_dns1123_subdomain_accepts(value: str) -> None:
    assert is_dns1123_subdomain(value) is True


@pytest.mark.parametrize(
    "value",
    ["", ".a", "a.", "a..b", "a-.b", "A.b", "a_b", "a/b", "x" * 254, "a b"],
)
def test_dns1123_subdomain_rejects(value: str) -> None:
    assert is_dns1123_subdomain(value) is False


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("app-config", "ConfigMap", "app-config-configmap"),
        ("db-creds", "Secret", "db-creds-secret"),
        ("web", "HTTPRoute", "web-httproute"),
        ("web-dfw", "WorkloadDeployment", "web-dfw-workloaddeployment"),
    ],
)
def test_binding_name_examples_from_spec(name: str, kind: str, expected: str) -> None:
    assert binding_name(name, kind) == expected


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("configmap.app-config", "ConfigMap", "configmap.app-config-configmap"),
        ("secret.db-creds", "Secret", "secret.db-creds-secret"),
    ],
)
def test_binding_name_never_strips_legacy_prefix(name: str, kind: str, expected: str) -> None:
    assert binding_name(name, kind) == expected


def test_binding_name_lowercases_whole_name() -> None:
    assert binding_name("App-Config", "ConfigMap") == "app-config-configmap"


def test_binding_name_replaces_colons_with_dots() -> None:
    assert binding_name("system:app", "ConfigMap") == "system.app-configmap"


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("cluster-single", "single"),
        ("cluster-_proj", "proj"),
        ("cluster-org_proj", "org/proj"),
        ("cluster-_org_proj", "org/proj"),
    ],
)
def test_decode_cluster_label(label: str, expected: str) -> None:
    assert decode_cluster_label(label) == expected


@pytest.mark.parametrize("label", ["single", "", "proj-cluster-a", "clusters-a", "org_proj"])
def test_decode_cluster_label_rejects_values_without_prefix(label: str) -> None:
    assert decode_cluster_label(label) is None


def _schema_item_kinds() -> list[str]:
    text = resources.files("gcjob.report").joinpath("schema.json").read_text("utf-8")
    kinds: list[str] = json.loads(text)["$defs"]["item"]["properties"]["kind"]["enum"]
    return kinds


def test_the_report_schema_names_the_judged_kinds_in_their_order() -> None:
    """The schema is JSON, so it cannot import the table: it is held to it here."""
    assert _schema_item_kinds() == [k.kind for k in JUDGED_KINDS]


def test_every_list_of_kinds_is_the_one_table() -> None:
    """A kind added to the table is swept, named by explain and restore, and sent to its
    sweep: no second list can leave it out."""
    kinds = [k.kind for k in JUDGED_KINDS]
    assert len(set(kinds)) == len(kinds)
    assert list(SWEEP_OF) == kinds
    assert {k.kind: SWEEP_OF[k.kind].value for k in JUDGED_KINDS} == {
        k.kind: k.sweep for k in JUDGED_KINDS
    }
    assert {s.value for s in Sweep} == {k.sweep for k in JUDGED_KINDS}
    assert list(JUDGED_RESOURCES) == kinds
    for k in JUDGED_KINDS:
        resource = JUDGED_RESOURCES[k.kind]
        assert (resource.group, resource.plural, resource.version) == (k.group, k.plural, k.version)
        assert TARGET_KINDS[k.kind.lower()] == TARGET_KINDS[k.plural] == k.kind
        assert all(TARGET_KINDS[short] == k.kind for short in k.short_names)
    replicated = [(k.group, k.kind) for k in JUDGED_KINDS if k.replicated]
    assert list(REPLICATED_KINDS) == replicated
    assert set(REPLICATED_PLURALS) == set(replicated)
    assert set(REPLICATED_RESOURCES) | set(COMPANION_RESOURCES) == {kind for _, kind in replicated}
    assert set(TARGET_KINDS.values()) == set(kinds)


@given(st.lists(st.sampled_from(["p-a", "p-b", "p-c", "ctx", ""]), max_size=12))
def test_sorted_names_are_each_name_once_in_order(names: list[str]) -> None:
    assert sorted_names(names) == tuple(sorted(set(names)))
