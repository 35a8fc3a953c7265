"""End to end: what says "not yours to delete" on the real hub (issue 20 items 2 and 19):
the protect key in any placement and with any value but "false", and ownership by someone else
(a controller ownerReference, a Secret type gcjob never deletes). `--delete --grace 0s`."""

from __future__ import annotations

from typing import Any

from gcjob.domain import PROTECT_ANNOTATION
from tests.e2e.cluster import TestCluster
from tests.e2e.conftest import UPSTREAM_CLUSTER, run_gcjob
from tests.e2e.objects import binding, companion, gateway, route

ORPHAN_REFERRERS = ["default/gone-wd"]


def _with_labels(obj: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    obj["metadata"].setdefault("labels", {}).update(labels)
    return obj


def test_protect_in_any_placement_with_any_value_but_false_keeps_the_object(
    hub: TestCluster, upstream: TestCluster, upstream_kubeconfig: str, gcjob_hub_args: list[str]
) -> None:
    ns = hub.namespace()
    project = upstream.namespace("project")
    upstream.create(gateway(project, "gw-other"))
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
