"""gcjob/kube/upstreams.py: an upstream cluster's reader is made for each use, and what its
readers share is one for the run: its read budget (a hostile cluster's re-reads never start
from a fresh one) and what its discovery said. Each cluster has its own; a round of --drain
renews every cluster's budget for the readers made after it."""

from __future__ import annotations

import threading
from pathlib import Path

from gcjob.budget import RunBudget
from gcjob.kube.access import KubeAccess, ReadLimits
from gcjob.kube.connect import UpstreamClient, UpstreamResolver
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

    def make_access(client: UpstreamClient, target: str, shared: Shared) -> KubeAccess:
        made.append(target)
        transport = Transport(
            client.client,
            target,
            server=client.server,
            stats=RequestStats(),
            budget=RunBudget(None),
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
    first.budget.take(items=7)
    assert live.reader_for("p-1").budget is first.budget  # what was spent stays spent
    other = live.reader_for("p-2")
    assert other.budget is not first.budget and other.discovered is not first.discovered
    assert other.server.endswith("/projects/p-2") and first.server.endswith("/projects/p-1")
    assert made == ["upstream/p-1"] * 3 + ["upstream/p-2"]
    # One string for every reader of a cluster, its budget's: none made for each reader.
    assert made[0] is made[1] is made[2] is first.budget.target
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
