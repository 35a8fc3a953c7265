"""What the namespaces sweep reads of the hub: a namespace reduced to what its judgement needs
(its two upstream labels, owners, protection), and the refusal to guess from a source without
the hub's discovery (a snapshot): which kinds a namespace may hold is unknown there. Its reads
of the real hub: tests/e2e/test_namespaces_e2e.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from gcjob.domain import UPSTREAM_CLUSTER_LABEL, UPSTREAM_NAMESPACE_LABEL
from gcjob.kube.errors import KubeError
from gcjob.kube.snapshot import Snapshot
from gcjob.sweeps.namespaces.scan import KEPT_LABELS, SELECTOR, hub_namespace, what_it_deletes

DEMO = Path(__file__).resolve().parents[3] / "fixtures" / "demo"


def _namespace(labels: dict[str, str]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "ns-0f8b1a2c-3d4e-4f50-8a6b-7c8d9e0f1a2b",
            "uid": "u-1",
            "resourceVersion": "3",
            "creationTimestamp": "2026-11-01T00:00:00Z",
            "labels": labels,
        },
    }


def test_the_server_selects_namespaces_carrying_both_labels() -> None:
    assert SELECTOR.split(",") == [UPSTREAM_CLUSTER_LABEL, UPSTREAM_NAMESPACE_LABEL]


def test_a_namespace_keeps_its_two_upstream_labels_and_nothing_else() -> None:
    labels = {
        UPSTREAM_CLUSTER_LABEL: "cluster-proj",
        UPSTREAM_NAMESPACE_LABEL: "default",
        "team": "payments",
    }
    reduced = hub_namespace(_namespace(labels))
    assert set(KEPT_LABELS) == {UPSTREAM_CLUSTER_LABEL, UPSTREAM_NAMESPACE_LABEL}
    assert dict(reduced.labels) == {k: labels[k] for k in KEPT_LABELS}
    assert reduced.ref.uid == "u-1" and reduced.ref.resource_version == "3"


def test_without_the_hubs_discovery_what_a_namespace_may_hold_is_not_guessed() -> None:
    with pytest.raises(KubeError, match="no discovery"):
        what_it_deletes(Snapshot(str(DEMO)).hub)
