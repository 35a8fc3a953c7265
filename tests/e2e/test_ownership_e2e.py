"""End to end: what says "not yours to delete" on the real hub (issue 20 items 2 and 19):
the protect key in any placement and with any value but "false", and ownership by someone else
(a controller ownerReference, a Secret type gcjob never deletes). `--delete --grace 0s`."""

from __future__ import annotations

import uuid
from typing import Any

from gcjob.domain import PROTECT_ANNOTATION
from testbed.cluster import TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER
from testbed.faultproxy import Fault, FaultProxy
from testbed.objects import binding, companion, owned_by, route
from testbed.report import run_gcjob

ORPHAN_REFERRERS = ["default/gone-wd"]


def _with_labels(obj: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    obj["metadata"].setdefault("labels", {}).update(labels)
    return obj


def test_protect_in_any_placement_with_any_value_but_false_keeps_the_object(
    hub: TestCluster, upstream: TestCluster, upstream_kubeconfig: str, gcjob_hub_args: list[str]
) -> None:
    ns = hub.namespace()
    project = upstream.project("gw-other")
    kept_annotations = {
        "cm-true-cased": "True",
        "cm-yes": "yes",
        "cm-one": "1",
        "cm-space": " true",
    }
    for name, value in kept_annotations.items():
        hub.create(
            companion(
                "ConfigMap", ns, name, ORPHAN_REFERRERS, annotations={PROTECT_ANNOTATION: value}
            )
        )
    for name, value in {"cm-label-true": "true", "cm-label-yes": "yes"}.items():
        obj = companion("ConfigMap", ns, name, ORPHAN_REFERRERS)
        hub.create(_with_labels(obj, {PROTECT_ANNOTATION: value}))
    hub.create(
        companion(
            "ConfigMap", ns, "cm-false", ORPHAN_REFERRERS, annotations={PROTECT_ANNOTATION: "false"}
        )
    )
    # the binding of an orphan companion, protected with a value not understood
    hub.create(companion("Secret", ns, "sec-orphan", ORPHAN_REFERRERS))
    hub.create(
        binding(
            ns,
            "sec-orphan-secret",
            kind="Secret",
            target="sec-orphan",
            annotations={PROTECT_ANNOTATION: "yes"},
        )
    )
    # an orphaned binding (no ConfigMap of its name), protected by a label
    hub.create(
        _with_labels(
            binding(ns, "nothing-configmap", kind="ConfigMap", target="nothing"),
            {PROTECT_ANNOTATION: "1"},
        )
    )
    label = f"cluster-{UPSTREAM_CLUSTER}"
    for name, labels, notes in (
        ("route-label", {PROTECT_ANNOTATION: "true"}, None),
        ("route-cased", {}, {PROTECT_ANNOTATION: "TRUE"}),
    ):
        hub.create(
            route(
                ns,
                name,
                cluster_label=label,
                upstream_namespace=project,
                parents=[{"name": "gw-gone"}],
                extra_labels=labels,
                annotations=notes,
            )
        )

    result = run_gcjob(
        *gcjob_hub_args, "--upstream-kubeconfig", upstream_kubeconfig, "--namespace", ns, "--delete"
    )

    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.outcome("ConfigMap", "cm-false") == ("deleted", "orphaned")
    assert hub.gone("ConfigMap", ns, "cm-false")
    for name in kept_annotations:
        assert result.outcome("ConfigMap", name) == ("skipped", "protect-not-understood"), name
        assert hub.present("ConfigMap", ns, name)
    assert result.outcome("ConfigMap", "cm-label-true") == ("skipped", "protected")
    assert result.outcome("ConfigMap", "cm-label-yes") == ("skipped", "protect-not-understood")
    for name in ("cm-label-true", "cm-label-yes"):
        assert hub.present("ConfigMap", ns, name)
    # the companion goes; its binding, protected, stays
    assert result.outcome("Secret", "sec-orphan") == ("deleted", "orphaned")
    assert result.outcome("ResourceBinding", "sec-orphan-secret") == (
        "skipped",
        "protect-not-understood",
    )
    assert hub.present("ResourceBinding", ns, "sec-orphan-secret")
    assert result.outcome("ResourceBinding", "nothing-configmap") == (
        "skipped",
        "protect-not-understood",
    )
    assert hub.present("ResourceBinding", ns, "nothing-configmap")
    assert result.outcome("HTTPRoute", "route-label") == ("skipped", "protected")
    assert result.outcome("HTTPRoute", "route-cased") == ("skipped", "protect-not-understood")
    for name in ("route-label", "route-cased"):
        assert hub.present("HTTPRoute", ns, name)
    detail = result.item("ConfigMap", "cm-space")
    assert detail is not None and "' true'" in detail["detail"]


def _deployment(hub: TestCluster, ns: str, name: str) -> dict[str, Any]:
    """A Deployment to own things: real, so the hub's garbage collector (which deletes what
    only absent owners own) leaves what it owns alone; no controller runs it."""
    labels = {"app": name}
    return hub.create_at(
        f"/apis/apps/v1/namespaces/{ns}/deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": name, "image": "registry.invalid/web"}]},
                },
            },
        },
    )


