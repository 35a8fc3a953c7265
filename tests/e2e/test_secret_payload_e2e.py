"""End to end, on the real server pair: no byte of a Secret's payload in what gcjob writes
(docs/threat-model.md, N5), whatever field of the Secret carries it.

A Secret applied with `kubectl apply` carries its whole manifest, `data` and `stringData`
included, in the `kubectl.kubernetes.io/last-applied-configuration` annotation, which a
metadata-only read returns. gcjob keeps of a Secret only the labels and annotations its rules
read (gcjob/domain.py SECRET_KEYS_READ): every other value is dropped where it is read, so it
reaches no record, report, log or explanation.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from gcjob import undo
from gcjob.cli import cli
from gcjob.domain import GATEWAY_SYNC_LABEL
from testbed.cluster import TestCluster
from testbed.faultproxy import FaultProxy
from testbed.milo import (
    SECRETS,
    anchor,
    copy,
    delete_project,
    labels,
    make_project,
    project_name,
    template,
)
from testbed.objects import binding, companion
from testbed.report import HubSweep, run_gcjob
from tests.e2e.test_copies_e2e import (  # noqa: F401  (fixtures: the Milo proxy and its CRDs)
    milo,
    milo_kubeconfig,
    served,
)
from tests.test_secret_payload_input import payloads, secrets_with_payload

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
NAME = "db-creds"  # the generated Secret's (tests/test_secret_payload_input.py)


def password() -> str:
    return f"pw-{uuid.uuid4().hex}"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def applied(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest as `kubectl apply` (client-side) creates it: the manifest itself, as
    JSON, in its last-applied-configuration annotation."""
    meta = manifest["metadata"]
    written = {**manifest, "metadata": {**meta, "annotations": dict(meta.get("annotations", {}))}}
    notes = dict(meta.get("annotations", {}))
    notes[LAST_APPLIED] = json.dumps(manifest, sort_keys=True, separators=(",", ":")) + "\n"
    written["metadata"]["annotations"] = notes
    return written


def secret_requests_ask_for_metadata_only(proxy: FaultProxy) -> int:
    """Every request to a Secret path through `proxy` asked for metadata only, with no full
    object as a fall-back; how many there were."""
    seen = [r for r in proxy.requests if "/secrets" in r.path]
    for request in seen:
        assert "as=PartialObjectMetadata" in request.accept, (request.path, request.accept)
        assert ",application/json" not in request.accept, (request.path, request.accept)
    return len(seen)


def nowhere(words: list[str], *texts: str) -> None:
    for word in words:
        for text in texts:
            assert word not in text


def test_a_kubectl_applied_secrets_payload_is_in_no_record_report_log_or_explanation(
    hub: TestCluster,
    faults: FaultProxy,
    sweep: HubSweep,
    hub_kubeconfig: str,
    tmp_path: Path,
) -> None:
    ns = hub.namespace()
    secrets = [password(), password(), password(), password()]
    manifest = companion("Secret", ns, "db-creds", ["default/gone"], data={"key": b64(secrets[0])})
    manifest["stringData"] = {"password": secrets[1]}
    manifest["metadata"]["labels"]["app.kubernetes.io/instance"] = secrets[2][:60]
    manifest["metadata"]["annotations"]["example.com/token"] = secrets[3]
    # Created as `kubectl apply` creates it: the manifest in the annotation, kubectl's manager.
    status, made = hub._call(
        "POST",
        f"/api/v1/namespaces/{ns}/secrets?fieldManager=kubectl-client-side-apply",
        applied(manifest),
    )
    assert status == 201, made
    assert secrets[1] in made["metadata"]["annotations"][LAST_APPLIED]  # the leak's vehicle
    hub.create(
        binding(
            ns,
            "db-creds-secret",
            kind="Secret",
            target="db-creds",
            target_uid=made["metadata"]["uid"],
        )
    )
    payload = [*secrets, secrets[2][:60], b64(secrets[0]), b64(secrets[1])]
    faults.clear_requests()
    explained = [
        CliRunner().invoke(
            cli,
            ["explain", f"secret/{ns}/db-creds", "--hub-kubeconfig", hub_kubeconfig, *output],
        )
        for output in (["--output", "json"], [])
    ]
    records = tmp_path / "records"
    records.mkdir()
    report = tmp_path / "report.json"

    result = sweep(ns, "--delete", "--record-deletions", str(records), "--report-file", str(report))

    assert secret_requests_ask_for_metadata_only(faults) >= 3  # explain, the list, the record
    assert result.outcome("Secret", "db-creds") == ("deleted", "orphaned"), result.items
    assert hub.gone("Secret", ns, "db-creds")
    [path] = records.glob("deletions-*.jsonl")
    text = path.read_text()
    nowhere(payload, text, result.stdout, result.stderr, report.read_text())
    for e in explained:
        assert e.exit_code == 0, e.output
        nowhere(payload, e.stdout, e.stderr)
    # What the record holds of the Secret: its identity, and its keys by name only.
    [entry] = [r for r in undo.read_record(text.splitlines(keepends=True)) if r.kind == "Secret"]
    assert not entry.data_recorded
    assert set(entry.entry["object"]) == {"apiVersion", "kind", "metadata"}
    annotations = entry.meta["annotations"]
    assert LAST_APPLIED in annotations and "example.com/token" in annotations
    assert entry.meta["labels"]["app.kubernetes.io/instance"] != secrets[2][:60]


