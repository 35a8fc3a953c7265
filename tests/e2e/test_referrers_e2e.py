"""End to end: a referenced-by annotation cannot spend the run (issue 12 item 2)."""

from __future__ import annotations

import json

from gcjob.sweeps.companions.judge import MAX_REFERRER_KEYS
from testbed.cluster import TestCluster
from testbed.faultproxy import FaultProxy
from testbed.objects import binding, companion
from testbed.report import HubSweep


def test_repeated_and_excessive_referrer_keys_cost_one_lookup_per_name(
    hub: TestCluster, sweep: HubSweep, faults: FaultProxy
) -> None:
    ns = hub.namespace()
    # 10,000 copies of one key (190 KB, under the 256 KB annotation limit), then two keys
    # that differ only in their project namespace: one WorkloadDeployment name each.
    repeated = json.dumps(["default/web-gone"] * 10_000)
    hub.create(companion("ConfigMap", ns, "repeated", repeated))
    hub.create(binding(ns, "repeated-configmap", kind="ConfigMap", target="repeated"))
    hub.create(companion("ConfigMap", ns, "aliases", ["proj-a/api-gone", "proj-b/api-gone"]))
    too_many = [f"default/web-{i}" for i in range(MAX_REFERRER_KEYS + 1)]
    hub.create(companion("Secret", ns, "too-many", too_many))
    faults.clear_requests()

    result = sweep(ns, "--sweep", "companions")

    assert result.exit_code == 0, result.stderr
    assert result.outcome("ConfigMap", "repeated") == ("would-delete", "orphaned")
    assert result.outcome("ConfigMap", "aliases") == ("would-delete", "orphaned")
    assert result.outcome("Secret", "too-many") == ("skipped", "referrers-too-many")
    repeated_item = result.item("ConfigMap", "repeated")
    assert repeated_item is not None and repeated_item["referrers"] == ["default/web-gone"]
    lookups = [
        r.path.rsplit("/", 1)[1]
        for r in faults.requests
        if r.method == "GET" and "/workloaddeployments/" in r.path
    ]
    assert sorted(lookups) == ["api-gone", "web-gone"]  # one GET per distinct name
    workload_lists = [
        r for r in faults.requests if r.method == "GET" and r.path.endswith("/workloaddeployments")
    ]
    assert len(workload_lists) == 1
