"""Real API servers for the tests that need one (fixtures, registered by tests/conftest.py).

Each session starts two real kube-apiserver + etcd pairs (tests/e2e/envtest.py): a hub
serving the Karmada, compute and Gateway API CRDs, and an upstream serving Gateway API. With
GCJOB_E2E_HUB_KUBECONFIG (and GCJOB_E2E_UPSTREAM_KUBECONFIG) the same tests run against those
clusters instead; see docs/testing.md. Either way gcjob and the tests talk to the server through a
fault-injecting proxy (tests/e2e/faultproxy.py), which forwards every request unchanged unless
a test asks for a fault, and keeps the request log.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as kube_client
from kubernetes import config as kube_config

from tests.e2e.cluster import TestCluster
from tests.e2e.envtest import (
    ADMIN_TOKEN,
    ApiServer,
    AssetsMissing,
    assets_dir,
    crds_dir,
    write_kubeconfig,
)
from tests.e2e.faultproxy import FaultProxy, Target

UPSTREAM_CLUSTER = "e2e-upstream"  # the context name gcjob resolves route labels to
HUB_CONTEXT = "e2e-hub"
HUB_CRDS = (
    "karmada-work.karmada.io_resourcebindings.yaml",
    "datum-compute.datumapis.com_workloaddeployments.yaml",
    "gwapi-v1.6.1-gateway.networking.k8s.io_httproutes.yaml",
    "gwapi-v1.6.1-gateway.networking.k8s.io_gateways.yaml",
)
UPSTREAM_CRDS = (
    "gwapi-v1.6.1-gateway.networking.k8s.io_gateways.yaml",
    "gwapi-v1.6.1-gateway.networking.k8s.io_httproutes.yaml",
)


@dataclass
class Endpoint:
    """One cluster under test as gcjob sees it: the proxy in front of it and a kubeconfig
    whose context `context` points at that proxy."""

    proxy: FaultProxy
    kubeconfig: str
    context: str


@pytest.fixture(scope="session")
def hub_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    yield from endpoint(
        tmp_path_factory.mktemp("hub"), "hub", HUB_CONTEXT, HUB_CRDS, "GCJOB_E2E_HUB"
    )


@pytest.fixture(scope="session")
def upstream_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    yield from endpoint(
        tmp_path_factory.mktemp("upstream"),
        "upstream",
        UPSTREAM_CLUSTER,
        UPSTREAM_CRDS,
        "GCJOB_E2E_UPSTREAM",
    )


def endpoint(
    work: Path, name: str, context: str, crds: tuple[str, ...], env_prefix: str
) -> Iterator[Endpoint]:
    """A real server (started here, or the cluster the environment names) behind a proxy."""
    kubeconfig = work / "kubeconfig"
    given = os.environ.get(f"{env_prefix}_KUBECONFIG")
    if given:
        target, user = external_target(Path(given), os.environ.get(f"{env_prefix}_CONTEXT"))
        proxy = FaultProxy(target).start(work)
        write_kubeconfig(
            kubeconfig, context=context, server=proxy.url, ca_file=proxy.ca_file, user=user
        )
        try:
            yield Endpoint(proxy, str(kubeconfig), context)
        finally:
            proxy.stop()
        return
    try:
        assets_dir()
        crds_dir()
    except AssetsMissing as missing:
        # A short failure, not a traceback (the whole suite stops before it starts: conftest).
        pytest.fail(str(missing), pytrace=False)
    with ApiServer(name) as server:
        server.install_crds(crds_dir() / crd for crd in crds)
        proxy = FaultProxy(Target(server.url, server.ssl_context())).start(work)
        write_kubeconfig(
            kubeconfig,
            context=context,
            server=proxy.url,
            ca_file=proxy.ca_file,
            user={"token": ADMIN_TOKEN},
        )
        try:
            yield Endpoint(proxy, str(kubeconfig), context)
        finally:
            proxy.stop()


def external_target(path: Path, context: str | None) -> tuple[Target, dict[str, Any]]:
    """How the proxy reaches a real cluster (its TLS trust and client certificate), and the
    kubeconfig user entry gcjob keeps presenting (tokens and exec plugins pass through)."""
    config = kube_client.Configuration()
    kube_config.load_kube_config(
        config_file=str(path), context=context, client_configuration=config, persist_config=False
    )
    tls = ssl.create_default_context(cafile=config.ssl_ca_cert)
    if not config.verify_ssl:
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
    if config.cert_file:
        tls.load_cert_chain(config.cert_file, config.key_file)
    source = yaml.safe_load(path.read_text())
    absolute_file_paths(source, path.resolve().parent)
    current = context or source["current-context"]
    chosen = next(c for c in source["contexts"] if c["name"] == current)
    user = next(u for u in source["users"] if u["name"] == chosen["context"]["user"])
    return Target(config.host, tls), user["user"]


def absolute_file_paths(config: dict[str, Any], base: Path) -> None:
    """Relative file paths in a kubeconfig are relative to the file: keep them valid in a
    copy written elsewhere."""
    entries = [
        (c.get("cluster") or {}, ("certificate-authority",)) for c in config.get("clusters") or []
    ]
    entries += [
        (u.get("user") or {}, ("client-certificate", "client-key", "tokenFile"))
        for u in config.get("users") or []
    ]
    for entry, keys in entries:
        for key in keys:
            if entry.get(key) and not os.path.isabs(entry[key]):
                entry[key] = str(base / entry[key])


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
