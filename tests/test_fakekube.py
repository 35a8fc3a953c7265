"""The fake API server, exercised through the official kubernetes client and raw urllib3."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config

from tests.fakekube import FakeKube, Fault, crd_paths, crds_dir

TOKEN = "test-token"
GW = "gateway.networking.k8s.io"
KARMADA = "work.karmada.io"
META_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
META_ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


def test_crds_dir_is_the_shared_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GCJOB_CRDS_DIR", raising=False)
    assert crds_dir() == Path(__file__).resolve().parents[2] / "shared" / "crds"
    assert {p.name for p in crd_paths()} >= {
        "karmada-work.karmada.io_resourcebindings.yaml",
        "gwapi-v1.6.1-gateway.networking.k8s.io_httproutes.yaml",
    }
    monkeypatch.setenv("GCJOB_CRDS_DIR", str(tmp_path))
    assert crds_dir() == tmp_path and crd_paths() == []


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube(crd_paths=crd_paths(), token=TOKEN) as k:
        yield k
        assert k.errors == []  # the fake itself never crashed


def make_client(kube: FakeKube, tmp_path: Path, context: str = "hub") -> client.ApiClient:
    path = kube.write_kubeconfig(tmp_path / f"kc-{context.replace('/', '_')}", context=context)
    cfg = client.Configuration()
    cfg.retries = False  # urllib3 would otherwise silently retry dropped/timed-out requests
    return config.new_client_from_config(
        config_file=path, context=context, client_configuration=cfg
    )


@pytest.fixture
def api(kube: FakeKube, tmp_path: Path) -> Iterator[client.ApiClient]:
    c = make_client(kube, tmp_path)
    yield c
    c.close()


def raw(
    api: client.ApiClient,
    method: str,
    path: str,
    *,
    query: list[tuple[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
    body: Any = None,
    timeout: Any = None,
) -> tuple[int, Any, Any]:
    """(status, headers, parsed JSON or text) of a request made through ApiClient.call_api."""
    m, url, hdrs, b, _ = api.param_serialize(
        method=method,
        resource_path=path,
        query_params=query or [],
        header_params=dict(headers or {}),
        body=body,
        auth_settings=["BearerToken"],
    )
    resp = api.call_api(m, url, header_params=hdrs, body=b, _request_timeout=timeout)
    data = resp.read()
    ctype = resp.headers.get("Content-Type", "")
    parsed = json.loads(data) if ctype.startswith("application/json") else data.decode()
    return resp.status, resp.headers, parsed


def ns(kube: FakeKube, name: str) -> None:
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def cm(kube: FakeKube, namespace: str, name: str, **meta: Any) -> dict[str, Any]:
    return kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, **meta},
            "data": {"k": "v"},
        }
    )


def route(name: str, namespace: str = "default", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GW}/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {"hostnames": ["a.example"]},
    }


# ---------------------------------------------------------------------------------------------
# discovery


def test_discovery_lists_crd_groups_and_404s_unserved_versions(
    kube: FakeKube, api: client.ApiClient
) -> None:
    status, _, groups = raw(api, "GET", "/apis")
    assert status == 200 and groups["kind"] == "APIGroupList"
    by_name = {g["name"]: g for g in groups["groups"]}
    assert by_name[KARMADA]["preferredVersion"]["version"] == "v1alpha2"  # the storage version
    assert [v["version"] for v in by_name[KARMADA]["versions"]] == ["v1alpha2", "v1alpha1"]
    assert by_name[GW]["preferredVersion"]["groupVersion"] == f"{GW}/v1"
    assert "coordination.k8s.io" in by_name

    rl = client.CustomObjectsApi(api).get_api_resources(GW, "v1")
    kinds = {r.name: (r.kind, r.namespaced) for r in rl.resources}
    assert kinds == {
        "gatewayclasses": ("GatewayClass", False),
        "gateways": ("Gateway", True),
        "httproutes": ("HTTPRoute", True),
    }
    core = {r.name: r.namespaced for r in client.CoreV1Api(api).get_api_resources().resources}
    assert core == {"namespaces": False, "configmaps": True, "secrets": True}

    status, headers, text = raw(api, "GET", f"/apis/{GW}/v1alpha9")
    assert (status, text.strip()) == (404, "404 page not found")
    assert headers["Content-Type"].startswith("text/plain")

    kube.unserve(KARMADA, "v1alpha1")
    assert raw(api, "GET", f"/apis/{KARMADA}/v1alpha1")[0] == 404
    assert raw(api, "GET", f"/apis/{KARMADA}/v1alpha1/resourcebindings")[0] == 404
    assert raw(api, "GET", f"/apis/{KARMADA}/v1alpha2/resourcebindings")[0] == 200
    status, _, groups = raw(api, "GET", "/apis")
    karmada = next(g for g in groups["groups"] if g["name"] == KARMADA)
    assert [v["version"] for v in karmada["versions"]] == ["v1alpha2"]

    # an unknown resource inside a served group version: a Status with empty details
    status, _, body = raw(api, "GET", f"/apis/{GW}/v1/namespaces/default/nosuchthings")
    assert status == 404 and body["reason"] == "NotFound" and body["details"] == {}
    assert raw(api, "GET", "/version")[2]["gitVersion"] == "v1.31.0-fake"


def test_crd_given_as_a_dict_is_served() -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True},
                {"name": "v2", "served": False, "storage": False},
            ],
        },
    }
    with FakeKube(crds=[crd], token=None) as kube:
        http = urllib3.PoolManager(retries=False)
        r = http.request("GET", kube.url + "/apis/example.com/v1")
        assert r.status == 200
        assert [x["name"] for x in json.loads(r.data)["resources"]] == ["widgets"]
        assert http.request("GET", kube.url + "/apis/example.com/v2").status == 404
        created = http.request(
            "POST",
            kube.url + "/apis/example.com/v1/widgets",
            body=json.dumps(
                {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
            ),
            headers={"Content-Type": "application/json"},
        )
        assert created.status == 201
        assert kube.get("example.com/v1", "Widget", None, "w") is not None


# ---------------------------------------------------------------------------------------------
# objects


def test_create_get_and_not_found_status(kube: FakeKube, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    created = core.create_namespace({"metadata": {"name": "team-a"}})
    assert created.spec.finalizers == ["kubernetes"] and created.status.phase == "Active"
    c = core.create_namespaced_config_map(
        "team-a", {"metadata": {"name": "one", "labels": {"app": "x"}}, "data": {"a": "1"}}
    )
    assert c.metadata.uid and int(c.metadata.resource_version) > 0
    assert c.metadata.generation == 1
    assert len(c.metadata.creation_timestamp.isoformat()) >= 19
    got = core.read_namespaced_config_map("one", "team-a")
    assert (got.metadata.uid, got.data) == (c.metadata.uid, {"a": "1"})

    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_config_map("team-a", {"metadata": {"name": "one"}})
    assert exc.value.status == 409 and json.loads(exc.value.body)["reason"] == "AlreadyExists"

    with pytest.raises(client.ApiException) as exc:
        core.read_namespaced_config_map("missing", "team-a")
    assert exc.value.status == 404
    assert json.loads(exc.value.body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "missing" not found',
        "reason": "NotFound",
        "details": {"name": "missing", "kind": "configmaps"},
        "code": 404,
    }
    co = client.CustomObjectsApi(api)
    with pytest.raises(client.ApiException) as exc:
        co.get_namespaced_custom_object(GW, "v1", "team-a", "httproutes", "nope")
    body = json.loads(exc.value.body)
    assert body["message"] == f'httproutes.{GW} "nope" not found'
    assert body["details"] == {"name": "nope", "group": GW, "kind": "httproutes"}

    # one stored object, served in every served version
    co.create_namespaced_custom_object(GW, "v1", "team-a", "httproutes", route("r", "team-a"))
    beta = co.get_namespaced_custom_object(GW, "v1beta1", "team-a", "httproutes", "r")
    assert beta["apiVersion"] == f"{GW}/v1beta1"

    # direct creation keeps a given creationTimestamp (old objects) and terminating state
    old = cm(kube, "nowhere", "old", creationTimestamp="2020-01-01T00:00:00Z")
    assert old["metadata"]["creationTimestamp"] == "2020-01-01T00:00:00Z"
    dying = cm(
        kube, "nowhere", "dying", deletionTimestamp="2021-01-01T00:00:00Z", finalizers=["x/y"]
    )
    assert dying["metadata"]["deletionTimestamp"] == "2021-01-01T00:00:00Z"
    kube.delete_direct("v1", "ConfigMap", "nowhere", "dying")
    assert kube.get("v1", "ConfigMap", "nowhere", "dying") is None


def test_post_into_a_missing_namespace_is_404(kube: FakeKube, api: client.ApiClient) -> None:
    with pytest.raises(client.ApiException) as exc:
        client.CoreV1Api(api).create_namespaced_config_map("ghost", {"metadata": {"name": "a"}})
    body = json.loads(exc.value.body)
    assert (exc.value.status, body["reason"]) == (404, "NotFound")
    assert body["message"] == 'namespaces "ghost" not found'
    assert body["details"] == {"name": "ghost", "kind": "namespaces"}
    assert kube.get("v1", "ConfigMap", "ghost", "a") is None


def test_label_selectors(kube: FakeKube, api: client.ApiClient) -> None:
    labels = {
        "a": {"app": "web", "tier": "front"},
        "b": {"app": "web", "tier": "back"},
        "c": {"app": "db"},
        "d": {},
    }
    for name, lbl in labels.items():
        cm(kube, "sel", name, labels=lbl)
    core = client.CoreV1Api(api)

    def names(selector: str) -> list[str]:
        return [
            i.metadata.name
            for i in core.list_namespaced_config_map("sel", label_selector=selector).items
        ]

    assert names("app=web") == ["a", "b"]
    assert names("app==web,tier=back") == ["b"]
    assert names("app!=web") == ["c", "d"]
    assert names("tier") == ["a", "b"]
    assert names("!tier") == ["c", "d"]
    assert names("app in (db, web)") == ["a", "b", "c"]
    assert names("app notin (web)") == ["c", "d"]
    assert names("app,tier notin (front)") == ["b", "c"]
    assert names("") == ["a", "b", "c", "d"]
    for bad in ("app in (web", "app=web,", "=x", "app in ()", "a b"):
        with pytest.raises(client.ApiException) as exc:
            names(bad)
        assert (exc.value.status, json.loads(exc.value.body)["reason"]) == (400, "BadRequest")
    fs = core.list_config_map_for_all_namespaces(field_selector="metadata.name=c")
    assert [i.metadata.name for i in fs.items] == ["c"]
    with pytest.raises(client.ApiException) as exc:
        core.list_config_map_for_all_namespaces(field_selector="data.k=v")
    assert exc.value.status == 400


def test_pagination_is_a_consistent_snapshot_and_tokens_expire(
    kube: FakeKube, api: client.ApiClient
) -> None:
    for i in range(250):
        cm(kube, f"ns-{i % 3}", f"cm-{i:03d}")
    core = client.CoreV1Api(api)
    seen: list[tuple[str, str]] = []
    token: str | None = None
    pages = 0
    while True:
        page = core.list_config_map_for_all_namespaces(limit=40, _continue=token)
        pages += 1
        seen += [(i.metadata.namespace, i.metadata.name) for i in page.items]
        token = page.metadata._continue
        if pages == 1:
            assert page.metadata.remaining_item_count == 210
            # changes after the first page do not show up in later pages (snapshot)
            cm(kube, "ns-2", "zz-late")
            kube.delete_direct("v1", "ConfigMap", "ns-2", "cm-248")
        if not token:
            assert page.metadata.remaining_item_count is None
            break
    assert pages == 7
    assert len(seen) == len(set(seen)) == 250
    assert seen == sorted(seen)
    assert ("ns-2", "zz-late") not in seen

    first = core.list_config_map_for_all_namespaces(limit=10)
    assert first.metadata._continue
    kube.expire_continue_tokens()
    for tok in (first.metadata._continue, "garbage!"):
        with pytest.raises(client.ApiException) as exc:
            core.list_config_map_for_all_namespaces(limit=10, _continue=tok)
        body = json.loads(exc.value.body)
        assert (exc.value.status, body["reason"]) == (410, "Expired")
        assert body["message"].startswith("The provided continue parameter is too old")


def test_metadata_only_list_and_get_carry_no_payload(kube: FakeKube, api: client.ApiClient) -> None:
    for name in ("s1", "s2"):
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": "vault", "labels": {"k": name}},
                "data": {"password": "aHVudGVyMg=="},
            }
        )
    status, _, body = raw(
        api,
        "GET",
        "/api/v1/namespaces/vault/secrets",
        headers={"Accept": META_LIST + ",application/json"},
    )
    assert status == 200
    assert (body["kind"], body["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert [i["metadata"]["name"] for i in body["items"]] == ["s1", "s2"]
    assert all(set(i) == {"kind", "apiVersion", "metadata"} for i in body["items"])
    assert body["items"][0]["kind"] == "PartialObjectMetadata"
    assert "password" not in json.dumps(body) and "aHVudGVyMg" not in json.dumps(body)

    status, _, one = raw(
        api, "GET", "/api/v1/namespaces/vault/secrets/s1", headers={"Accept": META_ONE}
    )
    assert status == 200 and one["kind"] == "PartialObjectMetadata"
    assert "data" not in one and one["metadata"]["labels"] == {"k": "s1"}

    # a list-only media type is not acceptable for a single object
    status, _, err = raw(
        api, "GET", "/api/v1/namespaces/vault/secrets/s1", headers={"Accept": META_LIST}
    )
    assert (status, err["reason"]) == (406, "NotAcceptable")

    # full reads keep the payload, and the request log tells them apart by Accept
    full = client.CoreV1Api(api).read_namespaced_secret("s2", "vault")
    assert full.data == {"password": "aHVudGVyMg=="}
    accepts = [r.headers.get("accept") for r in kube.requests if "/secrets" in r.path]
    assert accepts == [META_LIST + ",application/json", META_ONE, META_LIST, "application/json"]


def test_delete_preconditions_conflict(kube: FakeKube, api: client.ApiClient) -> None:
    obj = cm(kube, "pre", "target")
    core = client.CoreV1Api(api)
    uid, rv = obj["metadata"]["uid"], obj["metadata"]["resourceVersion"]
    for pre, text in (
        ({"uid": "other-uid"}, f"UID in precondition: other-uid, UID in object meta: {uid}"),
        (
            {"resourceVersion": "999999"},
            f"ResourceVersion in precondition: 999999, ResourceVersion in object meta: {rv}",
        ),
    ):
        with pytest.raises(client.ApiException) as exc:
            core.delete_namespaced_config_map(
                "target",
                "pre",
                body={
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "propagationPolicy": "Background",
                    "preconditions": pre,
                },
            )
        body = json.loads(exc.value.body)
        assert (exc.value.status, body["reason"]) == (409, "Conflict")
        assert body["message"] == f"Precondition failed: {text}"
        assert kube.get("v1", "ConfigMap", "pre", "target") is not None
    kube.clear_requests()
    status = core.delete_namespaced_config_map(
        "target", "pre", body={"preconditions": {"uid": uid, "resourceVersion": rv}}
    )
    assert status["status"] == "Success" and status["details"]["uid"] == uid
    assert kube.get("v1", "ConfigMap", "pre", "target") is None
    assert kube.requests[0].body == {"preconditions": {"uid": uid, "resourceVersion": rv}}


def test_finalizers_hold_until_patched_away(kube: FakeKube, api: client.ApiClient) -> None:
    ns(kube, "fin")
    co = client.CustomObjectsApi(api)
    created = co.create_namespaced_custom_object(
        GW, "v1", "fin", "httproutes", route("r", "fin", finalizers=["example.com/hold"])
    )
    deleted = co.delete_namespaced_custom_object(GW, "v1", "fin", "httproutes", "r")
    meta = deleted["metadata"]
    assert meta["deletionTimestamp"] and meta["deletionGracePeriodSeconds"] == 0
    assert int(meta["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    again = co.delete_namespaced_custom_object(GW, "v1", "fin", "httproutes", "r")
    assert again["metadata"] == meta  # already terminating: unchanged
    assert co.get_namespaced_custom_object(GW, "v1", "fin", "httproutes", "r")["metadata"][
        "finalizers"
    ] == ["example.com/hold"]

    patched = co.patch_namespaced_custom_object(
        GW, "v1", "fin", "httproutes", "r", {"metadata": {"finalizers": None}}
    )
    assert "finalizers" not in patched["metadata"]
    assert kube.get(f"{GW}/v1", "HTTPRoute", "fin", "r") is None

    # the same through a JSON patch with a test op, and a stale PUT is a conflict
    core = client.CoreV1Api(api)
    cm(kube, "fin", "c", finalizers=["a/b"])
    core.delete_namespaced_config_map("c", "fin")
    cur = core.read_namespaced_config_map("c", "fin")
    with pytest.raises(client.ApiException) as exc:
        stale = client.ApiClient().sanitize_for_serialization(cur)
        stale["metadata"]["resourceVersion"] = "1"
        core.replace_namespaced_config_map("c", "fin", stale)
    assert (exc.value.status, json.loads(exc.value.body)["reason"]) == (409, "Conflict")
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": cur.metadata.resource_version},
        {"op": "remove", "path": "/metadata/finalizers"},
    ]
    core.patch_namespaced_config_map("c", "fin", ops)  # a list body goes as json-patch
    assert kube.get("v1", "ConfigMap", "fin", "c") is None


def test_namespace_delete_stays_terminating(kube: FakeKube, api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "doomed"}})
    core.create_namespaced_config_map("doomed", {"metadata": {"name": "inside"}})
    # like the real server, the Namespace comes back, not the Status the client expects
    first = core.delete_namespace("doomed")
    assert first["kind"] == "Namespace" and first["status"]["phase"] == "Terminating"
    core.delete_namespace("doomed")
    ns_obj = core.read_namespace("doomed")
    assert ns_obj.status.phase == "Terminating" and ns_obj.metadata.deletion_timestamp
    assert ns_obj.spec.finalizers == ["kubernetes"]
    assert core.read_namespaced_config_map("inside", "doomed").metadata.name == "inside"
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_config_map("doomed", {"metadata": {"name": "late"}})
    assert exc.value.status == 403


def test_unacceptable_accept_on_delete_leaves_the_object(
    kube: FakeKube, api: client.ApiClient
) -> None:
    cm(kube, "neg", "keep")
    for accept in ("application/yaml", META_LIST, "application/json;as=Table;g=meta.k8s.io;v=v1"):
        status, _, body = raw(
            api, "DELETE", "/api/v1/namespaces/neg/configmaps/keep", headers={"Accept": accept}
        )
        assert (status, body["reason"]) == (406, "NotAcceptable")
        assert kube.get("v1", "ConfigMap", "neg", "keep") is not None
    status, _, body = raw(
        api,
        "DELETE",
        "/api/v1/namespaces/neg/configmaps/keep",
        headers={"Accept": f"application/yaml,{META_ONE}"},
    )
    assert status == 200 and body["status"] == "Success"
    assert kube.get("v1", "ConfigMap", "neg", "keep") is None


# ---------------------------------------------------------------------------------------------
# faults


def test_fault_status_with_retry_after(kube: FakeKube, api: client.ApiClient) -> None:
    cm(kube, "f", "a")
    fault = kube.add_fault(
        Fault(method="GET", path=r"/configmaps/a$", status=429, headers={"Retry-After": "1"})
    )
    core = client.CoreV1Api(api)
    with pytest.raises(client.ApiException) as exc:
        core.read_namespaced_config_map("a", "f")
    assert exc.value.status == 429 and exc.value.headers["Retry-After"] == "1"
    body = json.loads(exc.value.body)
    assert body["reason"] == "TooManyRequests" and body["details"]["retryAfterSeconds"] == 1
    assert core.read_namespaced_config_map("a", "f").metadata.name == "a"  # times=1
    assert fault.hits == 1
    assert [r.status for r in kube.requests] == [429, 200]

    kube.add_fault(Fault(path="/configmaps", query={"limit": "*"}, status=503, times=None))
    core.list_namespaced_config_map("f")  # no limit: not matched
    for _ in range(2):
        with pytest.raises(client.ApiException) as exc:
            core.list_namespaced_config_map("f", limit=5)
        assert json.loads(exc.value.body)["reason"] == "ServiceUnavailable"
    kube.clear_faults()
    assert core.list_namespaced_config_map("f", limit=5).items


def test_fault_delay_exceeds_read_timeout(kube: FakeKube, api: client.ApiClient) -> None:
    cm(kube, "f", "slow")
    kube.add_fault(Fault(method="GET", path="/slow$", delay=1.0))
    core = client.CoreV1Api(api)
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        core.read_namespaced_config_map("slow", "f", _request_timeout=(1, 0.5))
    assert core.read_namespaced_config_map("slow", "f", _request_timeout=(1, 0.5))


def test_fault_drop_closes_the_connection(kube: FakeKube, api: client.ApiClient) -> None:
    cm(kube, "f", "x")
    kube.add_fault(Fault(method="GET", path="/x$", drop=True))
    core = client.CoreV1Api(api)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        core.read_namespaced_config_map("x", "f")
    assert kube.requests[-1].status is None
    assert core.read_namespaced_config_map("x", "f").metadata.name == "x"


def test_fault_drop_after_applying_a_delete(kube: FakeKube, api: client.ApiClient) -> None:
    cm(kube, "f", "gone")
    kube.add_fault(Fault(method="DELETE", drop=True, apply_first=True))
    core = client.CoreV1Api(api)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        core.delete_namespaced_config_map("gone", "f")
    assert kube.get("v1", "ConfigMap", "f", "gone") is None
    with pytest.raises(client.ApiException) as exc:  # the client's retry now finds nothing
        core.delete_namespaced_config_map("gone", "f")
    assert exc.value.status == 404


# ---------------------------------------------------------------------------------------------
# auth and kubeconfig


def test_auth_requires_the_bearer_token(kube: FakeKube) -> None:
    http = urllib3.PoolManager(retries=False)
    url = kube.url + "/api/v1/namespaces"
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        r = http.request("GET", url, headers=headers)
        body = json.loads(r.data)
        assert (r.status, body["reason"], body["code"]) == (401, "Unauthorized", 401)
    r = http.request("GET", url, headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status == 200 and json.loads(r.data)["kind"] == "NamespaceList"


def test_kubeconfig_with_several_contexts(kube: FakeKube, tmp_path: Path) -> None:
    with FakeKube(token=None) as other:
        path = kube.write_kubeconfig(
            tmp_path / "kc", context="hub", extra=[("member/one.example", other)]
        )
        ns(other, "only-in-member")
        hub = config.new_client_from_config(config_file=path, context="hub")
        member = config.new_client_from_config(config_file=path, context="member/one.example")

        def names(c: client.ApiClient) -> set[str]:
            return {n.metadata.name for n in client.CoreV1Api(c).list_namespace().items}

        assert names(member) == {"only-in-member"}
        assert names(hub) == set()


# ---------------------------------------------------------------------------------------------
# scale


def test_listing_20k_objects_in_pages(kube: FakeKube, api: client.ApiClient) -> None:
    for i in range(20_000):
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"c{i:05d}", "namespace": f"n{i % 50}"},
            }
        )
    core = client.CoreV1Api(api)
    count, token = 0, None
    while True:
        resp = core.list_config_map_for_all_namespaces(
            limit=500,
            _continue=token,
            _preload_content=False,
            _headers={"Accept": META_LIST},
        )
        body = json.loads(resp.data)
        count += len(body["items"])
        token = body["metadata"].get("continue")
        if not token:
            break
    assert count == 20_000
