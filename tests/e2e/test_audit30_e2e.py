"""Issue 30's fixes attacked with inputs nobody listed, on the real server pair: what broke,
held by a test each (the audit of the copy rule, the Project API and the second looks)."""

from __future__ import annotations

from typing import Any

from testbed.cluster import TestCluster
from testbed.faultproxy import Fault, FaultProxy
from testbed.milo import CONNECTORS, present
from testbed.report import run_gcjob
from tests.e2e.test_copies_e2e import (  # noqa: F401  (fixtures: the Milo proxy and its CRDs)
    milo,
    milo_kubeconfig,
    served,
)
from tests.e2e.test_drain_e2e import marked
from tests.e2e.test_project_api_e2e import PROJECT_API, make_world


def connector(hub: TestCluster, ns: str, name: str) -> dict[str, Any] | None:
    status, body = hub._call("GET", CONNECTORS.format(namespace=ns) + "/" + name)
    return body if status == 200 else None


def test_a_marked_copy_kept_on_a_later_run_has_its_mark_removed_not_an_internal_error(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    milo: FaultProxy,  # noqa: F811
    milo_kubeconfig: str,  # noqa: F811
) -> None:
    """Copies marked as their project's (gone) in one run, and the Project API failing in the
    next: each copy is kept as the lookup failure it is and its mark removed (as every sweep
    removes the mark of what it keeps), exit 1. Before, every kept copy's mark removal raised
    (no target to name its resource): `internal-error`, exit 3, and the mark stayed, so its
    grace counted on from the old mark whatever the runs between saw."""
    world = make_world(hub, upstream, milo, groups=2)
    run = [*world.args(gcjob_hub_args, milo_kubeconfig, milo), "--grace", "1h"]
    first = run_gcjob(*run)
    assert first.exit_code == 0, first.stderr
    names = [f"web-{i}" for i in range(world.groups)]
    assert all(marked(connector(hub, world.ns, name)) for name in names)
    milo.add_fault(Fault(path=PROJECT_API, status=503, times=None))

    second = run_gcjob(*run)

    assert second.exit_code == 1, (second.stderr, second.summary["sweeps"])
    assert not [i for i in second.items if i["reason"] == "internal-error"], second.stderr
    for name in names:
        item = second.item("Connector", name)
        assert item is not None and item["action"] == "unmarked", item
        assert not marked(connector(hub, world.ns, name))
        assert present(hub, "Connector", world.ns, name)
