"""End to end: upstream clusters are read at once (`--upstream-concurrency`), so a slow or
black-holed project control plane delays only its own routes.

Many upstream clusters are served by the one real upstream server through a fault proxy of
this module's own, which strips the `/clusters/<name>` prefix that `--upstream-server-template`
puts in each cluster's URL, and delays every answer of the clusters named `slow-*`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gcjob.cli import UPSTREAM_RETRY
from tests.e2e.cluster import TestCluster
from tests.e2e.conftest import run_gcjob
from tests.e2e.faultproxy import Fault, FaultProxy
from tests.e2e.objects import gateway, route
from tests.e2e.report import upstreams
from tests.servers import Endpoint

FAST = ("fast-a", "fast-b", "fast-c")
SLOW = ("slow-a", "slow-b", "slow-c", "slow-d")


@pytest.fixture
def clusters_proxy(upstream_endpoint: Endpoint, tmp_path: Path) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream_endpoint.proxy.target, strip_prefix=r"^/clusters/[^/]+").start(
        tmp_path
    )
    # Longer than --read-timeout: each attempt of a slow cluster's times out.
    proxy.add_fault(Fault(path=r"^/clusters/slow-", delay=3.0, times=None))
    yield proxy
    proxy.stop()


@pytest.fixture
def template_kubeconfig(
    upstream_kubeconfig: str, clusters_proxy: FaultProxy, tmp_path: Path
) -> str:
    """The upstream kubeconfig's credentials, trusting this module's proxy."""
    config = yaml.safe_load(Path(upstream_kubeconfig).read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c for c in config["clusters"] if c["name"] == context["context"]["cluster"])
    cluster["cluster"] = {
        "server": clusters_proxy.url,
        "certificate-authority": str(clusters_proxy.ca_file),
    }
    context["name"] = config["current-context"] = "templated"  # no context names a cluster
    path = tmp_path / "templated-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


Windows = dict[str, list[float]]


def slow_windows(proxy: FaultProxy) -> Windows:
    """When the proxy received each slow cluster's requests, per cluster, in order."""
    windows: Windows = {}
    for request in proxy.requests:
        cluster = request.path.split("/")[2]
        if cluster.startswith("slow-"):
            windows.setdefault(cluster, []).append(request.received)
    return {cluster: sorted(times) for cluster, times in windows.items()}


def routes_args(
    hub_args: list[str], kubeconfig: str, proxy: FaultProxy, namespace: str
) -> list[str]:
    """The routes sweep of one hub namespace, every upstream cluster through `proxy`."""
    template = proxy.url + "/clusters/{cluster}"
    return [
        *hub_args,
        *("--upstream-kubeconfig", kubeconfig, "--upstream-server-template", template),
        *("--sweep", "routes", "--namespace", namespace),
    ]


def test_slow_upstreams_delay_only_their_own_routes(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    template_kubeconfig: str,
    clusters_proxy: FaultProxy,
) -> None:
    project = upstream.namespace("project")
    upstream.create(gateway(project, "gw-live"))
    ns = hub.namespace()
    for cluster in (*FAST, *SLOW):
        for name, parent in ((f"{cluster}-orphan", "gw-gone"), (f"{cluster}-live", "gw-live")):
            hub.create(
                route(
                    ns,
                    name,
                    cluster_label=f"cluster-{cluster}",
                    upstream_namespace=project,
                    parents=[{"name": parent}],
                )
            )
    args = [
        *routes_args(gcjob_hub_args, template_kubeconfig, clusters_proxy, ns),
        "--read-timeout",
        "1s",
    ]

    def swept(*more: str) -> tuple[list[tuple[str, str, str]], dict[str, Any], Windows]:
        clusters_proxy.clear_requests()
        result = run_gcjob(*args, *more)
        order = [(i["name"], i["action"], i["reason"]) for i in result.items]
        return order, upstreams(result), slow_windows(clusters_proxy)

    serial_order, serial_clusters, serial = swept("--upstream-concurrency", "1")
    order, clusters, concurrent = swept()  # default: 16

    # Each slow cluster's probe is tried UPSTREAM_RETRY.attempts times, every attempt timed
    # out by the client (1 s) while the proxy holds it (3 s); the proxy saw those attempts
    # that got as far as a request (under load a TLS handshake can take the whole second).
    tried = f"failed after {UPSTREAM_RETRY.attempts} attempts"
    for reported, windows in ((serial_clusters, serial), (clusters, concurrent)):
        assert all(tried in reported[c]["detail"] for c in SLOW), reported
        assert sorted(windows) == sorted(SLOW)
        assert all(len(times) <= UPSTREAM_RETRY.attempts for times in windows.values())
    # One at a time: a slow cluster's attempts all come before the next cluster's first.
    spans = sorted((times[0], times[-1]) for times in serial.values())
    assert all(end < start for (_, end), (start, _) in itertools.pairwise(spans)), spans
    # At once: every slow cluster was asked before any of them had its last attempt.
    assert max(t[0] for t in concurrent.values()) < min(t[-1] for t in concurrent.values())
    assert order == serial_order  # the report does not depend on which answer came first
    for cluster in FAST:
        assert clusters[cluster]["status"] == "ok"
        assert (f"{cluster}-orphan", "would-delete", "upstream-gateways-gone") in order
    for cluster in SLOW:
        assert clusters[cluster]["status"] == "unavailable"
        assert (f"{cluster}-orphan", "skipped", "upstream-unavailable") in order

    result = run_gcjob(*args, "--delete")
    for cluster in FAST:
        assert hub.gone("HTTPRoute", ns, f"{cluster}-orphan"), cluster
        assert hub.present("HTTPRoute", ns, f"{cluster}-live"), cluster
    for cluster in SLOW:
        assert hub.present("HTTPRoute", ns, f"{cluster}-orphan"), cluster
    assert result.exit_code == 1  # unavailable upstreams are a failure to decide


def test_a_run_with_black_holed_upstreams_still_ends_at_its_timeout(
    hub: TestCluster,
    upstream: TestCluster,
    gcjob_hub_args: list[str],
    template_kubeconfig: str,
    clusters_proxy: FaultProxy,
) -> None:
    """No upstream answers within 30 s and every attempt may take that long: `--timeout 2s` stops
    the reads in flight on every reader thread, and the run says so (exit 5)."""
    clusters_proxy.add_fault(Fault(path=r"^/clusters/", delay=30.0, times=None))
    project = upstream.namespace("project")
    ns = hub.namespace()
    for cluster in FAST:
        hub.create(
            route(
                ns,
                f"{cluster}-orphan",
                cluster_label=f"cluster-{cluster}",
                upstream_namespace=project,
                parents=[{"name": "gw-gone"}],
            )
        )
    started = time.monotonic()
    result = run_gcjob(
        *routes_args(gcjob_hub_args, template_kubeconfig, clusters_proxy, ns),
        "--read-timeout",
        "30s",
        "--timeout",
        "2s",
        "--delete",
    )
    elapsed = time.monotonic() - started

    assert elapsed < 2 + 3  # the README's grace is 10 s; reads stop within a tick
    assert result.exit_code == 5
    assert result.summary["sweeps"]["routes"]["status"] == "stopped"
    for cluster in FAST:
        assert hub.present("HTTPRoute", ns, f"{cluster}-orphan")
