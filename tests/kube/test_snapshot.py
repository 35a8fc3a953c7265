"""gcjob.kube.snapshot: sweeping offline from `kubectl get -o json|yaml` dumps."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from gcjob.kube import reduce
from gcjob.kube.access import Patched
from gcjob.kube.errors import ConfigError, KubeError, UnknownCluster
from gcjob.kube.resources import (
    CONFIGMAPS,
    GATEWAYS,
    HTTPROUTES,
    NAMESPACES,
    PROJECTS,
    RESOURCEBINDINGS,
    SECRETS,
)
from gcjob.kube.snapshot import NotInSnapshot, Snapshot, SnapshotStore, SnapshotUpstreams

WEB = "ns-4b1f7c2a-9e3d-4a6b-8c1d-2e5f6a7b8c9d"
SHOP = "ns-c7e2a9d4-1b3f-4e8a-a6d2-5f9b0c1e3a7d"
LABEL = "compute.datumapis.com/referenced-data"
PAYLOAD = "cG9zdGdyZXM6Ly9hcHA6czNjcjN0QGRiOjU0MzIvYXBw"
STRING_PAYLOAD = "postgres://app:s3cr3t@db:5432/app"


def _raw(obj: dict[str, Any]) -> dict[str, Any]:
    return obj


def _meta(
    name: str,
    namespace: str | None,
    created: str = "2026-11-12T09:14:27Z",
    labels: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "uid": f"uid-{name}",
        "resourceVersion": "100",
        "creationTimestamp": created,
    }
    if namespace is not None:
        meta["namespace"] = namespace
    if labels is not None:
        meta["labels"] = labels
    meta.update(extra)
    return meta


def configmap(name: str, namespace: str, labelled: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(name, namespace, labels={LABEL: "true"} if labelled else {}, **extra),
        "data": {"APP_MODE": "production"},
    }


def secret(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _meta(name, namespace, labels={LABEL: "true"}),
        "data": {"DATABASE_URL": PAYLOAD},
        "stringData": {"DATABASE_URL": STRING_PAYLOAD},
    }


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _list(*items: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {}}


@pytest.fixture
def snapshot_dir(tmp_path: Path) -> Path:
    root = tmp_path / "snap"
    _write(
        root / "snapshot.yaml",
        'capturedAt: "2026-11-20T12:00:00Z"\nserver: "test-hub (snapshot)"\n',
    )
    # a JSON List, as `kubectl get configmaps -A -o json` writes it
    _write(
        root / "hub" / "configmaps.json",
        json.dumps(
            _list(
                configmap("app-config", WEB),
                configmap("other-config", SHOP),
                configmap("unlabelled-config", WEB, labelled=False),
            )
        ),
    )
    # multi-document YAML: a List, then a single object
    _write(
        root / "hub" / "secrets.yaml",
        yaml.safe_dump(_list(secret("db-creds", WEB)))
        + "---\n"
        + yaml.safe_dump(secret("api-token", SHOP)),
    )
    # nested, .yml, with a single object and an empty document
    _write(
        root / "hub" / "karmada" / "bindings.yml",
        "---\n"
        + yaml.safe_dump(
            {
                "apiVersion": "work.karmada.io/v1alpha2",
                "kind": "ResourceBinding",
                "metadata": _meta("app-config-configmap", WEB),
                "spec": {"resource": {"kind": "ConfigMap", "name": "app-config"}},
            }
        )
        + "---\n",
    )
    _write(root / "hub" / "README.txt", "not a dump: ignored")
    _write(
        root / "upstream" / "single" / "gateways.yaml",
        yaml.safe_dump(
            _list(
                {
                    "apiVersion": "gateway.networking.k8s.io/v1",
                    "kind": "Gateway",
                    "metadata": _meta("web-gateway", "default"),
                }
            )
        ),
    )
    _write(
        root / "upstream" / "single" / "namespaces.yaml",
        yaml.safe_dump(
            _list({"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("default", None)})
        ),
    )
    _write(root / "upstream" / "proj-alpha" / "gateways.json", json.dumps(_list()))
    return root


def test_captured_at_and_server(snapshot_dir: Path) -> None:
    snapshot = Snapshot(str(snapshot_dir))
    assert snapshot.captured_at == datetime(2026, 11, 20, 12, 0, 0, tzinfo=UTC)
    assert snapshot.hub.server == "test-hub (snapshot)"
    assert sorted(snapshot.upstreams) == ["proj-alpha", "single"]


def test_without_captured_at_now_is_the_newest_time_never_past_the_pods_clock(
    snapshot_dir: Path,
) -> None:
    """One object's timestamp in 2099 (or at the end of time) must not age every other
    object by decades: the capture time is at most the pod's clock."""
    (snapshot_dir / "snapshot.yaml").unlink()
    assert Snapshot(str(snapshot_dir)).captured_at == datetime(2026, 11, 12, 9, 14, 27, tzinfo=UTC)
    for future in ("2099-01-01T00:00:00Z", "9999-12-31T23:59:59Z"):
        _write(
            snapshot_dir / "hub" / "later.json",
            json.dumps(configmap("unrelated", "other", labelled=False, created=future)),
        )
        before = datetime.now(UTC)
        captured = Snapshot(str(snapshot_dir)).captured_at
        assert captured is not None and before <= captured <= datetime.now(UTC)


