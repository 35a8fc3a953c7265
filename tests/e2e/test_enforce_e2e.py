"""End to end, on the real hub with its controllers: the rules every sweep obeys, held by the
driver (gcjob/sweeps/driver.py) for each (issue 46 items 1 and 2). A sweep not named in
`--enforce` deletes nothing, marks and reports `would-delete`; a binding whose ownerReference
names anything but its own resource template is its owner's (`owned`), as a companion's binding
and as an orphaned binding."""

from __future__ import annotations

import uuid

from gcjob.domain import ORPHANED_LABEL
from testbed.cluster import TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER
from testbed.objects import binding, binding_for, companion, owned_by, owner_reference, route
from testbed.report import run_gcjob

ORPHAN_REFERRERS = ["default/gone-wd"]
NOT_ENFORCED = "not deleted: this sweep is not enforced"


def _orphans(hub: TestCluster, upstream: TestCluster, ns: str) -> None:
    """One orphan of each of the first three sweeps: a companion with its binding (Karmada's,
    owned by it), a binding whose ConfigMap is gone, a route whose Gateway is gone."""
    made = hub.create(companion("ConfigMap", ns, "cm-orphan", ORPHAN_REFERRERS))
    hub.create(binding_for(made))
    hub.create(binding(ns, "nothing-configmap", kind="ConfigMap", target="nothing"))
    project = upstream.project("gw-other")
    hub.create(
        route(
            ns,
            "route-orphan",
            cluster_label=f"cluster-{UPSTREAM_CLUSTER}",
            upstream_namespace=project,
            parents=[{"name": "gw-gone"}],
        )
    )


# Each due orphan's reason (a companion's binding goes with it); marked, that binding's is
# `companion-orphaned`.
ORPHANS = {
    ("ConfigMap", "cm-orphan"): "orphaned",
    ("ResourceBinding", "cm-orphan-configmap"): "companion-deleted",
    ("ResourceBinding", "nothing-configmap"): "orphaned",
    ("HTTPRoute", "route-orphan"): "upstream-gateways-gone",
}


def test_a_sweep_not_named_in_enforce_deletes_nothing_and_says_would_delete(
    hub: TestCluster, upstream: TestCluster, upstream_kubeconfig: str, gcjob_hub_args: list[str]
) -> None:
    """Issue 46 item 1: `--enforce copies` with the first three sweeps run deleted their
    orphans (only the copies sweep read --enforce). Now each of them, not enforced, deletes
    nothing and reports `would-delete`; a later run that enforces companions alone deletes the
    companion and its binding, and still none of the others'."""
    ns = hub.namespace()
    _orphans(hub, upstream, ns)
    sweeps = ("--sweep", "companions", "--sweep", "bindings", "--sweep", "routes")
    common = [*gcjob_hub_args, "--upstream-kubeconfig", upstream_kubeconfig, "--namespace", ns]
    common += [*sweeps, "--delete", "--grace", "0s"]

    result = run_gcjob(*common, "--enforce", "copies")

    assert result.exit_code == 0, (result.stdout, result.stderr)
    for (kind, name), reason in ORPHANS.items():
        assert result.outcome(kind, name) == ("would-delete", reason), (kind, name)
        item = result.item(kind, name)
        assert item is not None and NOT_ENFORCED in item["detail"], item
        assert "would_delete_if_enforced_at" in item, item
        assert hub.present(kind, ns, name), (kind, name)
    assert result.summary["would_delete"] == {}  # none of them is an enforced sweep's

    # Enforcing one sweep deletes that sweep's orphans (its binding goes with the companion)
    # and nothing of the sweeps still not enforced.
    result = run_gcjob(*common, "--enforce", "companions")

    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.outcome("ConfigMap", "cm-orphan") == ("deleted", "orphaned")
    assert hub.gone("ConfigMap", ns, "cm-orphan")
    assert result.outcome("ResourceBinding", "cm-orphan-configmap") == (
        "deleted",
        "companion-deleted",
    )
    for kind, name in (("ResourceBinding", "nothing-configmap"), ("HTTPRoute", "route-orphan")):
        assert result.outcome(kind, name) == ("would-delete", ORPHANS[(kind, name)])
        assert hub.present(kind, ns, name), (kind, name)


