"""--pushgateway: pushes to a real Pushgateway (testbed/prometheus.py), read back as Prometheus
would scrape it. One group per install whatever the mode; a failed run keeps the last success
of an earlier run; the lock and the brake are said by every run; an unreachable or refusing
Pushgateway changes nothing but a warning. (The alert rules over these series:
tests/test_alert_rules.py.)"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gcjob.cli import cli
from gcjob.publish.metrics import push
from testbed.forwardproxy import ForwardProxy
from testbed.paths import DEMO
from testbed.prometheus import Pushgateway, Sample
from testbed.servers import free_port

HUB = "https://hub.example:6443"
GROUP = (("hub", HUB), ("instance", ""), ("job", "gcjob"))


def summary(
    exit_code: int = 0, counts: dict[str, Any] | None = None, *, dry_run: bool = False
) -> dict[str, Any]:
    return {
        "hub": HUB,
        "dry_run": dry_run,
        "exit_code": exit_code,
        "counts": counts
        or {"companions": {"deleted": {"orphaned": 3}, "skipped": {"referrer-live": 7}}},
        "sweeps": {"companions": {"scanned": 10}, "routes": {"scanned": 0}},
        "api_requests": {"total": 9, "by_target": {"hub": 8, "upstream": 1}},
    }


def held(
    pushgateway: Pushgateway, group: tuple[tuple[str, str], ...] = GROUP
) -> dict[Sample, float]:
    """What the Pushgateway serves for one group, by metric name and the metric's own labels."""
    got = {}
    for (name, labels), value in pushgateway.samples().items():
        own = tuple(pair for pair in labels if pair[0] not in ("hub", "instance", "job", "shard"))
        if tuple(label for label in labels if label not in own) == group:
            got[(name, own)] = value
    return got


def names(samples: dict[Sample, float]) -> set[str]:
    return {name for name, _ in samples}


def test_a_successful_run_pushes_every_metric_to_its_installs_group(
    pushgateway: Pushgateway,
) -> None:
    assert push(pushgateway.url, summary(), duration=1.5, finished=1_700_000_000.0)

    assert pushgateway.groups() == [{"job": "gcjob", "hub": HUB}]
    got = held(pushgateway)
    labels = (("action", "deleted"), ("reason", "orphaned"), ("sweep", "companions"))
    assert got[("gcjob_run_objects", labels)] == 3
    skipped = (("action", "skipped"), ("reason", "referrer-live"), ("sweep", "companions"))
    assert got[("gcjob_run_objects", skipped)] == 7
    assert got[("gcjob_run_objects_seen", (("sweep", "companions"),))] == 10
    assert got[("gcjob_run_api_requests", (("target", "upstream"),))] == 1
    assert got[("gcjob_run_duration_seconds", ())] == 1.5
    assert got[("gcjob_run_exit_code", ())] == 0
    assert got[("gcjob_run_brake_engaged", ())] == 0
    assert got[("gcjob_run_dry_run", ())] == 0
    assert got[("gcjob_lock_held_seconds", ())] == 0
    assert got[("gcjob_run_finished_timestamp_seconds", ())] == 1_700_000_000.0
    assert got[("gcjob_last_success_timestamp_seconds", ())] == 1_700_000_000.0
    assert "gcjob_shard_count" not in names(got)  # a shard's only


def test_a_failed_run_replaces_its_metrics_and_keeps_the_earlier_last_success(
    pushgateway: Pushgateway,
) -> None:
    assert push(pushgateway.url, summary(), duration=1.0, finished=1_700_000_000.0)
    braked = {"routes": {"would-delete": {"brake": 60}}}

    assert push(pushgateway.url, summary(4, braked), duration=2.0, finished=1_700_000_300.0)

    got = held(pushgateway)
    assert got[("gcjob_run_exit_code", ())] == 4
    assert got[("gcjob_run_brake_engaged", ())] == 1
    assert got[("gcjob_run_finished_timestamp_seconds", ())] == 1_700_000_300.0
    assert got[("gcjob_last_success_timestamp_seconds", ())] == 1_700_000_000.0
    # The whole family is the failed run's: the earlier run's deleted count is gone.
    objects = {labels: v for (name, labels), v in got.items() if name == "gcjob_run_objects"}
    assert objects == {(("action", "would-delete"), ("reason", "brake"), ("sweep", "routes")): 60}


