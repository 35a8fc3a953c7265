"""Aggregated discovery (issue 33 item 1): an upstream reader learns what its cluster serves
from `/api` and `/apis` (apidiscovery.k8s.io/v2), each read once, and answers exactly as a
group's own documents would; a group's own documents only where the aggregated ones are not
served or cannot vouch for it. On a real server behind the fault proxy, and as pure parsing."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.budget import RunBudget
from gcjob.kube import discovery
from gcjob.kube.access import Discovered, KubeAccess
from gcjob.kube.connect import hub_client
from gcjob.kube.errors import KubeError
from gcjob.kube.resources import CONFIGMAPS, GATEWAYS, HTTPROUTES, Resource
from gcjob.kube.transport import RequestStats, Transport
from testbed.faultproxy import Fault, FaultProxy

GROUPS = ("", "gateway.networking.k8s.io", "work.karmada.io", "apps", "not.served.example")


def reader(
    kubeconfig: str,
    aggregated: bool,
    groups: tuple[str, ...] = GROUPS,
    discovered: Discovered | None = None,
) -> KubeAccess:
    transport = Transport(
        hub_client(kubeconfig, None), "hub", stats=RequestStats(), budget=RunBudget(None)
    )
    return KubeAccess(
        transport,
        aggregated_discovery=aggregated,
        discovery_groups=frozenset(groups),
        discovered=discovered,
    )


def asked(faults: FaultProxy) -> list[str]:
    return [r.path for r in faults.requests]


def test_aggregated_discovery_answers_as_each_groups_documents_in_two_requests(
    faults: FaultProxy, hub_kubeconfig: str
) -> None:
    legacy = reader(hub_kubeconfig, aggregated=False)
    expected = {group: legacy.kinds(group) for group in GROUPS}
    served = {r: legacy.served(r) for r in (CONFIGMAPS, GATEWAYS, HTTPROUTES)}
    faults.clear_requests()

    aggregated = reader(hub_kubeconfig, aggregated=True)
    for _ in range(2):  # the second time from what was read
        assert {group: aggregated.kinds(group) for group in GROUPS} == expected
        assert {r: aggregated.served(r) for r in served} == served

    assert expected[""] is not None and expected["not.served.example"] is None
    assert served[GATEWAYS]
    assert sorted(asked(faults)) == ["/api", "/apis"]
    # A group that was not among those to keep costs its document once more.
    faults.clear_requests()
    assert aggregated.kinds("batch") is not None
    assert asked(faults) == ["/apis"]
    accept = {r.headers["accept"] for r in faults.requests if r.path in ("/api", "/apis")}
    assert accept == {
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    }


def test_readers_of_one_server_share_what_its_discovery_said_and_no_other_server_does(
    faults: FaultProxy, hub_kubeconfig: str
) -> None:
    """An upstream cluster's reader is made for each use (kube/upstreams.py): what its
    discovery said is kept once for the cluster, not read again by its next reader. Another
    cluster keeps its own proof: it reads its own documents, and only the map of equal
    answers is one object."""
    faults.clear_requests()
    one_cluster = Discovered()
    first = reader(hub_kubeconfig, aggregated=True, discovered=one_cluster)
    expected = {group: first.kinds(group) for group in GROUPS}
    assert sorted(asked(faults)) == ["/api", "/apis"]
    faults.clear_requests()

    again = reader(hub_kubeconfig, aggregated=True, discovered=one_cluster)
    assert {group: again.kinds(group) for group in GROUPS} == expected
    assert asked(faults) == []  # from what the cluster's first reader read

    another_cluster = Discovered()
    other = reader(hub_kubeconfig, aggregated=True, discovered=another_cluster)
    assert {group: other.kinds(group) for group in GROUPS} == expected
    assert sorted(asked(faults)) == ["/api", "/apis"]  # its own proof that it answers
    assert another_cluster.groups is one_cluster.groups  # equal answers: one map


def test_a_server_without_aggregated_discovery_is_read_group_by_group(
    faults: FaultProxy, hub_kubeconfig: str
) -> None:
    expected = reader(hub_kubeconfig, aggregated=False).kinds("gateway.networking.k8s.io")
    # As a server before 1.26 answers: the legacy APIGroupList, whatever was asked for.
    legacy = {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
    faults.add_fault(Fault(path=r"^/apis$", status=200, body=legacy, times=None))
    faults.clear_requests()

    access = reader(hub_kubeconfig, aggregated=True)

    assert access.kinds("gateway.networking.k8s.io") == expected
    assert asked(faults)[:2] == ["/apis", "/apis/gateway.networking.k8s.io"]
    assert access.served(GATEWAYS)


def test_a_stale_group_is_read_from_its_own_documents(
    faults: FaultProxy, hub_kubeconfig: str
) -> None:
    access = reader(hub_kubeconfig, aggregated=True)
    document = _aggregated_apis(hub_kubeconfig)
    for item in document["items"]:
        if item["metadata"]["name"] == "gateway.networking.k8s.io":
            for version in item["versions"]:
                version["freshness"] = "Stale"
                version["resources"] = []  # what a stale version may say: nothing
    faults.add_fault(Fault(path=r"^/apis$", status=200, body=document, times=None))
    faults.clear_requests()

    assert access.served(GATEWAYS)
    assert "/apis/gateway.networking.k8s.io/v1" in asked(faults)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, None),
        (403, None),
        (200, "<html>not discovery</html>"),
        (
            200,
            {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "items": "x"},
        ),
    ],
)
def test_an_answer_that_cannot_be_read_is_no_answer_and_is_not_kept(
    faults: FaultProxy, hub_kubeconfig: str, status: int, body: Any
) -> None:
    access = reader(hub_kubeconfig, aggregated=True)
    faults.add_fault(Fault(path=r"^/apis$", status=status, body=body, times=None))

    with pytest.raises(KubeError):
        access.served(GATEWAYS)
    with pytest.raises(KubeError):
        access.kinds("gateway.networking.k8s.io")

    faults.clear_faults()
    assert access.served(GATEWAYS)  # asked again: nothing of the failure was kept


def test_a_404_serves_nothing(faults: FaultProxy, hub_kubeconfig: str) -> None:
    """A deleted project's control plane (or a wrong URL): 404 for every path."""
    access = reader(hub_kubeconfig, aggregated=True)
    faults.add_fault(Fault(path=r"^/apis?$", status=404, body="404 page not found\n", times=None))

    assert access.kinds("") is None
    assert access.kinds("gateway.networking.k8s.io") is None
    assert not access.served(GATEWAYS)


