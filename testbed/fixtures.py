"""The pytest fixtures of the test bed (tests/conftest.py registers them): a hub and an
upstream, each started once a session when a test first asks for it, and what a test uses
of them.

Each session starts two real kube-apiserver + etcd pairs (testbed/servers.py): a hub
serving the Karmada, compute and Gateway API CRDs, and an upstream serving Gateway API. With
GCJOB_E2E_HUB_KUBECONFIG (and GCJOB_E2E_UPSTREAM_KUBECONFIG) the same tests run against those
clusters instead (testbed/endpoints.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from testbed.cluster import TestCluster
from testbed.endpoints import HUB_CONTEXT, UPSTREAM_CLUSTER, Endpoint, from_environment
from testbed.faultproxy import FaultProxy
from testbed.report import HubSweep
from testbed.servers import HUB_CRDS, UPSTREAM_CRDS, AssetsMissing, assets_dir, crds_dir


def _endpoint(
    work_factory: pytest.TempPathFactory,
    name: str,
    context: str,
    crds: tuple[str, ...],
    env_prefix: str,
) -> Iterator[Endpoint]:
    if not os.environ.get(f"{env_prefix}_KUBECONFIG"):
        try:
            assets_dir()
            crds_dir()
        except AssetsMissing as missing:
            # A short failure, not a traceback (the whole suite stops before it starts:
            # tests/conftest.py).
            pytest.fail(str(missing), pytrace=False)
    with from_environment(work_factory.mktemp(name), name, context, crds, env_prefix) as found:
        yield found


@pytest.fixture(scope="session")
def hub_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    yield from _endpoint(tmp_path_factory, "hub", HUB_CONTEXT, HUB_CRDS, "GCJOB_E2E_HUB")


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
    cluster = TestCluster(hub_endpoint.kubeconfig, hub_endpoint.context)
    yield cluster
    cluster.cleanup()


@pytest.fixture
def upstream(upstream_endpoint: Endpoint) -> Iterator[TestCluster]:
    cluster = TestCluster(upstream_endpoint.kubeconfig, upstream_endpoint.context)
    yield cluster
    cluster.cleanup()


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