def test_a_sweep_not_enforced_marks_and_reports_would_delete_after_its_grace(
    hub: TestCluster, upstream: TestCluster, upstream_kubeconfig: str, gcjob_hub_args: list[str]
) -> None:
    """As docs/operating.md says of `--enforce`: the sweeps not named mark (their grace
    period runs as an enforced sweep's would) and report `would-delete`; none deletes."""
    ns = hub.namespace()
    _orphans(hub, upstream, ns)
    common = [*gcjob_hub_args, "--upstream-kubeconfig", upstream_kubeconfig, "--namespace", ns]
    common += ["--sweep", "companions", "--sweep", "bindings", "--sweep", "routes", "--delete"]

    marked = run_gcjob(*common, "--enforce", "copies", "--grace", "1h")

    assert marked.exit_code == 0, (marked.stdout, marked.stderr)
    for kind, name in ORPHANS:
        reason = ORPHANS[(kind, name)].replace("companion-deleted", "companion-orphaned")
        assert marked.outcome(kind, name) == ("marked", reason), (kind, name)
        found = hub.get(kind, ns, name)
        assert found is not None and ORPHANED_LABEL in found["metadata"].get("labels", {})
    due = run_gcjob(*common, "--enforce", "copies", "--grace", "0s")
    assert due.exit_code == 0, (due.stdout, due.stderr)
    for kind, name in ORPHANS:
        assert due.outcome(kind, name) == ("would-delete", ORPHANS[(kind, name)]), (kind, name)
        assert hub.present(kind, ns, name), (kind, name)


def test_a_binding_another_object_owns_is_kept_owned(
    hub: TestCluster, gcjob_hub_args: list[str]
) -> None:
    """Issue 46 item 2: a binding whose controller ownerReference names a live ConfigMap other
    than its own spec.resource was deleted, as a companion's binding and as an orphaned
    binding. Its owner manages it (`owned`), as the hub's garbage collector, which keeps it
    while that owner lives, would; Karmada's own binding (its owner is its resource template)
    still goes, so the rule, not a broken sweep, kept them."""
    ns = hub.namespace()
    live = hub.create(companion("ConfigMap", ns, "live-owner", None, labelled=False))
    # A companion orphaned, its binding owned by the live ConfigMap, not by the companion.
    made = hub.create(companion("ConfigMap", ns, "cm-orphan", ORPHAN_REFERRERS))
    taken = binding_for(made)
    taken["metadata"]["ownerReferences"] = [owner_reference(live, controller=True)]
    hub.create(taken)
    # An orphaned binding (no ConfigMap of its name), owned by the live ConfigMap.
    gone = str(uuid.uuid4())
    orphaned = binding(ns, "gone-configmap", kind="ConfigMap", target="gone", target_uid=gone)
    hub.create(owned_by(orphaned, live, controller=True))
    # Beside them, Karmada's: a companion's binding its companion owns, and an orphaned binding
    # with no owner left (its template's delete orphaned it: the collector removed the
    # reference).
    mine = hub.create(companion("Secret", ns, "sec-orphan", ORPHAN_REFERRERS))
    hub.create(binding_for(mine))
    hub.create(binding(ns, "nothing-configmap", kind="ConfigMap", target="nothing"))

    result = run_gcjob(*gcjob_hub_args, "--namespace", ns, "--delete", "--grace", "0s")

    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.outcome("ConfigMap", "cm-orphan") == ("deleted", "orphaned")
    for name in ("cm-orphan-configmap", "gone-configmap"):
        assert result.outcome("ResourceBinding", name) == ("skipped", "owned"), name
        item = result.item("ResourceBinding", name)
        assert item is not None and "ConfigMap live-owner" in item["detail"], item
        assert hub.present("ResourceBinding", ns, name), name
    assert hub.present("ConfigMap", ns, "live-owner")
    assert result.outcome("ResourceBinding", "sec-orphan-secret") == (
        "deleted",
        "companion-deleted",
    )
    assert result.outcome("ResourceBinding", "nothing-configmap") == ("deleted", "orphaned")
    deleted = ("ResourceBinding", "sec-orphan-secret"), ("Secret", "sec-orphan")
    for kind, name in (*deleted, ("ResourceBinding", "nothing-configmap")):
        assert hub.gone(kind, ns, name), (kind, name)