def test_unserve_takes_a_group_version_out_of_the_aggregated_document(
    faults: FaultProxy, hub_kubeconfig: str
) -> None:
    faults.unserve("gateway.networking.k8s.io", "v1")
    assert not reader(hub_kubeconfig, aggregated=True).served(GATEWAYS)
    faults.serve("gateway.networking.k8s.io", "v1")
    assert reader(hub_kubeconfig, aggregated=True).served(GATEWAYS)


def _aggregated_apis(kubeconfig: str) -> dict[str, Any]:
    access = reader(kubeconfig, aggregated=True)
    response = access.transport.send(discovery_request())
    body: dict[str, Any] = json.loads(response.body)
    return body


def discovery_request() -> Any:
    from gcjob.kube import requests

    return requests.aggregated_discovery(core=False)


# -- pure: the aggregated document read as the group's own documents would be ------------

NAME = st.text("abcdefghijklmnopqrstuvwxyz.", min_size=1, max_size=12)
RESOURCE = st.fixed_dictionaries(
    {
        "name": st.one_of(NAME, NAME.map(lambda n: f"{n}/status")),
        "kind": st.sampled_from(["Gateway", "Connector", "Widget", ""]),
        "namespaced": st.booleans(),
    }
)
VERSION = st.tuples(
    st.sampled_from(["v1", "v1beta1", "v1alpha1", "v2"]), st.lists(RESOURCE, max_size=5)
)


@given(
    st.dictionaries(
        NAME, st.lists(VERSION, min_size=1, max_size=3, unique_by=lambda v: v[0]), max_size=4
    )
)
def test_aggregated_reads_as_the_legacy_documents(groups: dict[str, list[Any]]) -> None:
    """Whatever a server serves, the aggregated document of it gives each group the same kinds
    as that group's own APIResourceLists do (subresources and unreadable entries skipped)."""
    document = {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "items": [
            {
                "metadata": {"name": group},
                "versions": [
                    {
                        "version": version,
                        "resources": [
                            {
                                "resource": r["name"].split("/")[0],
                                "responseKind": {"kind": r["kind"]},
                                "scope": "Namespaced" if r["namespaced"] else "Cluster",
                            }
                            for r in resources
                            if "/" not in r["name"]  # aggregated: subresources are nested
                        ],
                    }
                    for version, resources in versions
                ],
            }
            for group, versions in groups.items()
        ],
    }
    read = discovery.aggregated(document, core=False)
    assert read is not None
    for group, versions in groups.items():
        legacy = [
            discovery.resources_by_kind(group, v, {"resources": resources})
            for v, resources in versions
        ]
        found = read.versions(group)
        assert found is not None
        assert discovery.merge_versions([k for _, k in found]) == discovery.merge_versions(legacy)
    assert read.versions("never.named") is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=20,
)