def test_an_install_that_never_succeeded_has_runs_and_no_last_success(
    pushgateway: Pushgateway,
) -> None:
    """What GcjobNeverSucceeded looks for."""
    assert push(pushgateway.url, summary(3), duration=1.0, finished=1_700_000_000.0)
    assert push(pushgateway.url, summary(1), duration=1.0, finished=1_700_000_300.0)

    got = names(held(pushgateway))
    assert "gcjob_run_finished_timestamp_seconds" in got
    assert "gcjob_last_success_timestamp_seconds" not in got


def test_dry_run_then_enforcing_share_one_group_and_leave_nothing_of_the_dry_run(
    pushgateway: Pushgateway,
) -> None:
    """The frozen `mode="dry-run"` group that fired forever after the switch (issue 23)."""
    would = {"companions": {"would-delete": {"orphaned": 3}}}
    assert push(pushgateway.url, summary(0, would, dry_run=True), duration=1.0, finished=100.0)
    assert held(pushgateway)[("gcjob_run_dry_run", ())] == 1
    failed = {"companions": {"failed": {"orphaned": 1}, "deleted": {"orphaned": 2}}}

    assert push(pushgateway.url, summary(1, failed), duration=1.0, finished=400.0)

    assert pushgateway.groups() == [{"job": "gcjob", "hub": HUB}]
    got = held(pushgateway)
    assert got[("gcjob_run_dry_run", ())] == 0
    assert got[("gcjob_run_exit_code", ())] == 1
    assert got[("gcjob_last_success_timestamp_seconds", ())] == 100.0  # the dry run's
    assert {labels[0][1] for (name, labels) in got if name == "gcjob_run_objects"} == {
        "failed",
        "deleted",
    }

    assert push(pushgateway.url, summary(), duration=1.0, finished=700.0)
    assert held(pushgateway)[("gcjob_last_success_timestamp_seconds", ())] == 700.0


def test_a_run_kept_out_by_the_lock_says_how_long_it_has_been_held_until_a_run_gets_in(
    pushgateway: Pushgateway,
) -> None:
    locked: dict[str, Any] = {"companions": {}}
    assert push(pushgateway.url, summary(), duration=1.0, finished=100.0)

    assert push(
        pushgateway.url, summary(6, locked), duration=0.5, finished=400.0, lock_held_seconds=1500
    )
    got = held(pushgateway)
    assert got[("gcjob_run_exit_code", ())] == 6
    assert got[("gcjob_lock_held_seconds", ())] == 1500
    assert got[("gcjob_last_success_timestamp_seconds", ())] == 100.0

    assert push(pushgateway.url, summary(), duration=1.0, finished=700.0)
    assert held(pushgateway)[("gcjob_lock_held_seconds", ())] == 0


def test_two_installs_on_one_pushgateway_keep_their_own_groups(pushgateway: Pushgateway) -> None:
    other = {**summary(4, {"routes": {"would-delete": {"brake": 60}}}), "hub": "https://other:6443"}

    assert push(pushgateway.url, summary(), duration=1.0, finished=100.0)
    assert push(pushgateway.url, other, duration=1.0, finished=200.0)

    hubs = sorted(group["hub"] for group in pushgateway.groups())
    assert hubs == [HUB, "https://other:6443"]
    assert held(pushgateway)[("gcjob_run_brake_engaged", ())] == 0
    other_group = (("hub", "https://other:6443"), ("instance", ""), ("job", "gcjob"))
    assert held(pushgateway, other_group)[("gcjob_run_brake_engaged", ())] == 1


def test_an_old_group_is_deleted_by_its_hub_in_base64_as_the_docs_say(
    pushgateway: Pushgateway,
) -> None:
    """docs/deploying.md "Metrics": a group no run pushes to any more is deleted by hand."""
    assert push(pushgateway.url, summary(), duration=1.0, finished=100.0)
    name = base64.urlsafe_b64encode(HUB.encode()).decode()

    pushgateway.delete(f"/metrics/job/gcjob/hub@base64/{name}")

    assert pushgateway.groups() == []