def _secret_of_type(ns: str, name: str, secret_type: str, **meta: Any) -> dict[str, Any]:
    obj = companion("Secret", ns, name, ORPHAN_REFERRERS)
    obj["type"] = secret_type
    for key in ("labels", "annotations"):
        obj["metadata"].setdefault(key, {}).update(meta.get(key, {}))
    return obj


def test_what_another_owner_manages_is_kept(
    hub: TestCluster,
    upstream: TestCluster,
    upstream_kubeconfig: str,
    gcjob_hub_args: list[str],
    faults: FaultProxy,
) -> None:
    """Issue 20 item 19: a companion with an ownerReference, a service account token and a
    Helm release Secret carrying the companion label, and a route a controller owns, all stay;
    an ordinary orphan of each kind goes (so the rule, not a broken sweep, kept them)."""
    ns = hub.namespace()
    project = upstream.project("gw-other")
    web = _deployment(hub, ns, "web")
    hub.create(
        owned_by(companion("ConfigMap", ns, "cm-owned", ORPHAN_REFERRERS), web, controller=True)
    )
    hub.create(companion("ConfigMap", ns, "cm-orphan", ORPHAN_REFERRERS))
    hub.create(companion("Secret", ns, "sec-opaque", ORPHAN_REFERRERS))
    # the token controller deletes a token Secret whose ServiceAccount is absent
    hub.create_at(
        f"/api/v1/namespaces/{ns}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}},
    )
    hub.create(
        _secret_of_type(
            ns,
            "sa-token",
            "kubernetes.io/service-account-token",
            annotations={"kubernetes.io/service-account.name": "builder"},
        )
    )
    hub.create(
        _secret_of_type(
            ns,
            "sh.helm.release.v1.web.v1",
            "helm.sh/release.v1",
            labels={"owner": "helm", "name": "web"},
        )
    )
    # no metadata mark at all: only the server's type field selector tells
    hub.create(_secret_of_type(ns, "plain-helm-release", "helm.sh/release.v1"))
    label = f"cluster-{UPSTREAM_CLUSTER}"

    def orphan_route(name: str) -> dict[str, Any]:
        return route(
            ns, name, cluster_label=label, upstream_namespace=project, parents=[{"name": "gone"}]
        )

    other = _deployment(hub, ns, "other")
    hub.create(owned_by(orphan_route("route-owned"), other, controller=True))
    anchor = hub.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"anchor-{uuid.uuid4()}", "namespace": ns},
        }
    )
    hub.create(owned_by(orphan_route("route-anchored"), anchor, controller=True))

    faults.clear_requests()
    result = run_gcjob(
        *gcjob_hub_args, "--upstream-kubeconfig", upstream_kubeconfig, "--namespace", ns, "--delete"
    )
    requests = faults.requests  # gcjob's, before the checks below read the hub themselves

    assert result.exit_code == 0, (result.stdout, result.stderr)
    kept = {
        ("ConfigMap", "cm-owned"): "owned",
        ("Secret", "sa-token"): "owned-secret-type",
        ("Secret", "sh.helm.release.v1.web.v1"): "owned-secret-type",
        ("Secret", "plain-helm-release"): "owned-secret-type",
        ("HTTPRoute", "route-owned"): "owned",
    }
    for (kind, name), reason in kept.items():
        assert result.outcome(kind, name) == ("skipped", reason), name
        assert hub.present(kind, ns, name), name
    deleted = {
        ("ConfigMap", "cm-orphan"): "orphaned",
        ("Secret", "sec-opaque"): "orphaned",
        ("HTTPRoute", "route-anchored"): "upstream-gateways-gone",
    }
    for (kind, name), reason in deleted.items():
        assert result.outcome(kind, name) == ("deleted", reason), name
        assert hub.gone(kind, ns, name), name
    owned = result.item("ConfigMap", "cm-owned")
    assert owned is not None and "controller ownerReference to Deployment web" in owned["detail"]
    # The type proof is a metadata-only list the server filters: no Secret was ever read whole.
    secret_reads = [r for r in requests if "/secrets" in r.path and r.method == "GET"]
    proofs = [r for r in secret_reads if "fieldSelector" in r.query]
    assert proofs, "a Secret was deleted without the type proof"
    for request in secret_reads:
        assert "as=PartialObjectMetadata" in request.accept, request
    for proof in proofs:
        assert "type!=helm.sh/release.v1" in proof.query["fieldSelector"][0]


