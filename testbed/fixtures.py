"""The pytest fixtures of the test bed (tests/conftest.py registers them): a hub and an
upstream, each started once a session when a test first asks for it, and what a test uses
of them.

Each session starts two real kube-apiserver + etcd pairs (testbed/servers.py): a hub
serving the Karmada, compute and Gateway API CRDs, with the kube-controller-manager a Karmada
hub runs beside it (deleted namespaces finish, ownerReferences cascade), and an upstream
serving Gateway API, a bare API server as a project's control plane is. With
GCJOB_E2E_HUB_KUBECONFIG (and GCJOB_E2E_UPSTREAM_KUBECONFIG) the same tests run against those
clusters instead (testbed/endpoints.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from testbed.cluster import TestCluster
from testbed.endpoints import HUB_CONTEXT, UPSTREAM_CLUSTER, Endpoint, from_environment
from testbed.faultproxy import FaultProxy
from testbed.report import HubSweep
from testbed.servers import HUB_CRDS, UPSTREAM_CRDS, AssetsMissing, binaries, crds_dir

NO_CONTROLLERS = (
    "the hub runs no controllers: KUBEBUILDER_ASSETS holds no kube-controller-manager, and "
    "this test needs its garbage collector, namespace or token controller (docs/testing.md)"
)
Collect = Callable[..., None]


def _endpoint(
    work_factory: pytest.TempPathFactory,
    name: str,
    context: str,
    crds: tuple[str, ...],
    env_prefix: str,
    *,
    controllers: bool = False,
) -> Iterator[Endpoint]:
    if not os.environ.get(f"{env_prefix}_KUBECONFIG"):
        try:
            binaries()
            crds_dir()
        except AssetsMissing as missing:
            # A short failure, not a traceback (the whole suite stops before it starts:
            # tests/conftest.py).
            pytest.fail(str(missing), pytrace=False)
    work = work_factory.mktemp(name)
    with from_environment(work, name, context, crds, env_prefix, controllers=controllers) as found:
        yield found


@pytest.fixture(scope="session")
def hub_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    yield from _endpoint(
        tmp_path_factory, "hub", HUB_CONTEXT, HUB_CRDS, "GCJOB_E2E_HUB", controllers=True
    )


@pytest.fixture(scope="session")
def upstream_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    yield from _endpoint(
        tmp_path_factory, "upstream", UPSTREAM_CLUSTER, UPSTREAM_CRDS, "GCJOB_E2E_UPSTREAM"
    )


@pytest.fixture(scope="session")
def hub_kubeconfig(hub_endpoint: Endpoint) -> str:
    return hub_endpoint.kubeconfig


@pytest.fixture(scope="session")
def upstream_kubeconfig(upstream_endpoint: Endpoint) -> str:
    """Its context is named UPSTREAM_CLUSTER, so route labels can name it."""
    return upstream_endpoint.kubeconfig


@pytest.fixture
def hub(hub_endpoint: Endpoint) -> Iterator[TestCluster]:
    cluster = TestCluster(
        hub_endpoint.kubeconfig,
        hub_endpoint.context,
        collects_garbage=hub_endpoint.collects_garbage,
    )
    yield cluster
    cluster.cleanup()


@pytest.fixture
def upstream(upstream_endpoint: Endpoint) -> Iterator[TestCluster]:
    cluster = TestCluster(
        upstream_endpoint.kubeconfig,
        upstream_endpoint.context,
        collects_garbage=upstream_endpoint.collects_garbage,
    )
    yield cluster
    cluster.cleanup()


@pytest.fixture
def hub_controllers(hub_endpoint: Endpoint) -> None:
    """For a test that needs the hub's controllers (garbage collector, namespace, tokens): on
    a hub without them (KUBEBUILDER_ASSETS holding no kube-controller-manager) it is skipped,
    saying so, never passed."""
    if not hub_endpoint.collects_garbage:
        pytest.skip(NO_CONTROLLERS)


@pytest.fixture
def hub_collects_garbage(hub: TestCluster, hub_controllers: None) -> Collect:
    """`hub_collects_garbage(owner, *dependents)`: the hub's garbage collector deletes each of
    `dependents` once `owner` is deleted with propagationPolicy Background (TestCluster
    collected()): the positive control of a test that shows something was *not* collected,
    and the proof that the hub cascades as a Karmada hub does."""
    return hub.collected


@pytest.fixture
def faults(hub: TestCluster, hub_endpoint: Endpoint) -> Iterator[FaultProxy]:
    """The proxy in front of the hub, its faults cleared afterwards (before `hub` cleans up)
    and its request log starting empty."""
    hub_endpoint.proxy.clear_requests()
    yield hub_endpoint.proxy
    hub_endpoint.proxy.clear_faults()


@pytest.fixture
def upstream_faults(upstream: TestCluster, upstream_endpoint: Endpoint) -> Iterator[FaultProxy]:
    upstream_endpoint.proxy.clear_requests()
    yield upstream_endpoint.proxy
    upstream_endpoint.proxy.clear_faults()


@pytest.fixture
def gcjob_hub_args(hub_kubeconfig: str, hub: TestCluster) -> list[str]:
    """`gcjob sweep` against the hub, deciding at once: no lock, no minimum age, no grace."""
    return ["--hub-kubeconfig", hub_kubeconfig, "--no-lock", "--min-age", "0s", "--grace", "0s"]


@pytest.fixture
def sweep(gcjob_hub_args: list[str]) -> HubSweep:
    """`sweep(ns, *args)`: gcjob against the hub, kept to the namespace `ns` a test made."""
    return HubSweep(tuple(gcjob_hub_args))


@pytest.fixture
def routes_args(gcjob_hub_args: list[str], upstream_kubeconfig: str) -> list[str]:
    """The routes sweep against the hub, its upstream cluster the upstream server."""
    return [*gcjob_hub_args, "--upstream-kubeconfig", upstream_kubeconfig, "--sweep", "routes"]
