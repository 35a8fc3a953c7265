"""gcjob/enumerate/hub.py: the referrer index, and reads kept to the run's scope."""

from __future__ import annotations

from typing import Any

import pytest

from gcjob.enumerate.hub import read_workload_index
from gcjob.enumerate.scope import Scope
from gcjob.kube.errors import KubeError
from gcjob.kube.snapshot import SnapshotStore


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
    hub = SnapshotStore("hub", [])
    for obj in objects:
        hub.add(obj)
    return hub


def test_index_is_names_by_namespace() -> None:
    index = read_workload_index(
        store(wd("ns-a", "web"), wd("ns-a", "api"), wd("ns-b", "web")), Scope()
    )
    assert index == {"ns-a": frozenset({"web", "api"}), "ns-b": frozenset({"web"})}


def test_an_item_without_a_namespace_leaves_no_index_at_all() -> None:
    # Filed under "" it would leave its real namespace's companions looking orphaned.
    with pytest.raises(KubeError, match="no namespace"):
        read_workload_index(store(wd("ns-a", "web"), wd(None, "api")), Scope())
