"""gcjob/kube/upstreams.py: an upstream cluster's reader is made for each use, and what its
readers share is one for the run: its read budget (a hostile cluster's re-reads never start
from a fresh one) and what its discovery said. Each cluster has its own; a round of --drain
renews every cluster's budget for the readers made after it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gcjob.budget import RunBudget
from gcjob.kube.access import KubeAccess, ReadLimits
from gcjob.kube.connect import UpstreamClient, UpstreamResolver
from gcjob.kube.errors import KubeError
from gcjob.kube.transport import RequestStats, Transport
from gcjob.kube.upstreams import LiveUpstreams, Shared

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: own, context: {cluster: c, user: u}}]
current-context: own
"""


def upstreams(tmp_path: Path) -> tuple[LiveUpstreams, list[str]]:
    path = tmp_path / "upstream.yaml"
    path.write_text(KUBECONFIG)
    resolver = UpstreamResolver(str(path), "https://127.0.0.1:9/projects/{cluster}")
    made: list[str] = []

    def make_access(client: UpstreamClient, cluster: str, shared: Shared) -> KubeAccess:
        made.append(cluster)
        transport = Transport(
            client.client,
            f"upstream/{cluster}",
            server=client.server,
            stats=RequestStats(),
            budget=RunBudget(None),
            counts=shared,
        )
        return KubeAccess(transport, budget=shared.budget, discovered=shared.discovered)

    return LiveUpstreams(resolver, make_access, ReadLimits()), made


def test_a_clusters_readers_share_its_budget_and_discovery_and_no_other_does(
    tmp_path: Path,
) -> None:
    live, made = upstreams(tmp_path)
    first, again = live.reader_for("p-1"), live.reader_for("p-1")
    assert first is not again  # made for each use, not kept
    assert again.budget is first.budget and again.discovered is first.discovered
    assert first.budget is not None and first.budget.target == "upstream/p-1"
    assert first.budget.cluster == "p-1"
    first.budget.take(items=7)
    assert live.reader_for("p-1").budget is first.budget  # what was spent stays spent
    other = live.reader_for("p-2")
    assert other.budget is not first.budget and other.discovered is not first.discovered
    assert other.server.endswith("/projects/p-2") and first.server.endswith("/projects/p-1")
    assert made == ["p-1"] * 3 + ["p-2"]
    # One name for every reader of a cluster, its budget's: no string kept for each cluster.
    assert made[0] is made[1] is made[2] is first.budget.cluster
    # A kubeconfig context keeps its own client (loading it again may be slow).
    context = live.reader_for("own")
    assert live.reader_for("own").transport.api_client is context.transport.api_client


def test_readers_made_at_once_for_a_new_cluster_share_one_budget(tmp_path: Path) -> None:
    live, _ = upstreams(tmp_path)
    got: list[KubeAccess] = []
    start = threading.Barrier(8)

    def read() -> None:
        start.wait()
        got.append(live.reader_for("p-new"))

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 8 and len({id(reader.budget) for reader in got}) == 1
    assert len({id(reader.discovered) for reader in got}) == 1


def test_a_round_of_a_drain_renews_each_clusters_budget_for_its_next_readers(
    tmp_path: Path,
) -> None:
    live, _ = upstreams(tmp_path)
    before = live.reader_for("p-1")
    assert before.budget is not None
    before.budget.take(items=5)
    live.renew_budgets()
    after = live.reader_for("p-1")
    assert after.budget is not None and after.budget is not before.budget
    assert after.budget.items == 0 and before.budget.items == 5
    # What it serves is not read again; its client is kept.
    assert after.discovered.groups is before.discovered.groups
    assert after.transport.api_client is before.transport.api_client


def test_each_clusters_requests_are_counted_on_it_and_with_the_upstreams(tmp_path: Path) -> None:
    """A cluster's upstream record says its own requests, failed ones too (nothing answers
    at port 9); the run's count has them all, as "upstream", and keeps no map of clusters."""
    live, _ = upstreams(tmp_path)
    stats = RequestStats()
    for cluster in ("p-1", "p-1", "p-2"):
        reader = live.reader_for(cluster)
        reader.transport.stats = stats
        with pytest.raises(KubeError):
            reader.kinds("")
    assert live.requests_to("p-1") >= 2 and live.requests_to("p-2") >= 1
    assert live.requests_to("p-3") == 0  # never asked
    assert stats.by_target == {"upstream": live.requests_to("p-1") + live.requests_to("p-2")}
    live.renew_budgets()  # a --drain round: the run's counts go on
    assert live.requests_to("p-1") >= 2
