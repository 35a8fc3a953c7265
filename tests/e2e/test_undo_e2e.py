"""End to end, on the real server pair: the deletion record (`--record-deletions`) and
`gcjob restore` (docs/undo.md). Every kind a sweep deletes is recorded before its delete and
put back equal in spec, data and labels, without gcjob's mark; a Secret only as a reference,
its data never read; a record that cannot be written deletes nothing."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gcjob import undo
from gcjob.cli import cli
from gcjob.domain import ORPHANED_LABEL, PROTECT_ANNOTATION
from testbed.cluster import ApiFailure, TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER
from testbed.faultproxy import Fault, FaultProxy, RecordedRequest, Served
from testbed.objects import SECRET_VALUE, binding, companion, route
from testbed.report import HubSweep, run_gcjob
from tests.e2e.test_copies_e2e import (  # noqa: F401  (fixtures: the Milo proxy and its CRDs)
    CONNECTORS,
    args,
    connector_group,
    delete_project,
    live_owner,
    make_project,
    milo,
    milo_kubeconfig,
    present,
    project_name,
    served,
)

DATA = {"app.conf": "listen 8080\nworkers 4\n", "feature.flags": '{"beta": true}'}


def record_of(directory: Path) -> tuple[Path, list[undo.Recorded]]:
    """The one record file a run wrote in `directory`, read."""
    files = sorted(directory.glob("deletions-*.jsonl"))
    assert len(files) == 1, files
    return files[0], undo.read_record(files[0].read_text().splitlines(keepends=True))


def restore(hub_kubeconfig: str, record: Path, *more: str) -> tuple[int, list[dict[str, Any]]]:
    """`gcjob restore RECORD MORE --output json`, the real CLI, in-process: its exit code and
    JSON lines."""
    result = CliRunner().invoke(
        cli,
        ["restore", str(record), "--hub-kubeconfig", hub_kubeconfig, "--output", "json", *more],
        standalone_mode=False,
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return int(result.return_value), [json.loads(line) for line in result.stdout.splitlines()]


def by_object(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {line["object"]: line for line in lines if "object" in line}


def hub_identity(hub: TestCluster) -> str:
    kube_system = hub.get("Namespace", None, undo.HUB_IDENTITY)
    assert kube_system is not None
    return str(kube_system["metadata"]["uid"])


def let_go(hub: TestCluster, kind: str, ns: str, name: str) -> None:
    """Karmada's binding controller, done: its finalizer removed, the deleted binding goes
    (one the test made without it is gone already)."""
    try:
        hub.patch(kind, ns, name, {"metadata": {"finalizers": None}})
    except ApiFailure:
        assert hub.absent(kind, ns, name)  # gone already


def test_a_delete_run_records_each_object_first_and_restore_puts_them_back(
    hub: TestCluster,
    faults: FaultProxy,
    sweep: HubSweep,
    hub_kubeconfig: str,
    tmp_path: Path,
) -> None:
    ns = hub.namespace()
    cm_binding = hub.create_with_binding(
        companion(
            "ConfigMap", ns, "app-config", ["default/gone"], labels={"team": "web"}, data=DATA
        )
    )
    secret_binding = hub.create_with_binding(companion("Secret", ns, "db-creds", ["default/gone"]))
    hub.create(binding(ns, "gone-config-configmap", kind="ConfigMap", target="gone-config"))
    before = hub.get("ConfigMap", ns, "app-config")
    assert before is not None
    records = tmp_path / "records"
    records.mkdir()
    # A first run marks them (a grace period to wait out): it deletes nothing, records nothing.
    marking = sweep(ns, "--delete", "--grace", "1h", "--record-deletions", str(records))
    assert marking.outcome("ConfigMap", "app-config") == ("marked", "orphaned"), marking.items
    assert list(records.iterdir()) == []
    faults.clear_requests()

    result = sweep(ns, "--delete", "--record-deletions", str(records))

    assert result.exit_code == 0, result.stderr
    for kind, name in (
        ("ConfigMap", "app-config"),
        ("Secret", "db-creds"),
        ("ResourceBinding", cm_binding),
        ("ResourceBinding", secret_binding),
        ("ResourceBinding", "gone-config-configmap"),
    ):
        assert result.item(kind, name)["action"] == "deleted", (kind, name, result.items)
    # The Secret: read as metadata only, every time; its data is in no record.
    secret_requests = [r for r in faults.requests if "/secrets" in r.path]
    assert [r for r in secret_requests if r.method == "GET"], "the Secret was read to record it"
    for request in secret_requests:
        assert "as=PartialObjectMetadata" in request.accept, (request.method, request.accept)
        assert ",application/json" not in request.accept
    path, recorded = record_of(records)
    assert SECRET_VALUE not in path.read_text()
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    for kind, name in (("ConfigMap", "app-config"), ("Secret", "db-creds")):
        assert hub.gone(kind, ns, name)  # its Orphan delete finished by the garbage collector
    entries = {(r.kind, r.name): r for r in recorded}
    assert set(entries) == {
        ("ConfigMap", "app-config"),
        ("Secret", "db-creds"),
        ("ResourceBinding", cm_binding),
        ("ResourceBinding", secret_binding),
        ("ResourceBinding", "gone-config-configmap"),
    }
    assert all(r.outcome == "deleted" for r in recorded), [(r.label, r.outcome) for r in recorded]
    config = entries[("ConfigMap", "app-config")]
    assert config.entry["object"]["data"] == DATA
    assert config.uid == before["metadata"]["uid"]
    assert config.meta["resourceVersion"] != before["metadata"]["resourceVersion"]  # marked since
    assert config.meta["labels"][ORPHANED_LABEL] == "true"  # recorded as it was deleted
    secret = entries[("Secret", "db-creds")]
    assert not secret.data_recorded
    assert set(secret.entry["object"]) == {"apiVersion", "kind", "metadata"}
    assert secret.entry["object"]["kind"] == "Secret"
    for name in (cm_binding, secret_binding, "gone-config-configmap"):
        let_go(hub, "ResourceBinding", ns, name)
        assert hub.get("ResourceBinding", ns, name) is None

    # A dry run first: nothing is created. The Secret, and the binding that binds it, are
    # what restore never puts back: said, and no failure (exit 0), as with --apply below.
    code, lines = restore(hub_kubeconfig, path)
    assert code == 0, lines
    said = by_object(lines)
    assert said[f"ConfigMap/{ns}/app-config"]["action"] == "would-restore"
    assert said[f"Secret/{ns}/db-creds"]["action"] == "skipped"
    assert "NSO" in said[f"Secret/{ns}/db-creds"]["detail"]
    assert said[f"ResourceBinding/{ns}/{secret_binding}"]["action"] == "skipped"
    assert f"binds Secret {ns}/db-creds" in said[f"ResourceBinding/{ns}/{secret_binding}"]["detail"]
    assert lines[-1]["summary"]["counts"] == {"would-restore": 3, "skipped": 2}
    assert hub.get("ConfigMap", ns, "app-config") is None
    # Named, the Secret is refused: what was asked for cannot be done (exit 1).
    code, lines = restore(hub_kubeconfig, path, f"secret/{ns}/db-creds")
    assert code == 1 and [line["action"] for line in lines[:-1]] == ["refused"], lines
    # The default output is text: a line for each object, then a summary.
    text = CliRunner().invoke(
        cli, ["restore", str(path), "--hub-kubeconfig", hub_kubeconfig], standalone_mode=False
    )
    assert text.return_value == 0, text.output
    assert f"skipped: Secret/{ns}/db-creds (uid " in text.stdout
    assert f"would-restore: ConfigMap/{ns}/app-config (uid " in text.stdout
    # The counts in the order the record met them: the order the run deleted in, oldest
    # marks first (marks are dated to the microsecond their evidence was complete).
    last = text.stdout.splitlines()[-1]
    assert last.endswith("; a dry run: nothing created (add --apply)"), text.stdout
    assert "3 would-restore" in last and "2 skipped" in last, text.stdout

    code, lines = restore(hub_kubeconfig, path, "--apply")

    assert code == 0, lines
    said = by_object(lines)
    assert said[f"ConfigMap/{ns}/app-config"]["action"] == "restored"
    assert said[f"Secret/{ns}/db-creds"]["action"] == "skipped"
    assert hub.get("ResourceBinding", ns, secret_binding) is None
    back = hub.get("ConfigMap", ns, "app-config")
    assert back is not None
    assert back["data"] == DATA
    assert back["metadata"]["uid"] == said[f"ConfigMap/{ns}/app-config"]["new_uid"]
    assert back["metadata"]["uid"] != before["metadata"]["uid"]
    labels = back["metadata"]["labels"]
    assert labels == before["metadata"]["labels"]  # gcjob's mark label gone
    annotations = back["metadata"]["annotations"]
    assert not any(k.startswith("gcjob.datumapis.com/orphaned") for k in annotations)
    assert annotations[PROTECT_ANNOTATION] == "true"
    assert {k: v for k, v in annotations.items() if k != PROTECT_ANNOTATION} == before["metadata"][
        "annotations"
    ]
    back_binding = hub.get("ResourceBinding", ns, "gone-config-configmap")
    assert back_binding is not None
    assert (
        back_binding["spec"]
        == entries[("ResourceBinding", "gone-config-configmap")].entry["object"]["spec"]
    )
    assert hub.get("Secret", ns, "db-creds") is None

    # Never over an existing object.
    code, lines = restore(hub_kubeconfig, path, "--apply", f"configmap/{ns}/app-config")
    assert code == 1
    assert lines[0]["action"] == "refused" and "exists" in lines[0]["detail"]

    # The next run keeps what was put back: it is protected.
    again = sweep(ns, "--delete", "--record-deletions", str(records), "--sweep", "companions")
    assert again.outcome("ConfigMap", "app-config") == ("skipped", "protected")
    assert hub.present("ConfigMap", ns, "app-config")


def test_a_deleted_route_is_recorded_and_put_back(
    hub: TestCluster,
    upstream: TestCluster,
    routes_args: list[str],
    hub_kubeconfig: str,
    tmp_path: Path,
) -> None:
    project = upstream.project("gw-a")
    ns = hub.namespace()
    made = hub.create(
        route(
            ns,
            "orphaned",
            cluster_label=f"cluster-{UPSTREAM_CLUSTER}",
            upstream_namespace=project,
            parents=[{"name": "gw-gone"}],
        )
    )

    result = run_gcjob(
        *routes_args, "--namespace", ns, "--delete", "--record-deletions", str(tmp_path)
    )

    assert result.outcome("HTTPRoute", "orphaned") == ("deleted", "upstream-gateways-gone")
    assert hub.gone("HTTPRoute", ns, "orphaned")
    path, recorded = record_of(tmp_path)
    assert [(r.kind, r.name, r.outcome) for r in recorded] == [("HTTPRoute", "orphaned", "deleted")]
    assert recorded[0].hub == hub_identity(hub)  # the hub it was deleted from

    code, lines = restore(hub_kubeconfig, path, "--apply", f"HTTPRoute/{ns}/orphaned")

    assert code == 0, lines
    back = hub.get("HTTPRoute", ns, "orphaned")
    assert back is not None
    assert back["spec"] == made["spec"]
    assert back["metadata"]["labels"] == made["metadata"]["labels"]


def test_a_deleted_copy_comes_back_owned_by_its_restored_anchor(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
    hub_kubeconfig: str,
    tmp_path: Path,
) -> None:
    live, gone = project_name(), project_name()
    make_project(upstream, live)
    make_project(upstream, gone)
    upstream_ns = upstream.namespace("app")
    ns = hub.namespace("ns")
    # A live project whose owner exists: the Project API answers for it, nothing goes there.
    connector_group(hub, ns, live, upstream_ns, "other", live_owner(upstream, upstream_ns, "other"))
    old_anchor, old_copy = connector_group(hub, ns, gone, upstream_ns, "web", str(uuid.uuid4()))
    anchor_name = old_anchor["metadata"]["name"]
    delete_project(upstream, milo, gone)

    result = run_gcjob(
        *args(gcjob_hub_args, milo_kubeconfig, milo, ns, "--delete", "--enforce", "copies"),
        "--record-deletions",
        str(tmp_path),
    )

    assert result.outcome("Connector", "web")[0] == "deleted", result.items
    assert result.outcome("ConfigMap", anchor_name)[0] == "deleted", result.items
    for kind, name in (("Connector", "web"), ("ConfigMap", anchor_name)):
        assert hub.gone(kind, ns, name)  # its Orphan delete finished by the garbage collector
    path, recorded = record_of(tmp_path)
    assert [r.kind for r in recorded] == ["Connector", "ConfigMap"]  # copies first

    code, lines = restore(hub_kubeconfig, path, "--apply")

    assert code == 0, lines
    # The anchor first, then the copy, its ownerReference pointed at the anchor's new uid:
    # the garbage collector would delete a copy whose owner uid is gone.
    assert [line["object"] for line in lines[:-1]] == [
        f"ConfigMap/{ns}/{anchor_name}",
        f"Connector/{ns}/web",
    ]
    anchor_status, new_anchor = hub._call(
        "GET", f"/api/v1/namespaces/{ns}/configmaps/{anchor_name}"
    )
    assert anchor_status == 200
    assert new_anchor["metadata"]["uid"] != old_anchor["metadata"]["uid"]
    copy_status, new_copy = hub._call("GET", CONNECTORS.format(namespace=ns) + "/web")
    assert copy_status == 200
    owners = new_copy["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"], o["uid"]) for o in owners] == [
        ("ConfigMap", anchor_name, new_anchor["metadata"]["uid"])
    ]
    assert "re-pointed" in lines[1]["owner_references"][0]
    assert new_copy["metadata"]["labels"] == old_copy["metadata"]["labels"]


def test_a_record_directory_that_is_not_there_stops_the_run_before_anything(
    hub: TestCluster, sweep: HubSweep, tmp_path: Path
) -> None:
    ns = hub.namespace()
    hub.create_with_binding(companion("ConfigMap", ns, "app-config", ["default/gone"]))

    result = sweep(ns, "--delete", "--record-deletions", str(tmp_path / "missing"))

    assert result.exit_code == 2
    assert "--record-deletions" in result.stderr
    assert hub.present("ConfigMap", ns, "app-config")
    assert (
        hub.get("ConfigMap", ns, "app-config")["metadata"].get("labels", {}).get(ORPHANED_LABEL)
        is None
    )  # not even marked


def test_a_record_that_cannot_be_written_deletes_nothing(
    hub: TestCluster, sweep: HubSweep, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = hub.namespace()
    hub.create_with_binding(companion("ConfigMap", ns, "first", ["default/gone"]))
    hub.create_with_binding(companion("ConfigMap", ns, "second", ["default/gone"]))
    # The run's record file cannot be opened for writing: a directory stands at its path
    # (as a full disk or a volume gone read-only would fail the write after the start check).
    (tmp_path / "in-the-way").mkdir()
    monkeypatch.setattr("gcjob.act.record.record_file_name", lambda run_id, started: "in-the-way")

    result = sweep(ns, "--delete", "--record-deletions", str(tmp_path))

    assert result.exit_code == 1, result.stderr
    for name in ("first", "second"):
        assert result.outcome("ConfigMap", name) == ("skipped", "record-failed"), result.items
        assert hub.present("ConfigMap", ns, name)
        assert hub.present("ResourceBinding", ns, f"{name}-configmap")
    assert "nothing more is deleted" in result.item("ConfigMap", "second")["detail"]


def test_a_delete_tried_again_is_recorded_once_and_restored_once(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep, hub_kubeconfig: str, tmp_path: Path
) -> None:
    """Issue 46 item 9: a companion's binding, its pinned delete answered 409, is read and
    deleted once more. The record held two `delete` entries for its uid: restore's dry run
    said `would-restore` twice (exit 0), --apply restored it, then refused it (exit 1). One
    entry a uid a run (the retry's outcome written after the first's); and a record holding
    two (as gcjob wrote them before) is one object to restore, dry run and --apply alike."""
    ns = hub.namespace()
    created = hub.create(companion("ConfigMap", ns, "app-config", ["default/gone"], data=DATA))
    # Its binding, not owned by it: the hub's garbage collector, taking the companion's
    # ownerReference off it after the companion's Orphan delete, would change it between a
    # read and a delete at its own time; here the one 409 is the proxy's.
    bound = "app-config-configmap"
    made = hub.create(
        binding(
            ns, bound, kind="ConfigMap", target="app-config", target_uid=created["metadata"]["uid"]
        )
    )
    binding_uid = made["metadata"]["uid"]
    records = tmp_path / "records"
    records.mkdir()
    conflict = faults.add_fault(
        Fault(method="DELETE", path=rf"/namespaces/{ns}/resourcebindings/{bound}$", status=409)
    )

    result = sweep(ns, "--delete", "--record-deletions", str(records), "--sweep", "companions")

    assert result.exit_code == 0, result.stderr
    assert conflict.hits == 1
    assert result.outcome("ResourceBinding", bound) == ("deleted", "companion-deleted")
    path, _ = record_of(records)
    lines = path.read_text().splitlines(keepends=True)
    entries = [json.loads(line) for line in lines]
    deletes = [
        at
        for at, e in enumerate(entries)
        if e["event"] == "delete" and e["object"]["metadata"]["uid"] == binding_uid
    ]
    assert len(deletes) == 1, entries  # recorded once, before its first try
    outcomes = [
        e["outcome"] for e in entries if e["event"] == "outcome" and e["uid"] == binding_uid
    ]
    assert outcomes == ["skipped:changed-since-observed", "deleted"]
    let_go(hub, "ResourceBinding", ns, bound)
    assert hub.get("ResourceBinding", ns, bound) is None
    assert hub.gone("ConfigMap", ns, "app-config")
    # The record as gcjob wrote it before: the binding's delete entry twice.
    twice = tmp_path / "twice.jsonl"
    twice.write_text("".join([*lines, lines[deletes[0]]]))
    expected = {f"ConfigMap/{ns}/app-config", f"ResourceBinding/{ns}/{bound}"}

    for record in (path, twice):
        code, said = restore(hub_kubeconfig, record)
        assert code == 0, said
        assert sorted(line["object"] for line in said[:-1]) == sorted(expected), said
        assert {line["action"] for line in said[:-1]} == {"would-restore"}
    code, said = restore(hub_kubeconfig, twice, "--apply")

    assert code == 0, said  # the exit code of its dry run
    assert sorted(line["object"] for line in said[:-1]) == sorted(expected), said
    assert {line["action"] for line in said[:-1]} == {"restored"}
    assert hub.present("ConfigMap", ns, "app-config")
    assert hub.present("ResourceBinding", ns, bound)


def test_a_delete_tried_again_on_a_newer_version_records_and_restores_that_version(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep, hub_kubeconfig: str, tmp_path: Path
) -> None:
    """A binding changed between its first pinned delete and the second look (the 409 is
    real: the object moved on). The delete goes out pinned to the newer version, so that is
    the version recorded, and restore puts back the newer one (before: the entry written
    before the first try stood for it, and restore would have put back the older one)."""
    ns = hub.namespace()
    created = hub.create(companion("ConfigMap", ns, "app-config", ["default/gone"], data=DATA))
    bound = "app-config-configmap"
    made = hub.create(
        binding(
            ns, bound, kind="ConfigMap", target="app-config", target_uid=created["metadata"]["uid"]
        )
    )
    binding_uid = made["metadata"]["uid"]

    def moved_on(_: RecordedRequest) -> Served:
        # The binding changes on the hub, and the delete pinned to the old version is refused.
        hub.patch("ResourceBinding", ns, bound, {"metadata": {"labels": {"moved": "on"}}})
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "Conflict",
            "code": 409,
            "message": "the ResourceVersion in the precondition does not match",
        }
        return Served(
            409, [("Content-Type", "application/json")], iter([json.dumps(body).encode()])
        )

    conflict = faults.add_fault(
        Fault(method="DELETE", path=rf"/namespaces/{ns}/resourcebindings/{bound}$", serve=moved_on)
    )
    records = tmp_path / "records"
    records.mkdir()

    result = sweep(ns, "--delete", "--record-deletions", str(records), "--sweep", "companions")

    assert result.exit_code == 0, result.stderr
    assert conflict.hits == 1
    assert result.outcome("ResourceBinding", bound) == ("deleted", "companion-deleted")
    path, _ = record_of(records)
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    versions = [
        e["object"]["metadata"]
        for e in entries
        if e["event"] == "delete" and e["object"]["metadata"]["uid"] == binding_uid
    ]
    # Each version once: the first try's, and the newer one the delete was pinned to.
    assert len(versions) == 2 and versions[0]["resourceVersion"] != versions[1]["resourceVersion"]
    assert (versions[1].get("labels") or {}).get("moved") == "on"
    let_go(hub, "ResourceBinding", ns, bound)
    assert hub.get("ResourceBinding", ns, bound) is None
    assert hub.gone("ConfigMap", ns, "app-config")

    code, said = restore(hub_kubeconfig, path)
    assert code == 0, said
    assert [line["action"] for line in said[:-1]] == ["would-restore"] * 2, said
    code, said = restore(hub_kubeconfig, path, "--apply")
    assert code == 0, said
    back = hub.get("ResourceBinding", ns, bound)
    assert back is not None and (back["metadata"].get("labels") or {}).get("moved") == "on"


def test_a_dry_run_records_nothing(hub: TestCluster, sweep: HubSweep, tmp_path: Path) -> None:
    ns = hub.namespace()
    hub.create_with_binding(companion("ConfigMap", ns, "app-config", ["default/gone"]))

    result = sweep(ns, "--record-deletions", str(tmp_path))

    assert result.exit_code == 0, result.stderr
    assert result.outcome("ConfigMap", "app-config") == ("would-delete", "orphaned")
    assert list(tmp_path.iterdir()) == []


def hand_written(hub: str, where: undo.Where, obj: dict[str, Any], **more: Any) -> str:
    """A delete entry as gcjob writes one on `hub` (its identity), then edited by `more` (a
    forged record's line)."""
    run_id = "r"
    entry = undo.delete_entry(
        run_id, "companions", where, obj, datetime.now(UTC), sensitive=False, hub=hub
    )
    return undo.line({**entry, **more})


def test_a_hand_edited_record_restores_nothing_gcjob_never_deletes(
    hub: TestCluster, hub_kubeconfig: str, tmp_path: Path
) -> None:
    ns = hub.namespace()
    smuggled = f"ns-{uuid.uuid4().hex[:8]}"
    identity = hub_identity(hub)
    forged_system = f"forged-{uuid.uuid4().hex[:8]}"
    absent = f"absent-{uuid.uuid4().hex[:8]}"
    lines = [
        # Kinds gcjob never deletes: a Lease, and a (cluster-scoped) Namespace.
        hand_written(
            identity,
            undo.Where("coordination.k8s.io", "v1", "leases", "Lease", True),
            {"metadata": {"name": "forged-lease", "namespace": ns}, "spec": {}},
        ),
        hand_written(
            identity,
            undo.Where("", "v1", "namespaces", "Namespace", False),
            {"metadata": {"name": smuggled}},
        ),
        # A Secret with data smuggled in, and data_recorded set to true.
        hand_written(
            identity,
            undo.Where("", "v1", "secrets", "Secret", True),
            {"metadata": {"name": "forged-secret", "namespace": ns}, "data": {"k": "dg=="}},
            data_recorded=True,
        ),
        # A ConfigMap under the Secrets' resource name.
        hand_written(
            identity,
            undo.Where("", "v1", "secrets", "ConfigMap", True),
            {"metadata": {"name": "forged-plural", "namespace": ns}, "data": {"k": "v"}},
        ),
        # A ConfigMap in a namespace gcjob never sweeps.
        hand_written(
            identity,
            undo.Where("", "v1", "configmaps", "ConfigMap", True),
            {"metadata": {"name": forged_system, "namespace": "kube-system"}, "data": {}},
        ),
        # A ConfigMap in a namespace the hub does not have: the create fails, in one line.
        hand_written(
            identity,
            undo.Where("", "v1", "configmaps", "ConfigMap", True),
            {"metadata": {"name": "nowhere", "namespace": absent}, "data": {}},
        ),
        # A ConfigMap entry whose object calls itself a Secret: created as a ConfigMap.
        hand_written(
            identity,
            undo.Where("", "v1", "configmaps", "ConfigMap", True),
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "forged-kind", "namespace": ns},
                "data": {"k": "v"},
            },
        ),
    ]
    record = tmp_path / "deletions-forged.jsonl"
    record.write_text("".join(lines))

    code, out = restore(hub_kubeconfig, record, "--apply")

    assert code == 1
    actions = {line["object"]: line["action"] for line in out if "object" in line}
    assert actions == {
        f"Lease/{ns}/forged-lease": "refused",
        f"Namespace/{smuggled}": "refused",
        f"Secret/{ns}/forged-secret": "refused",
        f"ConfigMap/{ns}/forged-plural": "refused",
        f"ConfigMap/kube-system/{forged_system}": "refused",
        f"ConfigMap/{absent}/nowhere": "failed",
        f"ConfigMap/{ns}/forged-kind": "restored",
    }
    assert hub.get("Lease", ns, "forged-lease") is None
    assert hub.get("Namespace", None, smuggled) is None
    assert hub.get("Secret", ns, "forged-secret") is None
    assert hub.get("Secret", ns, "forged-plural") is None
    assert hub.get("Secret", ns, "forged-kind") is None
    assert hub.get("ConfigMap", "kube-system", forged_system) is None
    assert hub.get("Namespace", None, absent) is None
    [nowhere] = [line for line in out if line.get("object") == f"ConfigMap/{absent}/nowhere"]
    assert "not found" in nowhere["detail"] and "\n" not in nowhere["detail"]
    made = hub.get("ConfigMap", ns, "forged-kind")
    assert made is not None and made["data"] == {"k": "v"}


