"""--shard INDEX/COUNT (gcjob/shard.py): the shards partition any set of keys, the shares of a
limit add up to it, the flag and JOB_COMPLETION_INDEX refuse what would leave a part of the hub
judged twice or never, and the demo swept in four shards reports exactly what one run does."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from gcjob.cli import cli
from gcjob.decide.upstream_labels import Copied, copy_of
from gcjob.domain import (
    COMPANION_LABEL,
    GATEWAY_SYNC_LABEL,
    REFERRERS_ANNOTATION,
    UPSTREAM_CLUSTER_LABEL,
    UPSTREAM_GROUP_LABEL,
    UPSTREAM_KIND_LABEL,
    UPSTREAM_NAME_LABEL,
    UPSTREAM_NAMESPACE_LABEL,
)
from gcjob.exitcodes import ExitCode
from gcjob.kube import reduce
from gcjob.kube.resources import CONFIGMAPS, SECRETS
from gcjob.model import Companion
from gcjob.settings import Settings, SettingsError
from gcjob.shard import MAX_SHARDS, WHOLE, Shard, copy_key, parse_shard, shard_of
from gcjob.sweeps.boundary import ObjectScan
from gcjob.sweeps.companions.sweep import CompanionScan
from gcjob.sweeps.copies.act import OwnersWanted
from gcjob.sweeps.copies.scan import replica
from gcjob.sweeps.copies.sweep import CopyScan
from testbed.report import sweep_snapshot

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
counts = st.integers(min_value=1, max_value=MAX_SHARDS)
names = st.text(min_size=0, max_size=80)


@given(st.sets(names, max_size=60), counts)
def test_the_shards_partition_any_set_of_keys(keys: set[str], count: int) -> None:
    judged = Counter(
        key for index in range(count) for key in keys if Shard(index, count).judges(key)
    )
    assert judged == Counter(keys)  # each key by exactly one shard: none twice, none by none


@given(names, counts)
def test_a_keys_shard_is_sha256_of_it_modulo_count(key: str, count: int) -> None:
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    assert shard_of(key, count) == int(digest, 16) % count  # the formula docs/operating.md gives


def test_the_hash_is_stable_across_processes() -> None:
    # Python's hash() of a str changes with PYTHONHASHSEED; these are fixed for good.
    assert [shard_of(name, 4) for name in ("proj-alpha", "single", "default")] == [
        int(hashlib.sha256(n.encode()).hexdigest(), 16) % 4
        for n in ("proj-alpha", "single", "default")
    ]


def test_the_whole_hub_judges_everything() -> None:
    assert WHOLE.whole and WHOLE.judges("anything") and str(WHOLE) == "0/1"


@given(st.integers(min_value=0, max_value=10**6), counts)
def test_the_shares_of_a_limit_add_up_to_it(limit: int, count: int) -> None:
    shares = [Shard(index, count).share(limit) for index in range(count)]
    assert sum(shares) == limit
    assert max(shares) - min(shares) <= 1


@pytest.mark.parametrize(
    ("text", "shard"), [("0/1", Shard(0, 1)), ("3/4", Shard(3, 4)), (" 2/256 ", Shard(2, 256))]
)
def test_shards_parse(text: str, shard: Shard) -> None:
    assert parse_shard(text) == shard


@pytest.mark.parametrize(
    "text",
    [
        "4/4",
        "0/0",
        "1/0",
        "-1/4",
        "1/-4",
        "1",
        "/4",
        "1/",
        "",
        "a/b",
        "1/4/8",
        "0/257",
        "\u0661/\u0664",  # Arabic-Indic digits
        "$(JOB_COMPLETION_INDEX)/4",  # a pod that is not an Indexed Job's: never expanded
    ],
)
def test_malformed_shards_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_shard(text)


@given(st.text(max_size=20))
def test_parsing_never_accepts_a_shard_out_of_range(text: str) -> None:
    try:
        shard = parse_shard(text)
    except ValueError:
        return
    assert 0 <= shard.index < shard.count <= MAX_SHARDS


def _labels(cluster: str) -> dict[str, str]:
    return {
        UPSTREAM_CLUSTER_LABEL: cluster,
        UPSTREAM_GROUP_LABEL: "",
        UPSTREAM_KIND_LABEL: "ConfigMap",
        UPSTREAM_NAME_LABEL: "x",
        UPSTREAM_NAMESPACE_LABEL: "default",
    }


@given(st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(_[a-z0-9]{1,10})?", fullmatch=True))
def test_a_copys_key_is_the_cluster_its_owner_is_read_on(name: str) -> None:
    labels = {**_labels(f"cluster-{name}"), "networking.datumapis.com/gateway-sync": "true"}
    found = copy_of("x", "", "ConfigMap", labels)
    assert isinstance(found, Copied)
    assert copy_key(labels, "hub-ns") == found.owner.cluster


@pytest.mark.parametrize("value", [None, "", "cluster-", "not-a-cluster"])
def test_a_copy_without_a_project_goes_by_its_hub_namespace(value: str | None) -> None:
    labels = {} if value is None else {UPSTREAM_CLUSTER_LABEL: value}
    assert copy_key(labels, "hub-ns") == "hub-ns"


# -- Settings -------------------------------------------------------------------------------


def _refused(**settings: Any) -> SettingsError:
    with pytest.raises(SettingsError) as caught:
        Settings(**settings)
    return caught.value


def test_an_indexed_jobs_pod_must_name_its_shard() -> None:
    assert _refused(completion_index="2").field == "shard"


def test_a_shard_must_be_the_pods_own_index() -> None:
    error = _refused(shard=Shard(1, 4), completion_index="2")
    assert error.field == "shard" and "does not match" in error.problem
    assert Settings(shard=Shard(2, 4), completion_index="2").part == Shard(2, 4)


def test_a_sharded_run_does_not_drain() -> None:
    assert "--drain" in _refused(shard=Shard(0, 2), delete=True, drain=True).problem


@pytest.mark.parametrize("field", ["max_deletions", "max_marks", "max_writes"])
def test_a_limit_too_small_to_share_is_refused(field: str) -> None:
    assert _refused(shard=Shard(0, 4), **{field: 3}).field == field
    assert Settings(shard=Shard(0, 4), **{field: 0}).part.share(0) == 0  # 0: none, as unsharded
    assert Settings(shard=Shard(0, 4), **{field: 4})


def test_the_shards_lease_name_must_be_a_name() -> None:
    assert _refused(shard=Shard(0, 4), lock_name="a" * 250).field == "lock_name"


# -- the command line -----------------------------------------------------------------------


def _sweep(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, ["sweep", "--snapshot", str(DEMO), *args], env=env)


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--shard", "4/4"), None),
        (("--shard", "x"), None),
        ((), {"GCJOB_SHARD": ""}),
        ((), {"JOB_COMPLETION_INDEX": "1"}),
        (("--shard", "1/4"), {"JOB_COMPLETION_INDEX": "3"}),
        (("--shard", "1/4", "--max-marks", "2"), None),
    ],
)
def test_the_command_line_refuses_a_bad_shard_with_exit_2(
    args: tuple[str, ...], env: dict[str, str] | None
) -> None:
    result = _sweep(*args, env=env)
    assert result.exit_code == ExitCode.USAGE, result.output
    assert "Error" in result.output or "error" in result.output
    assert '"record": "summary"' not in result.output  # refused before anything is read


@pytest.mark.parametrize("count", [4, 2, 7])
def test_four_shards_of_the_demo_report_what_one_run_does(tmp_path: Path, count: int) -> None:
    """And so do two, and seven: each COUNT splits the demo's objects otherwise. One thing
    differs, by design (docs/operating.md, Sharding): a shard trusts the Project API on its own
    projects' control planes, so a shard none of whose answered proves no project gone, and
    keeps a deleted project's copy `upstream-unavailable` (exit 1) where one run marks it."""

    keys = ("sweep", "kind", "namespace", "name", "action", "reason", "detail")

    def key(item: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(item.get(k) for k in keys[:4])

    whole = sweep_snapshot(DEMO, tmp_path / "whole.json")
    shards = [
        sweep_snapshot(DEMO, tmp_path / f"{i}.json", "--shard", f"{i}/{count}")
        for i in range(count)
    ]
    assert whole.exit_code == 0
    as_whole = {key(item): item for item in whole.report["items"]}
    together: Counter[tuple[Any, ...]] = Counter()
    unproven: Counter[str] = Counter()  # what a shard said instead of what one run proved
    proven: Counter[str] = Counter()
    for shard in shards:
        # whether one of its projects was found live (the demo's one live project answers)
        vouched = shard.report["summary"]["projects"]["present"] > 0
        kept_closed = 0
        for item in shard.report["items"]:
            was = as_whole[key(item)]
            if (item["action"], item["reason"]) != (was["action"], was["reason"]):
                # the one difference: unvouched, a deleted project is not proven gone
                assert not vouched and was["reason"] == "project-gone", item
                assert (item["action"], item["reason"]) == ("skipped", "upstream-unavailable")
                unproven[f"{item['sweep']}/skipped/upstream-unavailable"] += 1
                proven[f"{was['sweep']}/{was['action']}/{was['reason']}"] += 1
                kept_closed += 1
                item = was
            together[tuple(item.get(k) for k in keys)] += 1
        assert shard.exit_code == (1 if kept_closed else 0), shard.output
    assert together == Counter(tuple(i.get(k) for k in keys) for i in whole.report["items"])
    assert len(together) > 20  # the demo's cases, every sweep's
    for sweep, state in whole.report["summary"]["sweeps"].items():
        parts = [shard.report["summary"]["sweeps"][sweep] for shard in shards]
        assert sum(part["in_scope"] for part in parts) == state["in_scope"]
        assert all(part["scanned"] == state["scanned"] for part in parts)  # read whole
    for index, shard in enumerate(shards):
        said = shard.report["summary"]["shard"]
        assert (said["index"], said["count"]) == (index, count)
    assert "shard" not in whole.report["summary"]
    healthy = Counter[str]()
    for shard in shards:
        for sweep, actions in shard.report["summary"]["counts"].items():
            for action, reasons in actions.items():
                for reason, count in reasons.items():
                    healthy[f"{sweep}/{action}/{reason}"] += count
    expected = Counter(
        {
            f"{sweep}/{action}/{reason}": count
            for sweep, actions in whole.report["summary"]["counts"].items()
            for action, reasons in actions.items()
            for reason, count in reasons.items()
        }
    )
    assert healthy - unproven + proven == expected


# -- one object, two sweeps, two keys -------------------------------------------------------

# A cluster label: NSO's (`cluster-<project>`, as testbed/milo.py writes it), or anything else.
cluster_labels = st.one_of(
    st.from_regex(r"cluster-[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True),
    st.text(max_size=30),
    st.none(),
)
hub_namespaces = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?", fullmatch=True)


@given(
    st.lists(st.tuples(hub_namespaces, cluster_labels, st.booleans()), max_size=12),
    st.integers(min_value=1, max_value=16),
)
def test_an_object_in_two_sweeps_is_judged_once_in_each_none_twice_none_dropped(
    objects: list[tuple[str, str | None, bool]], count: int
) -> None:
    """A labelled companion that is also NSO's copy (a Secret with gateway-sync) or an anchor
    (a ConfigMap): the companions sweep keys it by its hub namespace, the copies sweep by its
    project. Through each sweep's own shard gate (`judged_elsewhere` of the scans the sweeps
    run: the copies' first read and its judging scan, the companions' scan), every object is
    judged by exactly one shard in each sweep, across the shards of any COUNT; the copies'
    first read (which asks for the owner) and their judging scan pick the same shard."""
    judged: Counter[tuple[str, int]] = Counter()
    for n, (namespace, cluster, secret) in enumerate(objects):
        resource = SECRETS if secret else CONFIGMAPS
        labels = {**_labels(cluster or ""), COMPANION_LABEL: "true"}
        if cluster is None:
            del labels[UPSTREAM_CLUSTER_LABEL]
        if secret:
            labels[GATEWAY_SYNC_LABEL] = "true"
        raw = {
            "apiVersion": "v1",
            "kind": resource.kind,
            "metadata": {
                "name": f"object-{n}",
                "namespace": namespace,
                "uid": f"uid-{n}",
                "resourceVersion": "1",
                "labels": labels,
                "annotations": {REFERRERS_ANNOTATION: '["default/gone"]'},
            },
        }
        as_companion = reduce.companion(resource)(raw)
        as_copy = replica(resource)(raw)
        assert CompanionScan.shard_key is ObjectScan.shard_key  # by its hub namespace
        for index in range(count):
            shard = Shard(index, count)
            companions = ObjectScan[Companion](shard)
            first, copies = OwnersWanted(shard), CopyScan(resource, {}, False, shard)
            if not companions.judged_elsewhere(as_companion):
                judged[("companions", n)] += 1
                assert index == shard_of(namespace, count)
            read_here = not first.judged_elsewhere(as_copy)
            judged_here = not copies.judged_elsewhere(as_copy)
            assert read_here == judged_here, (index, as_copy)
            if judged_here:
                judged[("copies", n)] += 1
                assert index == shard_of(copy_key(labels, namespace), count)  # its project's
    assert judged == Counter({(sweep, n): 1 for n in range(len(objects)) for sweep in SWEEPS})


SWEEPS = ("companions", "copies")