def test_a_failed_secret_type_proof_keeps_the_secret(
    hub: TestCluster, gcjob_hub_args: list[str], faults: FaultProxy
) -> None:
    ns = hub.namespace()
    hub.create(companion("Secret", ns, "sec-opaque", ORPHAN_REFERRERS))
    faults.add_fault(
        Fault(
            method="GET",
            path=rf"^/api/v1/namespaces/{ns}/secrets$",
            query={"fieldSelector": "*"},
            status=500,
            times=None,
        )
    )

    result = run_gcjob(*gcjob_hub_args, "--sweep", "companions", "--namespace", ns, "--delete")

    assert result.outcome("Secret", "sec-opaque") == ("skipped", "lookup-failed")
    assert hub.present("Secret", ns, "sec-opaque")
    assert result.summary["exit_code"] == result.exit_code


def test_a_secret_of_a_type_gcjob_never_deletes_is_never_marked_and_explain_agrees(
    hub: TestCluster, hub_kubeconfig: str
) -> None:
    """With a grace period the sweep marks before it deletes: the type proof comes first."""
    from testbed.report import explain

    ns = hub.namespace()
    hub.create(_secret_of_type(ns, "plain-helm-release", "helm.sh/release.v1"))
    hub.create(companion("Secret", ns, "sec-opaque", ORPHAN_REFERRERS))
    args = ["--hub-kubeconfig", hub_kubeconfig, "--no-lock", "--min-age", "0s", "--grace", "1h"]

    result = run_gcjob(*args, "--sweep", "companions", "--namespace", ns, "--delete")

    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.outcome("Secret", "plain-helm-release") == ("skipped", "owned-secret-type")
    assert result.outcome("Secret", "sec-opaque") == ("marked", "orphaned")
    kept = hub.get("Secret", ns, "plain-helm-release")
    assert kept is not None
    assert "gcjob.datumapis.com/orphaned" not in (kept["metadata"].get("labels") or {})
    explained = explain(
        "Secret", ns, "plain-helm-release", "--hub-kubeconfig", hub_kubeconfig, "--min-age", "0s"
    )
    assert explained.verdict == ("skipped", "owned-secret-type")