def test_upstream_clusters_are_counted_by_status_every_status_shown(
    pushgateway: Pushgateway,
) -> None:
    """issue 20 item 15: a failed upstream cluster shows where alerts look."""
    failed = {**summary(1), "upstream_counts": {"ok": 3, "unavailable": 1}}

    assert push(pushgateway.url, failed, duration=1.0, finished=1_700_000_000.0)

    got = held(pushgateway)
    assert got[("gcjob_run_upstream_clusters", (("status", "unavailable"),))] == 1
    assert got[("gcjob_run_upstream_clusters", (("status", "ok"),))] == 3
    assert got[("gcjob_run_upstream_clusters", (("status", "suspect"),))] == 0
    assert got[("gcjob_run_upstream_clusters", (("status", "unknown"),))] == 0


def test_projects_are_counted_by_state_every_state_shown(pushgateway: Pushgateway) -> None:
    """issue 22 item 5: what the Project API said of the run's projects, for alerts on deleted
    projects; a run without a Project API shows every state at 0."""
    found = {**summary(), "projects": {"gone": 2, "present": 5, "terminating": 1}}

    assert push(pushgateway.url, found, duration=1.0, finished=1_700_000_000.0)

    got = held(pushgateway)
    assert {
        labels[0][1]: value for (name, labels), value in got.items() if name == "gcjob_run_projects"
    } == {"gone": 2, "present": 5, "terminating": 1, "not-answered": 0, "brake-held": 0}
    assert got[("gcjob_run_brake_engaged", ())] == 0

    assert push(pushgateway.url, summary(), duration=1.0, finished=1_700_000_001.0)
    got = held(pushgateway)
    assert {v for (name, _), v in got.items() if name == "gcjob_run_projects"} == {0}


def test_the_projects_brake_is_a_brake_engaged(pushgateway: Pushgateway) -> None:
    """The projects brake holds a gone project's objects back as kept (upstream-unavailable),
    not as `brake` items: the sweep's braked status still says the brake engaged."""
    braked = {
        **summary(4, {"copies": {"skipped": {"upstream-unavailable": 40}}}),
        "sweeps": {"copies": {"status": "braked", "scanned": 40}},
        "projects": {"brake-held": 3, "present": 1},
    }

    assert push(pushgateway.url, braked, duration=1.0, finished=1_700_000_000.0)

    got = held(pushgateway)
    assert got[("gcjob_run_brake_engaged", ())] == 1
    assert got[("gcjob_run_projects", (("state", "brake-held"),))] == 3
    assert got[("gcjob_run_exit_code", ())] == 4


def test_a_push_the_pushgateway_refuses_is_a_warning(
    pushgateway: Pushgateway, caplog: pytest.LogCaptureFixture
) -> None:
    # A Pushgateway answers 404 under a path it does not serve.
    assert not push(f"{pushgateway.url}/nowhere", summary(), duration=1.0, finished=1.0)

    assert "could not push metrics" in caplog.text
    assert pushgateway.groups() == []


def _would_delete(report_file: Path) -> int:
    """The items a run's report says would be deleted (a report-only sweep's too)."""
    items = json.loads(report_file.read_text(encoding="utf-8"))["items"]
    return sum(item["action"] == "would-delete" for item in items)


def test_the_cli_pushes_at_the_end_of_a_run(pushgateway: Pushgateway, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        cli,
        [
            *("sweep", "--snapshot", str(DEMO), "--grace", "0"),
            *("--pushgateway", pushgateway.url, "--report-file", str(report)),
        ],
        standalone_mode=False,
    )

    assert result.return_value == 0, result.stderr
    assert pushgateway.groups() == [{"job": "gcjob", "hub": "demo-hub (snapshot)"}]
    got = held(pushgateway, (("hub", "demo-hub (snapshot)"), ("instance", ""), ("job", "gcjob")))
    would = sum(v for (name, labels), v in got.items() if ("action", "would-delete") in labels)
    assert would == _would_delete(report) > 0  # the demo's would-delete total, as its report says
    assert got[("gcjob_run_exit_code", ())] == 0
    assert got[("gcjob_run_dry_run", ())] == 1
    said = json.loads(report.read_text(encoding="utf-8"))["summary"]["projects"]
    assert got[("gcjob_run_projects", (("state", "gone"),))] == said["gone"] == 1  # proj-gone