@given(
    st.one_of(
        JSON,
        JSON.map(
            lambda items: {
                "kind": "APIGroupDiscoveryList",
                "apiVersion": "apidiscovery.k8s.io/v2",
                "items": items,
            }
        ),
    )
)
def test_any_answer_is_read_or_refused_never_a_crash(body: Any) -> None:
    try:
        read = discovery.aggregated(body, core=False)
    except ValueError:
        return
    for versions in read.groups.values() if read is not None else ():
        for _, kinds in versions:
            for resources in kinds.values():
                assert all(isinstance(r, Resource) and "/" not in r.plural for r in resources)


def test_a_group_named_twice_or_stale_is_not_vouched_for() -> None:
    item = {"metadata": {"name": "g.example"}, "versions": [{"version": "v1", "resources": []}]}
    stale = {
        "metadata": {"name": "s.example"},
        "versions": [{"version": "v1", "freshness": "Stale"}],
    }
    read = discovery.aggregated(
        {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "items": [item, item, stale],
        },
        core=False,
    )
    assert read is not None
    assert read.unsure == {"g.example", "s.example"}


def test_the_core_document_serves_the_core_group_only() -> None:
    core = {
        "metadata": {},
        "versions": [
            {
                "version": "v1",
                "resources": [
                    {
                        "resource": "configmaps",
                        "responseKind": {"kind": "ConfigMap"},
                        "scope": "Namespaced",
                    }
                ],
            }
        ],
    }
    other = {"metadata": {"name": "apps"}, "versions": []}
    read = discovery.aggregated(
        {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "items": [core, other],
        },
        core=True,
    )
    assert read is not None
    assert discovery.serves(read.versions(""), CONFIGMAPS)
    assert read.versions("apps") is None


@given(
    JSON.map(
        lambda items: {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "items": items,
        }
    ),
    st.sets(st.text(max_size=8), max_size=3),
)
def test_a_document_read_for_some_groups_says_of_them_what_the_whole_says(
    body: Any, only: set[str]
) -> None:
    """The rest of a document is skipped unread; the groups asked about read as from the
    whole: the same versions, the same doubt (named twice, stale)."""
    try:
        whole = discovery.aggregated(body, core=False)
    except ValueError:
        with pytest.raises(ValueError):
            discovery.aggregated(body, core=False, only=only)
        return
    part = discovery.aggregated(body, core=False, only=only)
    assert whole is not None and part is not None
    assert part.groups == {g: v for g, v in whole.groups.items() if g in only}
    assert part.unsure == whole.unsure & only


def test_equal_answers_are_one_answer_and_one_mapping_of_kinds() -> None:
    """Every upstream cluster serving the same group holds one copy of its kinds, not one
    each (kept for the run by each cluster's owner lookups)."""
    resource = Resource("interned.example", "v1", "things", "Thing", True)
    first = (("v1", {"Thing": (resource,)}),)
    second = (("v1", {"Thing": (Resource("interned.example", "v1", "things", "Thing", True),)}),)
    one, other = discovery.interned(first), discovery.interned(second)
    assert one is other is first
    assert one is not None and other is not None
    assert discovery.kinds_of(one) is discovery.kinds_of(other)  # not merged again a reader
    assert discovery.kinds_of(one) == discovery.merge_versions([{"Thing": (resource,)}])
    assert discovery.kinds_of(second) == discovery.kinds_of(one)  # not interned: merged anew


EXAMPLES = itertools.count()


@given(
    JSON.map(
        lambda items: {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "items": items,
        }
    ),
    st.sets(st.text(max_size=8), max_size=3),
)
def test_equal_answers_are_decoded_once_and_read_as_each_alone(body: Any, only: set[str]) -> None:
    """Every cluster asks for its own document; equal bytes are decoded once, and read as
    decoding them again would (a fleet of control planes serving the same groups)."""
    # Bytes no other example sent (the documents read last are kept between examples).
    raw = b"\n" * next(EXAMPLES) + json.dumps(body).encode()
    decoded: list[bytes] = []

    def decode(data: bytes) -> Callable[[], Any]:
        def run() -> Any:
            decoded.append(data)
            return json.loads(data)

        return run

    try:
        alone = discovery.aggregated(json.loads(raw), core=False, only=only)
    except ValueError:
        with pytest.raises(ValueError):
            discovery.read_aggregated(raw, False, frozenset(only), decode(raw))
        return
    first = discovery.read_aggregated(raw, False, frozenset(only), decode(raw))
    again = bytes(bytearray(raw))  # equal bytes, another object: another cluster's answer
    second = discovery.read_aggregated(again, False, frozenset(only), decode(again))
    assert first == second == alone
    assert decoded == [raw]
    other = raw + b"\t"  # not the same bytes: decoded on its own
    assert discovery.read_aggregated(other, False, frozenset(only), decode(other)) == alone
    assert decoded == [raw, other]