def test_a_record_from_another_hub_is_refused_unless_told(
    hub: TestCluster, hub_kubeconfig: str, tmp_path: Path
) -> None:
    ns = hub.namespace()
    where = undo.Where("", "v1", "configmaps", "ConfigMap", True)
    record = tmp_path / "deletions-elsewhere.jsonl"
    record.write_text(
        hand_written("uid-of-another-hub", where, {"metadata": {"name": "a", "namespace": ns}})
        + hand_written("", where, {"metadata": {"name": "b", "namespace": ns}})  # says none
    )

    code, out = restore(hub_kubeconfig, record, "--apply")

    assert code == 1
    details = {line["object"]: line["detail"] for line in out if "object" in line}
    assert "deleted from another hub" in details[f"ConfigMap/{ns}/a"]
    assert "does not say which hub" in details[f"ConfigMap/{ns}/b"]
    assert hub.get("ConfigMap", ns, "a") is None and hub.get("ConfigMap", ns, "b") is None

    code, out = restore(hub_kubeconfig, record, "--apply", "--other-hub")

    assert code == 0, out
    assert hub.present("ConfigMap", ns, "a") and hub.present("ConfigMap", ns, "b")


def test_restoring_into_a_namespace_being_deleted_says_the_servers_reason_first(
    hub: TestCluster, hub_kubeconfig: str, tmp_path: Path
) -> None:
    """The API server refuses to create in a namespace being deleted with a 403: that is no
    permission to grant, and the line says the server's reason first."""
    ns = hub.namespace()
    where = undo.Where("", "v1", "configmaps", "ConfigMap", True)
    record = tmp_path / "deletions-terminating.jsonl"
    record.write_text(
        hand_written(
            hub_identity(hub), where, {"metadata": {"name": "app-config", "namespace": ns}}
        )
    )
    hub.delete("Namespace", None, ns)  # no namespace controller here: it stays Terminating
    assert hub.get("Namespace", None, ns)["metadata"].get("deletionTimestamp")

    code, out = restore(hub_kubeconfig, record, "--apply")
    text = CliRunner().invoke(
        cli,
        ["restore", str(record), "--hub-kubeconfig", hub_kubeconfig, "--apply"],
        standalone_mode=False,
    )

    assert code == 1 and text.return_value == 1
    [line] = [line for line in out if "object" in line]
    assert line["action"] == "failed"
    detail = line["detail"]
    assert detail.startswith('configmaps "app-config" is forbidden: unable to create'), detail
    assert "being terminated" in detail and "grant" not in detail, detail
    assert "HTTP 403 Forbidden" in detail
    first = text.stdout.splitlines()[0]
    assert first == f"failed: ConfigMap/{ns}/app-config: {detail}"  # the record names no uid
    assert hub.get("ConfigMap", ns, "app-config") is None