def test_a_cli_run_that_fails_pushes_its_exit_code_and_keeps_the_last_success(
    pushgateway: Pushgateway, tmp_path: Path
) -> None:
    snapshot = tmp_path / "demo"
    shutil.copytree(DEMO, snapshot)
    args = ["sweep", "--snapshot", str(snapshot), "--pushgateway", pushgateway.url]
    assert CliRunner().invoke(cli, args, standalone_mode=False).return_value == 0
    first = held(pushgateway, (("hub", "demo-hub (snapshot)"), ("instance", ""), ("job", "gcjob")))
    (snapshot / "hub" / "resourcebindings.yaml").unlink()  # the bindings sweep cannot read

    result = CliRunner().invoke(cli, args, standalone_mode=False)

    assert result.return_value == 3, result.stderr
    got = held(pushgateway, (("hub", "demo-hub (snapshot)"), ("instance", ""), ("job", "gcjob")))
    assert got[("gcjob_run_exit_code", ())] == 3
    last_success = ("gcjob_last_success_timestamp_seconds", ())
    assert got[last_success] == first[last_success]


def test_an_unreachable_pushgateway_changes_nothing_but_a_warning() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # bound, then closed: nothing listens
    plain = CliRunner().invoke(cli, ["sweep", "--snapshot", str(DEMO)], standalone_mode=False)

    result = CliRunner().invoke(
        cli, ["sweep", "--snapshot", str(DEMO), "--pushgateway", url], standalone_mode=False
    )

    assert result.return_value == plain.return_value == 0
    assert "could not push metrics to the Pushgateway" in result.stderr
    assert len(result.stdout.splitlines()) == len(plain.stdout.splitlines())


def test_what_a_sweep_not_enforced_would_delete_is_its_own_series(pushgateway: Pushgateway) -> None:
    """issue 34 item 2: an enforced sweep's pending deletions and a report-only sweep's (were
    it enforced) are told apart by `enforced`."""
    due = {"this_run": 1, "later": 4, "earliest": None, "latest": None}
    apart = {"this_run": 2, "later": 18, "earliest": None, "latest": None}
    run = {
        **summary(),
        "would_delete": {"companions": due},
        "would_delete_if_enforced": {"copies": apart},
    }

    assert push(pushgateway.url, run, duration=1.0, finished=1_700_000_000.0)

    got = held(pushgateway)
    pending = {
        tuple(v for _, v in labels): value
        for (name, labels), value in got.items()
        if name == "gcjob_run_would_delete"
    }
    assert pending == {
        ("later", "true", "companions"): 4,
        ("this-run", "true", "companions"): 1,
        ("later", "false", "copies"): 18,
        ("this-run", "false", "copies"): 2,
    }


def test_a_run_that_steps_aside_for_the_rollout_job_keeps_the_last_sweeps_metrics(
    pushgateway: Pushgateway,
) -> None:
    """issue 34 item 6: while the rollout Job drains, the CronJob's skipped runs must not make
    the counts vanish: they add when they stepped aside and how long the lock has been held."""
    assert push(pushgateway.url, summary(4), duration=2.0, finished=100.0)
    before = held(pushgateway)
    skipped = {**summary(0, {}), "skipped": "rollout holds the lock (drain/pod/run)"}

    assert push(pushgateway.url, skipped, duration=0.2, finished=400.0, lock_held_seconds=240.0)

    got = held(pushgateway)
    kept = {k: v for k, v in got.items() if k[0] not in SKIPPED_SETS}
    assert kept == {k: v for k, v in before.items() if k[0] not in SKIPPED_SETS}
    assert (
        got[
            (
                "gcjob_run_objects",
                (("action", "deleted"), ("reason", "orphaned"), ("sweep", "companions")),
            )
        ]
        == 3
    )
    assert got[("gcjob_run_exit_code", ())] == 4  # the last sweep's, until the drain's own
    assert got[("gcjob_run_skipped_timestamp_seconds", ())] == 400.0
    assert got[("gcjob_lock_held_seconds", ())] == 240.0
    assert got[("gcjob_last_success_timestamp_seconds", ())] == 400.0  # it exited 0


