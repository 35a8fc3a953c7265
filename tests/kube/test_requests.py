"""gcjob.kube.requests (and the paths of gcjob.kube.resources): every request as plain data.

Secrets: metadata only, with no JSON fallback, on list, get and delete (docs/rules.md).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.kube import requests
from gcjob.kube.requests import JSON, JSON_PATCH, METADATA, METADATA_LIST
from gcjob.kube.resources import (
    COMPANION_RESOURCES,
    CONFIGMAPS,
    GATEWAYS,
    HTTPROUTES,
    LEASES,
    NAMESPACES,
    REPLICATED_RESOURCES,
    RESOURCEBINDINGS,
    SECRETS,
    WORKLOADDEPLOYMENTS,
    Resource,
)

NS = "ns-6f1c2a9e-0d4b-4c1e-9a7f-2b3c4d5e6f70"


def _media_types(accept: str) -> list[str]:
    return [part.strip() for part in accept.split(",")]


# -- Accept headers -------------------------------------------------------------------------


def test_configmap_metadata_list_falls_back_to_json() -> None:
    request = requests.list_page(
        CONFIGMAPS,
        namespace=None,
        label_selector=None,
        limit=500,
        continue_token=None,
        metadata_only=True,
    )
    assert _media_types(request.accept) == [METADATA_LIST, JSON]


def test_configmap_metadata_get_falls_back_to_json() -> None:
    request = requests.get(CONFIGMAPS, NS, "app-config", metadata_only=True)
    assert _media_types(request.accept) == [METADATA, JSON]


def test_full_objects_ask_for_json_only() -> None:
    listed = requests.list_page(
        WORKLOADDEPLOYMENTS,
        namespace=NS,
        label_selector=None,
        limit=500,
        continue_token=None,
        metadata_only=False,
    )
    got = requests.get(HTTPROUTES, NS, "web", metadata_only=False)
    assert listed.accept == JSON
    assert got.accept == JSON


@pytest.mark.parametrize("metadata_only", [True, False])
def test_secret_list_is_metadata_only_without_fallback(metadata_only: bool) -> None:
    request = requests.list_page(
        SECRETS,
        namespace=NS,
        label_selector="compute.datumapis.com/referenced-data=true",
        limit=500,
        continue_token=None,
        metadata_only=metadata_only,
    )
    assert request.accept == METADATA_LIST
    assert JSON not in _media_types(request.accept)


@pytest.mark.parametrize("metadata_only", [True, False])
def test_secret_get_is_metadata_only_without_fallback(metadata_only: bool) -> None:
    request = requests.get(SECRETS, NS, "db-creds", metadata_only=metadata_only)
    assert request.accept == METADATA
    assert JSON not in _media_types(request.accept)


def test_secret_delete_is_metadata_only_without_fallback() -> None:
    request = requests.delete(SECRETS, NS, "db-creds", "uid-1", "100")
    assert request.accept == METADATA
    assert JSON not in _media_types(request.accept)


@pytest.mark.parametrize(
    "secrets",
    [
        SECRETS,
        Resource("", "v1", "secrets", "Secret"),  # as discovery names it (the copies sweep)
        Resource("", "v2", "secrets", "Secret"),
        Resource("", "v1", "secrets", "SomethingElse"),  # the core plural is enough
        Resource("", "v1", "others", "Secret"),  # and so is the core kind
    ],
)
def test_a_secret_is_asked_for_as_metadata_however_its_resource_was_named(
    secrets: Resource,
) -> None:
    """Whoever built the resource (gcjob's own, a hub's or an upstream's discovery), every
    request about a core Secret asks for metadata only, with no full object to fall back to."""
    assert secrets.sensitive
    asked = [
        requests.list_page(
            secrets,
            namespace=NS,
            label_selector=None,
            limit=500,
            continue_token=None,
            metadata_only=False,
        ),
        requests.get(secrets, NS, "db-creds", metadata_only=False),
        requests.delete(secrets, NS, "db-creds", "uid-1", "100"),
        requests.patch(secrets, NS, "db-creds", []),
    ]
    for request in asked:
        assert _media_types(request.accept) in ([METADATA_LIST], [METADATA]), request
    assert not Resource("example.com", "v1", "secrets", "Secret").sensitive  # not the core's


def test_configmap_delete_asks_for_metadata_with_fallback() -> None:
    request = requests.delete(CONFIGMAPS, NS, "app-config", "uid-1", "100")
    assert _media_types(request.accept) == [METADATA, JSON]


def test_metadata_media_types_name_partial_object_metadata() -> None:
    assert "as=PartialObjectMetadataList" in METADATA_LIST
    assert "as=PartialObjectMetadata;" in METADATA
    for media in (METADATA, METADATA_LIST):
        assert "g=meta.k8s.io" in media
        assert "v=v1" in media


# -- delete body ----------------------------------------------------------------------------


def test_delete_is_preconditioned_and_orphans_dependents() -> None:
    request = requests.delete(RESOURCEBINDINGS, NS, "app-config-configmap", "uid-42", "4711")
    assert request.method == "DELETE"
    assert request.path == (
        f"/apis/work.karmada.io/v1alpha2/namespaces/{NS}/resourcebindings/app-config-configmap"
    )
    assert request.body == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": "Orphan",
        "preconditions": {"uid": "uid-42", "resourceVersion": "4711"},
    }
    assert request.content_type == JSON
    assert request.query == ()


# Every resource gcjob deletes: companions, bindings, routes, anchors, and each kind the copies
# sweep copies (at the version explain names; the sweep takes the hub's from discovery, which
# `discovered` below stands for: any group, version, plural and kind).
DELETED = (
    *COMPANION_RESOURCES.values(),
    RESOURCEBINDINGS,
    HTTPROUTES,
    *REPLICATED_RESOURCES.values(),
)
_word = st.from_regex(r"[a-z][a-z0-9.-]{0,20}", fullmatch=True)
discovered = st.builds(
    Resource,
    group=st.one_of(st.just(""), _word),
    version=_word,
    plural=_word,
    kind=st.from_regex(r"[A-Z][A-Za-z0-9]{0,20}", fullmatch=True),
    namespaced=st.booleans(),
)


@given(
    resource=st.one_of(st.sampled_from(DELETED), discovered),
    namespace=st.one_of(st.none(), _word),
    name=st.text(min_size=1, max_size=60),
    uid=st.text(min_size=1, max_size=40),
    resource_version=st.text(min_size=1, max_size=20),
)
def test_every_delete_takes_only_its_object_pinned_to_what_was_observed(
    resource: Resource, namespace: str | None, name: str, uid: str, resource_version: str
) -> None:
    """A delete takes exactly what was judged (docs/threat-model.md): whatever gcjob deletes,
    the request orphans every object that names it as its owner, so the hub's garbage
    collector takes nothing with it, and is pinned to the uid and resourceVersion observed."""
    request = requests.delete(resource, namespace, name, uid, resource_version)
    assert request.method == "DELETE"
    assert request.path == resource.path(namespace, name)
    assert request.query == ()  # no propagationPolicy or dryRun in the query to override it
    assert isinstance(request.body, dict)
    assert request.body["propagationPolicy"] == "Orphan"
    assert "orphanDependents" not in request.body  # the old field, which could say otherwise
    assert request.body["preconditions"] == {"uid": uid, "resourceVersion": resource_version}


def test_requests_delete_builds_every_delete_gcjob_sends() -> None:
    """No other module of gcjob builds a DELETE (or a DeleteOptions): every delete is the one
    above, Orphan and pinned. The access layer's delete is the only caller."""
    package = Path(requests.__file__).parent.parent
    builders = []
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            method = node.args[0]
            if isinstance(method, ast.Constant) and method.value == "DELETE":
                builders.append(path.relative_to(package).as_posix())
        if path != Path(requests.__file__):
            assert "DeleteOptions" not in text and "propagationPolicy" not in text, path
            if path.name != "access.py":
                assert "requests.delete(" not in text, path
    assert builders == ["kube/requests.py"]


# -- patch ------------------------------------------------------------------------------------

OPS = [
    {"op": "test", "path": "/metadata/uid", "value": "uid-1"},
    {"op": "test", "path": "/metadata/resourceVersion", "value": "100"},
    {"op": "add", "path": "/metadata/labels/gcjob.datumapis.com~1orphaned", "value": "true"},
]


def test_patch_is_a_json_patch_of_the_ops_given() -> None:
    request = requests.patch(CONFIGMAPS, NS, "app-config", OPS)
    assert request.method == "PATCH"
    assert request.path == f"/api/v1/namespaces/{NS}/configmaps/app-config"
    assert request.content_type == JSON_PATCH == "application/json-patch+json"
    assert request.body == OPS
    assert _media_types(request.accept) == [METADATA, JSON]


def test_secret_patch_is_answered_with_metadata_only_without_fallback() -> None:
    request = requests.patch(SECRETS, NS, "db-creds", OPS)
    assert request.accept == METADATA
    assert JSON not in _media_types(request.accept)


# -- list query -----------------------------------------------------------------------------


def test_list_query_first_page() -> None:
    request = requests.list_page(
        CONFIGMAPS,
        namespace=None,
        label_selector="compute.datumapis.com/referenced-data=true",
        limit=250,
        continue_token=None,
        metadata_only=True,
    )
    assert request.method == "GET"
    assert request.path == "/api/v1/configmaps"
    assert request.query == (
        ("limit", "250"),
        ("labelSelector", "compute.datumapis.com/referenced-data=true"),
    )
    assert request.body is None


def test_list_query_next_page_carries_continue() -> None:
    request = requests.list_page(
        WORKLOADDEPLOYMENTS,
        namespace=NS,
        label_selector=None,
        limit=500,
        continue_token="eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ",
        metadata_only=False,
    )
    query = dict(request.query)
    assert query == {"limit": "500", "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"}
    assert "labelSelector" not in query  # WorkloadDeployments are read unfiltered
    assert (
        request.path == f"/apis/compute.datumapis.com/v1alpha/namespaces/{NS}/workloaddeployments"
    )


def test_list_query_omits_empty_selector_and_token() -> None:
    request = requests.list_page(
        GATEWAYS,
        namespace="default",
        label_selector="",
        limit=1,
        continue_token="",
        metadata_only=False,
    )
    assert request.query == (("limit", "1"),)


def test_a_list_from_the_cache_asks_for_any_version_not_older_than_the_caches() -> None:
    request = requests.list_page(
        CONFIGMAPS,
        namespace=NS,
        label_selector="a=b",
        limit=500,
        continue_token=None,
        metadata_only=True,
        from_cache=True,
    )
    assert dict(request.query) == {
        "limit": "500",  # a 1.25 cache ignores it; a newer one may page by it
        "labelSelector": "a=b",
        "resourceVersion": "0",
        "resourceVersionMatch": "NotOlderThan",
    }


def test_the_next_page_of_a_cache_list_carries_only_its_continue_token() -> None:
    """The API server refuses a resourceVersion (or a match) next to a continue token: the
    token carries the version the list started at."""
    request = requests.list_page(
        CONFIGMAPS,
        namespace=NS,
        label_selector=None,
        limit=500,
        continue_token="tok",
        metadata_only=True,
        from_cache=True,
    )
    assert dict(request.query) == {"limit": "500", "continue": "tok"}


@pytest.mark.parametrize("resource", [CONFIGMAPS, SECRETS, RESOURCEBINDINGS, GATEWAYS])
def test_reads_that_confirm_a_deletion_are_live(resource: Resource) -> None:
    """A GET without resourceVersion is served from etcd, never from a lagging cache: what
    makes `--list-from cache` safe (docs/operating.md: "Why a lagging cache is safe")."""
    request = requests.get(resource, NS, "x", metadata_only=True)
    assert request.query == ()
    delete = requests.delete(resource, NS, "x", "uid-1", "7")
    assert delete.query == ()
    assert delete.body is not None
    assert delete.body["preconditions"] == {"uid": "uid-1", "resourceVersion": "7"}


# -- discovery, create, replace ---------------------------------------------------------------


def test_discovery_paths() -> None:
    assert requests.discovery(RESOURCEBINDINGS).path == "/apis/work.karmada.io/v1alpha2"
    assert requests.discovery(CONFIGMAPS).path == "/api/v1"
    assert requests.discovery(GATEWAYS).method == "GET"


def test_create_and_replace_carry_json_bodies() -> None:
    body = {"metadata": {"name": "gcjob", "resourceVersion": "7"}}
    created = requests.create(LEASES, "default", body)
    replaced = requests.replace(LEASES, "default", "gcjob", body)
    assert (created.method, created.path) == (
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
    )
    assert (replaced.method, replaced.path) == (
        "PUT",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases/gcjob",
    )
    assert created.body == replaced.body == body
    assert created.content_type == replaced.content_type == JSON


# -- paths (gcjob.kube.resources) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "namespace", "name", "path"),
    [
        (CONFIGMAPS, NS, "app-config", f"/api/v1/namespaces/{NS}/configmaps/app-config"),
        (CONFIGMAPS, None, None, "/api/v1/configmaps"),
        (SECRETS, NS, None, f"/api/v1/namespaces/{NS}/secrets"),
        (NAMESPACES, None, "default", "/api/v1/namespaces/default"),
        # a cluster-wide resource ignores a namespace
        (NAMESPACES, "ignored", "default", "/api/v1/namespaces/default"),
        (
            GATEWAYS,
            "default",
            "web-gateway",
            "/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways/web-gateway",
        ),
        (HTTPROUTES, None, None, "/apis/gateway.networking.k8s.io/v1/httproutes"),
        (
            RESOURCEBINDINGS,
            NS,
            "configmap.legacy-settings-configmap",
            f"/apis/work.karmada.io/v1alpha2/namespaces/{NS}/resourcebindings/"
            "configmap.legacy-settings-configmap",
        ),
    ],
)
def test_paths(resource: Resource, namespace: str | None, name: str | None, path: str) -> None:
    assert resource.path(namespace, name) == path