def test_unquoted_captured_at(snapshot_dir: Path) -> None:
    _write(snapshot_dir / "snapshot.yaml", "capturedAt: 2026-11-20T12:00:00Z\n")
    assert Snapshot(str(snapshot_dir)).captured_at == datetime(2026, 11, 20, 12, tzinfo=UTC)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_dump_nested_too_deeply_is_refused_not_a_crash(snapshot_dir: Path, suffix: str) -> None:
    deep = '{"a": ' * 3000 + "1" + "}" * 3000
    _write(snapshot_dir / "hub" / f"deep{suffix}", '{"kind": "List", "status": ' + deep + "}")
    with pytest.raises(ConfigError, match=f"snapshot file .*deep{suffix}: .*recursion"):
        Snapshot(str(snapshot_dir))


def test_json_list_loaded(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    names = hub.list(CONFIGMAPS, reduce.namespace_and_name)
    assert sorted(names) == sorted(
        [(WEB, "app-config"), (SHOP, "other-config"), (WEB, "unlabelled-config")]
    )


def test_multi_document_yaml_loaded(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    assert sorted(hub.list(SECRETS, reduce.name_of)) == ["api-token", "db-creds"]
    assert hub.list(RESOURCEBINDINGS, reduce.name_of) == ["app-config-configmap"]


def test_secret_payload_dropped_on_load(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    secrets = hub.list(SECRETS, _raw)
    assert len(secrets) == 2
    for obj in secrets:
        assert "data" not in obj
        assert "stringData" not in obj
        assert obj["metadata"]["name"] in {"db-creds", "api-token"}
    got = hub.get(SECRETS, WEB, "db-creds", _raw)
    assert got is not None and "data" not in got and "stringData" not in got
    # nothing of the payload is kept anywhere in the store
    assert PAYLOAD not in repr(hub.__dict__)
    assert STRING_PAYLOAD not in repr(hub.__dict__)


def test_configmap_data_is_kept(snapshot_dir: Path) -> None:
    got = Snapshot(str(snapshot_dir)).hub.get(CONFIGMAPS, WEB, "app-config", _raw)
    assert got is not None
    assert got["data"] == {"APP_MODE": "production"}


def test_list_by_namespace(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    assert hub.list(CONFIGMAPS, reduce.name_of, namespace=SHOP) == ["other-config"]
    assert hub.list(CONFIGMAPS, reduce.name_of, namespace="nowhere") == []


def test_list_by_equality_label_selector(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    labelled = hub.list(CONFIGMAPS, reduce.namespace_and_name, label_selector=f"{LABEL}=true")
    assert sorted(labelled) == sorted([(WEB, "app-config"), (SHOP, "other-config")])
    both = hub.list(CONFIGMAPS, reduce.name_of, namespace=WEB, label_selector=f"{LABEL}=true")
    assert both == ["app-config"]
    assert hub.list(CONFIGMAPS, reduce.name_of, label_selector=f"{LABEL}=false") == []


def test_list_drops_records_reduced_to_none(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    assert hub.list(CONFIGMAPS, lambda obj: None) == []


def test_a_kind_with_no_dump_is_unknown_not_empty(snapshot_dir: Path) -> None:
    """Issue 20 item 12: no HTTPRoutes dump is not "no HTTPRoutes"."""
    hub = Snapshot(str(snapshot_dir)).hub
    with pytest.raises(NotInSnapshot, match="no httproutes dump"):
        hub.list(HTTPROUTES, reduce.name_of)
    with pytest.raises(NotInSnapshot):
        hub.get(HTTPROUTES, WEB, "web", reduce.name_of)


@pytest.mark.parametrize(
    ("file", "content"),
    [
        ("httproutes.yaml", "apiVersion: v1\nkind: List\nitems: []\n"),  # kubectl's empty dump
        (
            "httproutes.gateway.networking.k8s.io.json",
            '{"apiVersion": "v1", "kind": "List", "items": []}',
        ),
        (
            "anything.yaml",
            "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRouteList\nitems: []\n",
        ),
        ("httproutes.yaml", ""),  # an empty file named after the kind
    ],
)
def test_an_explicitly_empty_dump_is_empty(snapshot_dir: Path, file: str, content: str) -> None:
    (snapshot_dir / "hub" / file).write_text(content, encoding="utf-8")
    hub = Snapshot(str(snapshot_dir)).hub
    assert hub.list(HTTPROUTES, reduce.name_of) == []
    assert hub.get(HTTPROUTES, WEB, "web", reduce.name_of) is None


def test_get(snapshot_dir: Path) -> None:
    snapshot = Snapshot(str(snapshot_dir))
    assert snapshot.hub.get(CONFIGMAPS, WEB, "unlabelled-config", reduce.name_of) == (
        "unlabelled-config"
    )
    assert snapshot.hub.get(CONFIGMAPS, SHOP, "app-config", reduce.name_of) is None
    assert snapshot.hub.get(SECRETS, WEB, "app-config", reduce.name_of) is None
    single = snapshot.upstreams["single"]
    assert single.get(GATEWAYS, "default", "web-gateway", reduce.name_of) == "web-gateway"
    assert single.get(GATEWAYS, "default", "gone-gateway", reduce.name_of) is None
    assert single.get(NAMESPACES, None, "default", reduce.name_of) == "default"
    assert snapshot.upstreams["proj-alpha"].list(GATEWAYS, reduce.name_of) == []


def test_served_is_true(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    assert hub.served(RESOURCEBINDINGS)
    assert hub.served(HTTPROUTES)


def test_delete_refused(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    with pytest.raises(KubeError):
        hub.delete(CONFIGMAPS, WEB, "app-config", "uid-app-config", "100")
    assert hub.get(CONFIGMAPS, WEB, "app-config", reduce.name_of) == "app-config"


MARK_OPS = [
    {"op": "test", "path": "/metadata/uid", "value": "uid-app-config"},
    {"op": "test", "path": "/metadata/resourceVersion", "value": "100"},
    {"op": "add", "path": "/metadata/labels/gcjob.datumapis.com~1orphaned", "value": "true"},
    {"op": "add", "path": "/metadata/annotations", "value": {"gcjob.datumapis.com/x": "y"}},
]


def test_patch_applies_to_the_loaded_object_and_later_reads_see_it(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub

    result = hub.patch(CONFIGMAPS, WEB, "app-config", MARK_OPS)

    assert result.outcome is Patched.APPLIED
    obj = hub.get(CONFIGMAPS, WEB, "app-config", _raw)
    assert obj is not None
    assert obj["metadata"]["labels"] == {LABEL: "true", "gcjob.datumapis.com/orphaned": "true"}
    assert obj["metadata"]["annotations"] == {"gcjob.datumapis.com/x": "y"}
    assert obj["metadata"]["resourceVersion"] == "101"  # a write is a new version, as live
    assert obj["data"] == {"APP_MODE": "production"}
    # the same patch again is stale, as it would be on a server
    again = hub.patch(CONFIGMAPS, WEB, "app-config", MARK_OPS)
    assert again.outcome is Patched.CONFLICT
    assert again.detail == "test failed: /metadata/resourceVersion"


def test_a_failed_test_leaves_the_loaded_object_untouched(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    ops = [{**MARK_OPS[0], "value": "another-uid"}, *MARK_OPS[1:]]

    result = hub.patch(CONFIGMAPS, WEB, "app-config", ops)

    assert result.outcome is Patched.CONFLICT
    assert result.detail == "test failed: /metadata/uid"
    obj = hub.get(CONFIGMAPS, WEB, "app-config", _raw)
    assert obj is not None and obj["metadata"]["labels"] == {LABEL: "true"}
    assert "annotations" not in obj["metadata"]


def test_a_patch_that_does_not_apply_is_a_conflict_and_a_missing_object_gone(
    snapshot_dir: Path,
) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    ops = [{"op": "add", "path": "/metadata/annotations/some~1key", "value": "v"}]  # no map

    assert hub.patch(CONFIGMAPS, WEB, "app-config", ops).outcome is Patched.CONFLICT
    assert hub.patch(CONFIGMAPS, WEB, "nothing-here", ops).outcome is Patched.GONE


def test_a_secret_patched_in_a_snapshot_has_no_payload_to_show(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    ops = [{**MARK_OPS[0], "value": "uid-db-creds"}, *MARK_OPS[1:]]

    assert hub.patch(SECRETS, WEB, "db-creds", ops).outcome is Patched.APPLIED
    obj = hub.get(SECRETS, WEB, "db-creds", _raw)
    assert obj is not None and "data" not in obj and "stringData" not in obj


def test_captured_at_falls_back_to_newest_timestamp(tmp_path: Path) -> None:
    root = tmp_path / "snap"
    _write(root / "snapshot.yaml", "server: no-time\n")
    _write(
        root / "hub" / "cms.yaml",
        yaml.safe_dump(
            _list(
                configmap("a", WEB, created="2026-11-01T00:00:00Z"),
                configmap(
                    "b",
                    WEB,
                    created="2026-11-02T00:00:00Z",
                    deletionTimestamp="2026-11-15T08:30:00Z",
                ),
            )
        ),
    )
    _write(
        root / "upstream" / "single" / "gws.yaml",
        yaml.safe_dump(
            {
                "apiVersion": "gateway.networking.k8s.io/v1",
                "kind": "Gateway",
                "metadata": _meta("gw", "default", created="2026-11-16T10:00:00Z"),
            }
        ),
    )
    snapshot = Snapshot(str(root))
    assert snapshot.captured_at == datetime(2026, 11, 16, 10, 0, 0, tzinfo=UTC)


def test_captured_at_fallback_without_snapshot_yaml(tmp_path: Path) -> None:
    root = tmp_path / "snap"
    _write(
        root / "hub" / "cms.json",
        json.dumps(_list(configmap("a", WEB, created="2026-11-03T04:05:06Z"))),
    )
    snapshot = Snapshot(str(root))
    assert snapshot.captured_at == datetime(2026, 11, 3, 4, 5, 6, tzinfo=UTC)
    assert snapshot.upstreams == {}


def test_no_time_at_all(tmp_path: Path) -> None:
    root = tmp_path / "snap"
    untimed = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": WEB}}
    _write(root / "hub" / "cm.json", json.dumps(untimed))
    assert Snapshot(str(root)).captured_at is None


@pytest.mark.parametrize(
    "captured",
    ['"yesterday"', '"2026-11-20T12:00:00"', '"2026-13-01T00:00:00Z"', "12345", '""', "[1]"],
)
def test_invalid_captured_at(tmp_path: Path, captured: str) -> None:
    root = tmp_path / "snap"
    _write(root / "snapshot.yaml", f"capturedAt: {captured}\n")
    (root / "hub").mkdir()
    with pytest.raises(ConfigError, match="capturedAt"):
        Snapshot(str(root))


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("broken.json", '{"apiVersion": "v1", "kind": "List", "items": ['),
        ("broken.yaml", "apiVersion: v1\nkind: List\nitems: [\n  - {a: b\n"),
        ("tabs.yaml", "kind: ConfigMap\n\tmetadata: {}\n"),
    ],
)
def test_unparsable_hub_file(tmp_path: Path, name: str, text: str) -> None:
    root = tmp_path / "snap"
    _write(root / "hub" / name, text)
    with pytest.raises(ConfigError) as raised:
        Snapshot(str(root))
    assert name in str(raised.value)
    assert "\n" not in str(raised.value)


def test_unparsable_upstream_file(tmp_path: Path) -> None:
    root = tmp_path / "snap"
    _write(root / "hub" / "cms.json", json.dumps(_list(configmap("a", WEB))))
    _write(root / "upstream" / "single" / "gateways.json", "{not json")
    with pytest.raises(ConfigError, match=r"gateways\.json: not valid JSON at line 1, column 2"):
        Snapshot(str(root))


def test_undecodable_file(tmp_path: Path) -> None:
    root = tmp_path / "snap"
    (root / "hub").mkdir(parents=True)
    (root / "hub" / "binary.yaml").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError):
        Snapshot(str(root))


def test_unparsable_snapshot_yaml(tmp_path: Path) -> None:
    root = tmp_path / "snap"
    (root / "hub").mkdir(parents=True)
    _write(root / "snapshot.yaml", 'capturedAt: "2026-11-20T12:00:00Z\n  server: [\n')
    with pytest.raises(ConfigError):
        Snapshot(str(root))


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        Snapshot(str(tmp_path / "missing"))
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(ConfigError):
        Snapshot(str(file))


def test_snapshot_upstreams(snapshot_dir: Path) -> None:
    snapshot = Snapshot(str(snapshot_dir))
    upstreams = SnapshotUpstreams(snapshot.upstreams)
    single = upstreams.reader_for("single")
    assert isinstance(single, SnapshotStore)
    assert single.list(GATEWAYS, reduce.name_of, namespace="default") == ["web-gateway"]
    with pytest.raises(UnknownCluster):
        upstreams.reader_for("proj-unknown")
    with pytest.raises(UnknownCluster):
        SnapshotUpstreams({}).reader_for("single")


def test_upstream_objects_are_not_on_the_hub(snapshot_dir: Path) -> None:
    snapshot = Snapshot(str(snapshot_dir))
    assert snapshot.upstreams["single"].list(GATEWAYS, reduce.name_of) != []
    with pytest.raises(NotInSnapshot):  # the hub's dumps hold no Gateways: not known there
        snapshot.hub.list(GATEWAYS, reduce.name_of)
    with pytest.raises(NotInSnapshot):
        snapshot.upstreams["single"].list(CONFIGMAPS, reduce.name_of)


def test_an_upstream_without_a_gateways_dump_cannot_be_judged(snapshot_dir: Path) -> None:
    """Issue 20 item 12: it was read as a cluster with no Gateway at all (`ok`)."""
    for path in (snapshot_dir / "upstream" / "single").glob("*gateway*"):
        path.unlink()
    upstream = Snapshot(str(snapshot_dir)).upstreams["single"]
    with pytest.raises(NotInSnapshot, match="no gateways dump"):
        upstream.served(GATEWAYS)


def test_malformed_metadata_in_a_dump_is_never_a_crash(tmp_path: Path) -> None:
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "odd.yaml").write_text(
        yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": [1]},
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "x", "labels": ["a"]},
                },
            ]
        )
    )
    store = Snapshot(str(tmp_path)).hub

    found = store.list(CONFIGMAPS, reduce.name_of, label_selector="a=b")
    assert found == []
    assert store.list(CONFIGMAPS, reduce.name_of) == ["x"]


@pytest.mark.parametrize(
    "content",
    [
        "kind: List\napiVersion: v1\nitems: 5\n",
        "- 1\n- 2\n",
        "just a string\n",
        "kind: List\napiVersion: v1\nitems: [3]\n",
    ],
)
def test_a_file_that_is_no_dump_of_objects_is_refused(tmp_path: Path, content: str) -> None:
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "odd.yaml").write_text(content)
    with pytest.raises(ConfigError, match=r"odd\.yaml"):
        Snapshot(str(tmp_path))


def test_empty_yaml_documents_are_fine(tmp_path: Path) -> None:
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "cm.yaml").write_text(
        "---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: n}\n---\n"
    )
    assert Snapshot(str(tmp_path)).hub.list(CONFIGMAPS, reduce.name_of) == ["a"]


# -- hostile input (issue 12 G, 12) ---------------------------------------------------------


def test_a_malformed_dump_is_located_never_quoted(tmp_path: Path) -> None:
    """PyYAML's message quotes the offending line: a Secret's data must not reach stderr."""
    root = tmp_path / "snap"
    secret = "apiVersion: v1\nkind: Secret\ndata:\n  password: c2VjcmV0LXBheWxvYWQ=\n  x: [\n"
    _write(root / "hub" / "secrets.yaml", secret)
    with pytest.raises(ConfigError) as raised:
        Snapshot(str(root))
    message = str(raised.value)
    assert "c2VjcmV0LXBheWxvYWQ=" not in message and "password" not in message
    assert "secrets.yaml: not valid YAML at line" in message
    assert raised.value.__cause__ is None  # no chained exception carries the snippet either


@pytest.mark.parametrize(
    "files",
    [
        {},
        {"hub/notes.txt": "not a dump"},
        {"hub/empty.yaml": ""},
        {"hub/junk.yaml": "just a string\n---\n- 1\n- 2\n"},
        {"hub/list.json": '{"apiVersion": "v1", "kind": "List", "items": []}'},
    ],
)
def test_an_empty_or_junk_only_snapshot_is_refused(tmp_path: Path, files: dict[str, str]) -> None:
    root = tmp_path / "snap"
    root.mkdir()
    for name, text in files.items():
        _write(root / name, text)
    with pytest.raises(ConfigError, match=r"no hub objects found|not a Kubernetes object or List"):
        Snapshot(str(root))


# -- discovery and the Project API (issue 48 item 3: the copies sweep reads them) ---------

_GROUPS = """\
apiVersion: v1
kind: APIGroupList
groups:
- name: gateway.networking.k8s.io
  versions: [{groupVersion: gateway.networking.k8s.io/v1, version: v1}]
---
apiVersion: v1
kind: APIResourceList
groupVersion: gateway.networking.k8s.io/v1
resources:
- {name: httproutes, kind: HTTPRoute, namespaced: true}
- {name: httproutes/status, kind: HTTPRoute, namespaced: true}
"""
_CORE = """\
apiVersion: v1
kind: APIResourceList
groupVersion: v1
resources:
- {name: configmaps, kind: ConfigMap, namespaced: true}
"""


def test_a_dump_without_discovery_discovers_nothing(snapshot_dir: Path) -> None:
    hub = Snapshot(str(snapshot_dir)).hub
    assert not hub.discovers
    with pytest.raises(NotInSnapshot, match="no discovery of group core"):
        hub.kinds("")


def test_discovery_dumped_is_read_as_a_server_answers_it(snapshot_dir: Path) -> None:
    _write(snapshot_dir / "hub" / "discovery" / "apis.yaml", _GROUPS)
    _write(snapshot_dir / "hub" / "discovery" / "core.json", json.dumps(yaml.safe_load(_CORE)))
    hub = Snapshot(str(snapshot_dir)).hub
    assert hub.discovers
    served = hub.kinds("gateway.networking.k8s.io")
    assert served is not None
    assert [r.plural for r in served["HTTPRoute"]] == ["httproutes"]  # no subresource
    assert hub.kinds("")["ConfigMap"][0].path(WEB) == CONFIGMAPS.path(WEB)  # type: ignore[index]
    # a discovery document is no object: the hub's kinds are what they were
    assert hub.list(CONFIGMAPS, reduce.name_of) == [
        "app-config",
        "unlabelled-config",
        "other-config",
    ]


def test_a_group_the_group_list_leaves_out_is_not_served(snapshot_dir: Path) -> None:
    _write(snapshot_dir / "hub" / "apis.yaml", _GROUPS)
    hub = Snapshot(str(snapshot_dir)).hub
    assert hub.kinds("discovery.k8s.io") is None


def test_a_group_not_dumped_is_unknown_never_unserved(snapshot_dir: Path) -> None:
    """Named by the APIGroupList but its APIResourceList not dumped, or no APIGroupList at
    all, or the core group (never in /apis): unknown, a read of it fails."""
    _write(snapshot_dir / "hub" / "core.yaml", _CORE)
    hub = Snapshot(str(snapshot_dir)).hub
    with pytest.raises(NotInSnapshot, match="unknown, not unserved"):
        hub.kinds("discovery.k8s.io")  # no APIGroupList: not known to be left out
    _write(
        snapshot_dir / "hub" / "apis.yaml",
        "apiVersion: v1\nkind: APIGroupList\ngroups:\n- name: discovery.k8s.io\n",
    )
    hub = Snapshot(str(snapshot_dir)).hub
    with pytest.raises(NotInSnapshot):
        hub.kinds("discovery.k8s.io")
    (snapshot_dir / "hub" / "core.yaml").unlink()
    with pytest.raises(NotInSnapshot, match="group core"):
        Snapshot(str(snapshot_dir)).hub.kinds("")


def test_an_upstreams_discovery_is_its_own(snapshot_dir: Path) -> None:
    _write(snapshot_dir / "upstream" / "single" / "discovery.yaml", _CORE)
    snapshot = Snapshot(str(snapshot_dir))
    assert snapshot.upstreams["single"].kinds("") is not None
    assert not snapshot.hub.discovers
    with pytest.raises(NotInSnapshot):
        snapshot.upstreams["proj-alpha"].kinds("")


@pytest.mark.parametrize(
    "content",
    [
        "apiVersion: v1\nkind: APIResourceList\nresources: []\n",  # no groupVersion
        "apiVersion: v1\nkind: APIGroupList\ngroups: {}\n",
    ],
)
def test_a_malformed_discovery_dump_is_refused(snapshot_dir: Path, content: str) -> None:
    _write(snapshot_dir / "hub" / "discovery.yaml", content)
    with pytest.raises(ConfigError, match=r"discovery\.yaml"):
        Snapshot(str(snapshot_dir))


def test_the_project_api_is_its_dump_and_the_projects_named(snapshot_dir: Path) -> None:
    snapshot = Snapshot(str(snapshot_dir))
    assert snapshot.projects is None  # no projects/: no Project API, no project
    assert snapshot.project_clusters == frozenset()
    _write(
        snapshot_dir / "projects" / "projects.yaml",
        yaml.safe_dump(
            _list(
                {
                    "apiVersion": "resourcemanager.miloapis.com/v1alpha1",
                    "kind": "Project",
                    "metadata": _meta("proj-alpha", None),
                }
            )
        ),
    )
    (snapshot_dir / "snapshot.yaml").write_text(
        'capturedAt: "2026-11-20T12:00:00Z"\nprojectClusters: [proj-alpha, proj-gone]\n'
    )
    snapshot = Snapshot(str(snapshot_dir))
    assert snapshot.projects is not None
    assert snapshot.project_clusters == {"proj-alpha", "proj-gone"}
    assert snapshot.projects.list(PROJECTS, reduce.name_of) == ["proj-alpha"]
    assert snapshot.projects.get(PROJECTS, None, "proj-gone", reduce.name_of) is None
    # the Project API's dump is not the hub's
    with pytest.raises(NotInSnapshot):
        snapshot.hub.list(PROJECTS, reduce.name_of)


def test_a_project_api_without_a_projects_dump_answers_nothing(snapshot_dir: Path) -> None:
    """A projects/ with no Projects in it: no project is found, none is not found."""
    _write(snapshot_dir / "projects" / "README.txt", "not a dump")
    snapshot = Snapshot(str(snapshot_dir))
    assert snapshot.projects is not None
    with pytest.raises(NotInSnapshot):
        snapshot.projects.get(PROJECTS, None, "proj-gone", reduce.name_of)


def test_project_clusters_must_be_a_list_of_names(snapshot_dir: Path) -> None:
    (snapshot_dir / "snapshot.yaml").write_text("projectClusters: proj-alpha\n")
    with pytest.raises(ConfigError, match="projectClusters"):
        Snapshot(str(snapshot_dir))