SKIPPED_SETS = {
    "gcjob_run_skipped_timestamp_seconds",
    "gcjob_lock_held_seconds",
    "gcjob_last_success_timestamp_seconds",
    "push_time_seconds",
    "push_failure_time_seconds",
}


def test_each_shard_pushes_a_group_of_its_own(pushgateway: Pushgateway, tmp_path: Path) -> None:
    """--shard: one group a shard (shard="INDEX/COUNT" beside hub), none replacing another's;
    the shards' would-deletes add up to one run's. The hub's sweeps: a shard with no live
    project proves no project gone (docs/operating.md, Sharding), so the demo's copies do not
    add up by design (tests/test_shard.py)."""
    hub_sweeps = ("--sweep", "companions", "--sweep", "bindings", "--sweep", "routes")
    whole = tmp_path / "whole.json"
    args = ("sweep", "--snapshot", str(DEMO), "--grace", "0", *hub_sweeps)
    assert CliRunner().invoke(cli, [*args, "--report-file", str(whole)]).exit_code == 0
    for index in range(4):
        result = CliRunner().invoke(
            cli,
            [*args, "--pushgateway", pushgateway.url, "--shard", f"{index}/4"],
            standalone_mode=False,
        )
        assert result.return_value == 0, result.stderr

    hub = "demo-hub (snapshot)"
    groups = pushgateway.groups()
    assert sorted(g["shard"] for g in groups) == [f"{i}/4" for i in range(4)]
    assert all(g["hub"] == hub and g["job"] == "gcjob" for g in groups)
    would = 0.0
    for index in range(4):
        group = (("hub", hub), ("instance", ""), ("job", "gcjob"), ("shard", f"{index}/4"))
        got = {
            key: value
            for (name, labels), value in pushgateway.samples().items()
            for key in [(name, tuple(x for x in labels if x[0] not in dict(group)))]
            if tuple(x for x in labels if x[0] in dict(group)) == group
        }
        assert got[("gcjob_run_exit_code", ())] == 0
        assert got[("gcjob_shard_count", ())] == 4  # what the alerts count the shards against
        would += sum(v for (name, labels), v in got.items() if ("action", "would-delete") in labels)
    assert would == _would_delete(whole) > 0  # as one run's report says


@pytest.mark.parametrize("exit_code", [0, 3])
def test_every_shards_push_says_its_count_a_skipped_one_too(
    pushgateway: Pushgateway, exit_code: int
) -> None:
    """gcjob_shard_count in every push of a shard, whether it swept, failed or stepped aside for
    the rollout Job: GcjobShardsNotSucceeding counts the shards against it."""
    shard = {"shard": {"index": 2, "count": 3}}
    group = (*GROUP, ("shard", "2/3"))
    assert push(pushgateway.url, {**summary(exit_code), **shard}, duration=1.0, finished=50.0)
    assert held(pushgateway, group)[("gcjob_shard_count", ())] == 3
    pushgateway.wipe()
    skipped = {**summary(0, {}), **shard, "skipped": "rollout holds the lock (drain/pod/run)"}

    assert push(pushgateway.url, skipped, duration=0.2, finished=60.0)

    got = held(pushgateway, group)
    assert got[("gcjob_shard_count", ())] == 3
    assert got[("gcjob_last_success_timestamp_seconds", ())] == 60.0


def test_an_old_shards_group_is_deleted_by_its_hub_and_shard_in_base64_as_the_docs_say(
    pushgateway: Pushgateway,
) -> None:
    """docs/deploying.md "GcjobShardsNotSucceeding": after COUNT changes, the old COUNT's groups
    are deleted by hand, the shard named in base64 too (it has a slash)."""
    for index in range(2):
        shard = {"shard": {"index": index, "count": 2}}
        assert push(pushgateway.url, {**summary(), **shard}, duration=1.0, finished=100.0)
    hub = base64.urlsafe_b64encode(HUB.encode()).decode()
    first = base64.urlsafe_b64encode(b"0/2").decode()

    pushgateway.delete(f"/metrics/job/gcjob/hub@base64/{hub}/shard@base64/{first}")

    assert [g["shard"] for g in pushgateway.groups()] == ["1/2"]


