"""gcjob/sweeps/companions/scan.py: the referrer index, and reads kept to the run's scope."""

from __future__ import annotations

import time
from typing import Any

import pytest

from gcjob.enumerate.parallel import Reads
from gcjob.enumerate.scope import Scope
from gcjob.kube.access import Collected
from gcjob.kube.errors import KubeError
from gcjob.kube.snapshot import SnapshotStore
from gcjob.sweeps.companions.scan import scan_companions, scan_workload_index
from testbed.objects import companion, workload


def wd(namespace: str | None, name: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {
        "apiVersion": "compute.datumapis.com/v1alpha",
        "kind": "WorkloadDeployment",
        "metadata": meta,
    }


def store(*objects: dict[str, Any]) -> SnapshotStore:
    hub = SnapshotStore("hub", [], every_kind=True)
    for obj in objects:
        hub.add(obj)
    return hub


def test_index_is_names_by_namespace() -> None:
    index = scan_workload_index(
        store(workload("ns-a", "web"), workload("ns-a", "api"), workload("ns-b", "web")), Scope()
    )
    assert len(index) == 3
    assert "web" in index.within("ns-a") and "api" in index.within("ns-a")
    assert "web" in index.within("ns-b") and "api" not in index.within("ns-b")
    assert "web" not in index.within("ns-c")


def test_an_item_without_a_namespace_leaves_no_index_at_all() -> None:
    # Filed under "" it would leave its real namespace's companions looking orphaned.
    nowhere = workload("ns-a", "api")
    del nowhere["metadata"]["namespace"]
    with pytest.raises(KubeError, match="no namespace"):
        scan_workload_index(store(workload("ns-a", "web"), nowhere), Scope())


class SlowStore(SnapshotStore):
    """A hub whose every list takes 0.3 s."""

    def fold(self, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)
        return super().fold(*args, **kwargs)


def test_companion_lists_are_read_at_once_in_the_order_asked() -> None:
    """ConfigMaps and Secrets of two namespaces: four lists of 0.3 s, at once."""
    hub = SlowStore("hub", [])
    for namespace in ("ns-b", "ns-a"):
        for kind in ("Secret", "ConfigMap"):
            for name in ("z", "a"):
                hub.add(companion(kind, namespace, f"{kind.lower()}-{name}", None))
    scope = Scope(("ns-b", "ns-a"))

    def names(reads: Reads) -> tuple[list[list[str]], float]:
        started = time.monotonic()
        sinks = scan_companions(hub, scope, Collected, reads)
        elapsed = time.monotonic() - started
        return [sorted(c.ref.name for c in sink.records) for sink in sinks], elapsed

    pool = Reads(4, "test")
    try:
        at_once, fast = names(pool)
    finally:
        pool.close()
    one_by_one, slow = names(Reads(1, "test"))
    assert slow >= 1.2
    assert fast < slow / 2
    # One sink per resource and namespace, in that order: ConfigMaps of ns-b, of ns-a, ...
    assert (
        at_once
        == one_by_one
        == [
            ["configmap-a", "configmap-z"],
            ["configmap-a", "configmap-z"],
            ["secret-a", "secret-z"],
            ["secret-a", "secret-z"],
        ]
    )
