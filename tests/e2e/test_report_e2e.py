"""End to end: the stdout report over 1,000 upstream clusters and hostile annotations, on the
real hub and upstream servers. Every line is one whole record that a log pipeline takes:
it parses alone, validates, and is at most 16 KiB; the report file keeps everything."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from gcjob.domain import PROTECT_ANNOTATION
from gcjob.report.bounds import LIST_ITEMS, MAX_RECORD_BYTES
from gcjob.sweeps.companions.judge import MAX_REFERRER_KEYS
from testbed import schemas
from testbed.cluster import TestCluster
from testbed.endpoints import Endpoint
from testbed.faultproxy import FaultProxy
from testbed.objects import binding, companion, route, upstream_route
from testbed.report import HubSweep
from testbed.servers import write_kubeconfig

# The report's lines, not how it read: once, on 1.36 (docs/testing.md).
pytestmark = pytest.mark.version_independent

CLUSTERS = 1000
PREFIX = "/projects/"


@pytest.fixture
def project_upstreams(
    upstream: TestCluster, upstream_endpoint: Endpoint, tmp_path: Path
) -> Iterator[tuple[str, str]]:
    """(kubeconfig, server template): every project `proj-NNNN` is served by the one real
    upstream, through a proxy that strips the `/projects/<cluster>` prefix."""
    proxy = FaultProxy(upstream_endpoint.proxy.target, strip_prefix=f"^{PREFIX}[^/]+").start(
        tmp_path
    )
    source = yaml.safe_load(Path(upstream_endpoint.kubeconfig).read_text())
    kubeconfig = write_kubeconfig(
        tmp_path / "projects.kubeconfig",
        context="projects",
        server=proxy.url,
        ca_file=proxy.ca_file,
        user=source["users"][0]["user"],
    )
    try:
        yield str(kubeconfig), f"{proxy.url}{PREFIX}{{cluster}}"
    finally:
        proxy.stop()


@pytest.mark.timeout(900)
def test_a_thousand_clusters_and_hostile_annotations_fit_log_lines(
    hub: TestCluster,
    upstream: TestCluster,
    sweep: HubSweep,
    project_upstreams: tuple[str, str],
    tmp_path: Path,
) -> None:
    kubeconfig, template = project_upstreams
    project = upstream.project("gw-a")
    ns = hub.namespace()
    clusters = [f"proj-{i:04d}" for i in range(CLUSTERS)]
    routes = [
        route(
            ns,
            f"route-{i:04d}",
            cluster_label=f"cluster-{cluster}",
            upstream_namespace=project,
            # 10 orphans, 990 healthy routes
            parents=[{"name": "gw-gone" if i % 100 == 0 else "gw-a"}],
        )
        for i, cluster in enumerate(clusters)
    ]
    healthy = [upstream_route(project, f"route-{i:04d}") for i in range(CLUSTERS) if i % 100]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(hub.create, routes))
        list(pool.map(upstream.create, healthy))  # NSO's upstream HTTPRoutes of the healthy
    hostile = "\x1b]0;pwned\x07\x1b[32mwould-delete\x9b0m\u202eevil\u2028"
    # 100 referrers (the most a companion may list) of the longest valid form: 63 + 1 + 253.
    long_name = ".".join(["w" * 63, "x" * 63, "y" * 63, "z" * 61])
    long_keys = [f"{i:03d}{'p' * 60}/{long_name}" for i in range(MAX_REFERRER_KEYS)]
    hub.create(
        companion(
            "ConfigMap", ns, "long-referrers", long_keys, annotations={PROTECT_ANNOTATION: "true"}
        )
    )
    hub.create(companion("ConfigMap", ns, "too-many", [f"p/wd-{i:05d}" for i in range(10_000)]))
    hub.create(companion("ConfigMap", ns, "huge-unparseable", "[" + "x" * 200_000))
    hub.create(companion("Secret", ns, "escape-key", [f"{hostile}/x"]))
    hub.create(binding(ns, "forged-configmap", kind="ConfigMap", target=hostile))
    report_file = tmp_path / "report.json"
    result = sweep(
        ns,
        "--upstream-kubeconfig",
        kubeconfig,
        "--upstream-server-template",
        template,
        "--report-file",
        str(report_file),
    )

    # Every line alone: one JSON record, schema-valid (run_gcjob checked), at most 16 KiB.
    lines = result.stdout.split("\n")
    assert lines[-1] == ""  # the last record ends with its newline too
    lines = lines[:-1]
    assert len(lines) == len(result.records)  # no record split over lines, no blank line
    longest = max(len(line.encode("utf-8")) + 1 for line in lines)
    assert longest <= MAX_RECORD_BYTES, longest
    for line in lines:
        schemas.REPORT.validate(json.loads(line))
        for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\u2028"):
            assert raw not in line

    # One upstream record per cluster, before the summary; the summary keeps the counts.
    kinds = [r["record"] for r in result.records]
    assert kinds[-1] == "summary"
    assert kinds.index("upstream") > max(i for i, k in enumerate(kinds) if k == "item")
    upstream_records = [r for r in result.records if r["record"] == "upstream"]
    assert sorted(r["cluster"] for r in upstream_records) == clusters
    assert all(r["status"] == "ok" and r["api_requests"] >= 2 for r in upstream_records)
    summary = result.summary
    assert summary["upstream_counts"] == {"ok": CLUSTERS}
    assert summary["counts"]["routes"] == {
        "skipped": {"gateway-exists": 990},
        "would-delete": {"upstream-gateways-gone": 10},
    }
    assert summary["api_requests"]["by_target"]["upstream"] == sum(
        r["api_requests"] for r in upstream_records
    )
    assert result.exit_code == 0, result.stderr
    run_id = summary["run_id"]
    assert all(r["run_id"] == run_id and r["version"] == summary["version"] for r in result.records)

    # Hostile annotations: reported with explicit caps.
    long = result.item("ConfigMap", "long-referrers")
    assert long is not None and long["reason"] == "protected"
    assert long["referrers"] == sorted(long_keys)[:LIST_ITEMS]
    assert long["truncated"] == {"referrers": MAX_REFERRER_KEYS}
    assert result.outcome("ConfigMap", "too-many") == ("skipped", "referrers-too-many")
    assert result.outcome("ConfigMap", "huge-unparseable") == ("skipped", "referrers-unparseable")
    assert result.outcome("Secret", "escape-key") == ("skipped", "referrer-key-malformed")
    forged = result.item("ResourceBinding", "forged-configmap")
    assert forged is not None and forged["reason"] == "resource-mismatch"
    assert hostile in forged["detail"]  # escaped on the line, the value itself is intact

    # The report file: every cluster and every referrer, nothing cut.
    document = json.loads(report_file.read_text(encoding="utf-8"))
    assert sorted(u["cluster"] for u in document["upstream"]) == clusters
    whole = next(i for i in document["items"] if i["name"] == "long-referrers")
    assert whole["referrers"] == sorted(long_keys)
    assert "truncated" not in whole
    assert document["summary"]["upstream_counts"] == {"ok": CLUSTERS}
    print(f"longest stdout line: {longest} bytes over {len(lines)} lines")