def test_a_push_takes_the_route_chosen_for_its_url(
    pushgateway: Pushgateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46: urllib's own opener read HTTP_PROXY its way (no loopback exemption). The push
    takes urls.proxy_route's choice: a loopback Pushgateway straight, the same one at a name
    only the proxy resolves through the proxy (a push carries no credential)."""
    proxy = ForwardProxy(hosts={"pushgateway.gcjob.test": "127.0.0.1"})
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("http_proxy", proxy.url)
        assert push(pushgateway.url, summary(), duration=1.0, finished=1_700_000_000.0)
        assert proxy.requests == []
        named = pushgateway.url.replace("127.0.0.1", "pushgateway.gcjob.test")
        assert push(named, summary(), duration=2.0, finished=1_700_000_001.0)
    finally:
        proxy.stop()
    assert [(r.method, r.target.partition("/metrics")[0]) for r in proxy.requests] == [
        ("PUT", named)
    ]
    assert held(pushgateway)[("gcjob_run_duration_seconds", ())] == 2.0


def test_deletions_stalled_and_held_are_counted_by_sweep(pushgateway: Pushgateway) -> None:
    """Issue 47: `deletion-stalled` items make gcjob_run_deletions_stalled (every sweep that
    ran, 0 included, so GcjobDeletionsStalled resolves); `delete-held` is its own action."""
    counts = {
        "companions": {
            "skipped": {"deletion-stalled": 2, "terminating": 1},
            "delete-held": {"orphaned": 1},
            "deleted": {"orphaned": 3},
        }
    }
    assert push(pushgateway.url, summary(counts=counts), duration=1.0, finished=1.0)
    samples = held(pushgateway)
    assert samples[("gcjob_run_deletions_stalled", (("sweep", "companions"),))] == 2
    assert samples[("gcjob_run_deletions_stalled", (("sweep", "routes"),))] == 0
    action = (("action", "delete-held"), ("reason", "orphaned"), ("sweep", "companions"))
    assert samples[("gcjob_run_objects", action)] == 1


def test_leftover_namespaces_are_counted_by_state_every_state_shown(
    pushgateway: Pushgateway,
) -> None:
    """Issue 49: the namespaces sweep's leftovers by state (empty: would-delete; holding;
    not-listable; not-inspected), 0 included so GcjobLeftoverNamespaces resolves; none when it
    did not run, or did not complete."""
    counts = {
        "namespaces": {
            "would-delete": {"project-gone": 2, "upstream-namespace-gone": 1},
            "skipped": {"namespace-holds": 4, "too-young": 1, "namespace-not-inspected": 5},
        }
    }
    ran = summary(counts=counts)
    ran["sweeps"]["namespaces"] = {"status": "completed", "scanned": 13}
    assert push(pushgateway.url, ran, duration=1.0, finished=1.0)
    samples = held(pushgateway)
    assert samples[("gcjob_run_leftover_namespaces", (("state", "empty"),))] == 3
    assert samples[("gcjob_run_leftover_namespaces", (("state", "holding"),))] == 4
    assert samples[("gcjob_run_leftover_namespaces", (("state", "not-listable"),))] == 0
    # proven gone past --namespaces-max-inspected: leftovers too, not lost from the count
    assert samples[("gcjob_run_leftover_namespaces", (("state", "not-inspected"),))] == 5
    assert push(pushgateway.url, summary(), duration=1.0, finished=2.0)
    assert "gcjob_run_leftover_namespaces" not in names(held(pushgateway))
    # A sweep that did not complete knows nothing of the hub's namespaces: no 0 is claimed.
    for status in ("not-configured", "incomplete", "stopped", "braked"):
        pushgateway.wipe()
        unknown = summary(counts=counts)
        unknown["sweeps"]["namespaces"] = {"status": status, "scanned": 0}
        assert push(pushgateway.url, unknown, duration=1.0, finished=3.0)
        assert "gcjob_run_leftover_namespaces" not in names(held(pushgateway)), status
