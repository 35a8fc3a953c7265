"""gcjob.domain: names and scope, as docs/rules.md states them."""

from __future__ import annotations

import pytest

from gcjob.domain import (
    binding_name,
    decode_cluster_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_reserved_namespace,
)


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
