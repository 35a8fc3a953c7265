"""gcjob/kube/access.py over real HTTP: folding pages, proving absence, pinned deletes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gcjob.budget import RunBudget
from gcjob.kube import reduce
from gcjob.kube.access import DeleteResult, KubeAccess
from gcjob.kube.connect import hub_client
from gcjob.kube.errors import ApiError, KubeError
from gcjob.kube.resources import CONFIGMAPS, RESOURCEBINDINGS
from gcjob.kube.transport import RequestStats, Transport
from tests.fakekube import FakeKube, Fault
from tests.fakekube.resources import crds_dir

NS = "ns-access"


@pytest.fixture(scope="module")
def kube() -> Iterator[FakeKube]:
    crd = crds_dir() / "karmada-work.karmada.io_resourcebindings.yaml"
    with FakeKube(crd_paths=[crd]) as server:
        server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        for i in range(7):
            server.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"cm-{i}", "namespace": NS},
                }
            )
        yield server


@pytest.fixture
def access(kube: FakeKube, tmp_path: Path) -> Iterator[KubeAccess]:
    client = hub_client(kube.write_kubeconfig(str(tmp_path / "kc"), "hub"), None)
    transport = Transport(client, "hub", stats=RequestStats(), budget=RunBudget(None))
    yield KubeAccess(transport, page_size=2)
    kube.clear_faults()


class Counting:
    started = 0

    def __init__(self) -> None:
        Counting.started += 1
        self.names: list[str] = []

    def add(self, name: str) -> None:
        self.names.append(name)


def test_fold_restarts_into_a_fresh_sink_on_an_expired_continue_token(
    kube: FakeKube, access: KubeAccess
) -> None:
    kube.add_fault(
        Fault(
            method="GET", path=f"/namespaces/{NS}/configmaps$", status=410, query={"continue": "*"}
        )
    )
    Counting.started = 0

    sink = access.fold(CONFIGMAPS, reduce.name_of, Counting, namespace=NS)

    assert Counting.started == 2  # the partial pages went with the first sink
    assert sink.names == [f"cm-{i}" for i in range(7)]


def test_absence_is_proven_only_by_a_not_found_for_that_name(
    kube: FakeKube, access: KubeAccess
) -> None:
    assert access.get(CONFIGMAPS, NS, "missing", reduce.name_of) is None
    assert access.get(CONFIGMAPS, NS, "cm-1", reduce.name_of) == "cm-1"

    kube.add_fault(
        Fault(
            method="GET",
            path="/configmaps/other$",
            status=404,
            body={
                "kind": "Status",
                "reason": "NotFound",
                "details": {"name": "someone-else", "kind": "configmaps"},
            },
        )
    )
    with pytest.raises(ApiError):
        access.get(CONFIGMAPS, NS, "other", reduce.name_of)

    kube.add_fault(
        Fault(method="GET", path="/configmaps/plain$", status=404, body="404 page not found")
    )
    with pytest.raises(ApiError):
        access.get(CONFIGMAPS, NS, "plain", reduce.name_of)


def test_a_resource_that_is_not_served_is_not_served(access: KubeAccess) -> None:
    assert access.served(RESOURCEBINDINGS) is True
    assert access.served(CONFIGMAPS) is True
    from gcjob.kube.resources import GATEWAYS

    assert access.served(GATEWAYS) is False


def test_deletes_are_pinned_and_refused_without_a_pin(kube: FakeKube, access: KubeAccess) -> None:
    obj = kube.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pinned", "namespace": NS}}
    )
    meta = obj["metadata"]

    assert access.delete(CONFIGMAPS, NS, "pinned", "other-uid", meta["resourceVersion"]) is (
        DeleteResult.CONFLICT
    )
    assert access.delete(CONFIGMAPS, NS, "pinned", meta["uid"], meta["resourceVersion"]) is (
        DeleteResult.DELETED
    )
    assert access.delete(CONFIGMAPS, NS, "pinned", meta["uid"], meta["resourceVersion"]) is (
        DeleteResult.GONE
    )
    with pytest.raises(KubeError, match="no uid/resourceVersion"):
        access.delete(CONFIGMAPS, NS, "cm-0", "", "")


def test_an_answer_naming_another_object_is_no_answer(kube: FakeKube, access: KubeAccess) -> None:
    kube.add_fault(
        Fault(
            method="GET",
            path="/configmaps/wanted$",
            status=200,
            body={"kind": "ConfigMapList", "metadata": {}, "items": []},
        )
    )
    with pytest.raises(ApiError, match="answer names None"):
        access.get(CONFIGMAPS, NS, "wanted", reduce.name_of)