def test_names_and_namespaces_are_percent_encoded() -> None:
    assert (
        CONFIGMAPS.path("a/b", "x/../y z?")
        == "/api/v1/namespaces/a%2Fb/configmaps/x%2F..%2Fy%20z%3F"
    )
    request = requests.get(SECRETS, NS, "../../configmaps/x", metadata_only=True)
    assert request.path == f"/api/v1/namespaces/{NS}/secrets/..%2F..%2Fconfigmaps%2Fx"


def test_api_versions() -> None:
    assert CONFIGMAPS.api_version == "v1"
    assert RESOURCEBINDINGS.api_version == "work.karmada.io/v1alpha2"
    assert WORKLOADDEPLOYMENTS.api_version == "compute.datumapis.com/v1alpha"
    assert SECRETS.sensitive and not CONFIGMAPS.sensitive
    assert not NAMESPACES.namespaced


# What gcjob takes from the kubernetes client: its connection and kubeconfig loading.
CLIENT_PARTS = {
    ("kubernetes", "config"),
    ("kubernetes.client", "ApiClient"),
    ("kubernetes.client", "Configuration"),
    ("kubernetes.client.exceptions", "ApiException"),
    ("kubernetes.config.config_exception", "ConfigException"),
    ("kubernetes.config.kube_config", "ENV_KUBECONFIG_PATH_SEPARATOR"),
}
TYPED_CALL = re.compile(r"[A-Z]\w*Api$|(read|list|patch|delete|create|replace)_namespaced_\w+$")


def test_every_request_is_one_of_gcjobs_own_never_a_typed_client_api() -> None:
    """The kubernetes client's typed APIs (CoreV1Api().read_namespaced_secret: a full GET of
    a Secret, payload and all) are never used: gcjob sends only the requests built here,
    through the client's urllib3 pool (gcjob/kube/transport.py)."""
    for path in Path(requests.__file__).parent.parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("kubernetes") for a in node.names), path
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kubernetes"):
                for alias in node.names:
                    assert (node.module, alias.name) in CLIENT_PARTS, (path, alias.name)
            elif isinstance(node, ast.Attribute):
                assert not TYPED_CALL.fullmatch(node.attr), (path, node.attr)