def test_a_secret_copys_payload_is_read_by_no_request_and_recorded_nowhere(
    hub: TestCluster,
    upstream: TestCluster,
    faults: FaultProxy,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The copies sweep reads Secrets as the hub's discovery names them, and, with
    --read-upstream-secrets, the upstream Secrets they copy: each read metadata only, and a
    deleted copy's record holds no payload."""
    live, gone = project_name(), project_name()
    make_project(upstream, live)
    make_project(upstream, gone)
    upstream_ns = upstream.namespace("app")
    ns = hub.namespace("ns")
    secrets = [password(), password(), password()]
    # The live project's Secret upstream, with its payload; its copy on the hub is kept.
    upstream_secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "tls-live", "namespace": upstream_ns},
        "data": {"tls.key": b64(secrets[0])},
    }
    status, made = upstream._call(
        "POST", f"/api/v1/namespaces/{upstream_ns}/secrets", applied(upstream_secret)
    )
    assert status == 201, made
    # One copy per project, each applied with its payload in the annotation too.
    owners = ((live, "tls-live", secrets[1], made["metadata"]["uid"]),)
    owners += ((gone, "tls", secrets[2], str(uuid.uuid4())),)
    for project, name, payload, owner_uid in owners:
        found = labels(project, "", "Secret", upstream_ns, name)
        made_anchor = anchor(hub, ns, owner_uid, found)
        copied = copy(
            hub,
            ns,
            SECRETS,
            "v1",
            "Secret",
            name,
            found | {GATEWAY_SYNC_LABEL: "true"},
            made_anchor,
        )
        hub._call(
            "PATCH",
            f"/api/v1/namespaces/{ns}/secrets/{name}",
            {
                "data": {"tls.key": b64(payload)},
                "metadata": {"annotations": {LAST_APPLIED: json.dumps({"data": payload})}},
            },
            content_type="application/merge-patch+json",
        )
        assert copied["metadata"]["name"] == name
    delete_project(upstream, milo, gone)
    faults.clear_requests()
    milo.clear_requests()

    result = run_gcjob(
        *gcjob_hub_args,
        *("--upstream-kubeconfig", milo_kubeconfig, "--upstream-server-template", template(milo)),
        *("--sweep", "copies", "--namespace", ns, "--clock-skew", "0s"),
        *("--delete", "--enforce", "copies", "--read-upstream-secrets"),
        *("--record-deletions", str(tmp_path)),
    )

    assert secret_requests_ask_for_metadata_only(faults) >= 2  # the list, the record
    assert secret_requests_ask_for_metadata_only(milo) >= 1  # the upstream Secret
    assert result.outcome("Secret", "tls") == ("deleted", "project-gone"), result.items
    assert result.item("Secret", "tls-live") is None  # healthy: its owner exists
    assert hub.present("Secret", ns, "tls-live")
    [path] = tmp_path.glob("deletions-*.jsonl")
    text = path.read_text()
    words = [*secrets, *(b64(s) for s in secrets)]
    nowhere(words, text, result.stdout, result.stderr)
    [entry] = [r for r in undo.read_record(text.splitlines(keepends=True)) if r.kind == "Secret"]
    assert not entry.data_recorded
    assert set(entry.entry["object"]) == {"apiVersion", "kind", "metadata"}


@settings(
    max_examples=max(5, settings().max_examples // 10),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(generated=secrets_with_payload(), manager=payloads)
def test_no_generated_secret_payload_reaches_a_record_report_log_or_explanation(
    hub: TestCluster,
    sweep: HubSweep,
    hub_kubeconfig: str,
    tmp_path_factory: Any,
    generated: tuple[dict[str, Any], list[str]],
    manager: str,
) -> None:
    """Secrets with payload in generated labels and annotations (kubectl's last-applied
    among them), created on the real server by a field manager named like a payload: what
    the server answers a metadata-only read with is all there is to leak, and none of it does."""
    obj, words = generated
    ns = hub.namespace("payload")
    meta = obj["metadata"]
    meta["namespace"] = ns
    for server_field in ("uid", "resourceVersion", "creationTimestamp", "generateName"):
        meta.pop(server_field, None)
    meta.pop("managedFields", None)  # the server writes them: under `manager`, below
    status, made = hub._call("POST", f"/api/v1/namespaces/{ns}/secrets?fieldManager={manager}", obj)
    assert status == 201, made
    assert made["metadata"]["managedFields"][0]["manager"] == manager
    hub.create(
        binding(
            ns, f"{NAME}-secret", kind="Secret", target=NAME, target_uid=made["metadata"]["uid"]
        )
    )
    explained = CliRunner().invoke(
        cli,
        ["explain", f"secret/{ns}/{NAME}", "--hub-kubeconfig", hub_kubeconfig, "--output", "json"],
    )
    records = tmp_path_factory.mktemp("records")

    result = sweep(ns, "--delete", "--record-deletions", str(records))

    assert result.outcome("Secret", NAME) == ("deleted", "orphaned"), result.items
    [path] = records.glob("deletions-*.jsonl")
    nowhere([*words, manager], path.read_text(), result.stdout, result.stderr)
    nowhere([*words, manager], explained.stdout, explained.stderr)
