"""The permissions a --delete run checks up front, and that cronjobs/rbac/hub grants them all
and nothing more. (The SelfSubjectAccessReviews themselves run on a real server in
tests/e2e/test_rbac_e2e.py.)"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from gcjob.kube.resources import HTTPROUTES, LEASES, SECRETS
from gcjob.lease import ShardLock
from gcjob.model import Sweep
from gcjob.preflight import EVENT_NEEDS, Permission, needed, needed_for, review
from gcjob.settings import NEVER_ENFORCED, Settings
from gcjob.shard import MAX_SHARDS, Shard
from gcjob.sweeps import PREFLIGHT, REGISTRY, copies

HUB_RBAC = Path(__file__).parents[1] / "cronjobs/rbac/hub"


def hub_rules() -> list[tuple[dict[str, Any], str | None]]:
    """(rule, namespace or None for a ClusterRole) of every role in cronjobs/rbac/hub."""
    rules = []
    for path in sorted(HUB_RBAC.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] in ("ClusterRole", "Role"):
                namespace = doc["metadata"].get("namespace")
                rules += [(rule, namespace) for rule in doc["rules"]]
    return rules


def granted(permission: Permission, name: str | None) -> bool:
    for rule, namespace in hub_rules():
        if namespace is not None and namespace != permission.namespace:
            continue
        if (
            permission.resource.group in rule["apiGroups"]
            and permission.resource.plural in rule["resources"]
            and permission.verb in rule["verbs"]
            and (not rule.get("resourceNames") or name in rule["resourceNames"])
        ):
            return True
    return False


# Granted and used, but not required up front: `get namespaces` checks that each --namespace
# exists, and a failed check is only a warning (gcjob/enumerate/scope.py).
USED_WITHOUT_PREFLIGHT = {("", "namespaces", "get")}


def test_a_full_delete_run_needs_exactly_what_the_hub_rbac_grants() -> None:
    """Its sweeps enforced as by default: the report-only copies sweep reads and marks, and
    cronjobs/rbac/hub grants it no delete (issue 51 item 6; enforcing it:
    tests/test_cronjobs.py, cronjobs/components/enforce-copies). The namespaces sweep's,
    report-only, are an optional component's (tests/sweeps/namespaces)."""
    settings = Settings(delete=True)
    # Every registered sweep's needs, those the preflight asks and those a sweep asks itself
    # (the copies sweep's, once discovery named its kinds).
    hub = [r for r in REGISTRY if r.name.value not in NEVER_ENFORCED]
    permissions = needed(
        settings, {r.name: r.needs for r in hub}, {r.name: r.enforcing for r in hub}
    )
    # Its Events are asked for apart (a warning when denied, not exit 2).
    permissions += needed_for(EVENT_NEEDS, settings)

    for permission in permissions:
        assert granted(permission, permission.name), permission
    asked = {(p.resource.group, p.resource.plural, p.verb) for p in permissions}
    for rule, _ in hub_rules():
        for group in rule["apiGroups"]:
            for plural in rule["resources"]:
                for verb in rule["verbs"]:
                    if (group, plural, verb) in USED_WITHOUT_PREFLIGHT:
                        continue
                    assert (group, plural, verb) in asked, f"{verb} {plural} granted, never used"


def test_a_sweeps_enforcing_needs_are_asked_for_only_where_it_is_enforced() -> None:
    registered = copies.REGISTERED
    assert registered.enforcing  # its deletes: it lands report-only
    needs, enforcing = {registered.name: registered.needs}, {registered.name: registered.enforcing}
    report_only = Settings(delete=True, sweeps=(registered.name,))
    enforced = Settings(delete=True, sweeps=(registered.name,), enforce=(registered.name,))

    assert not [p for p in needed(report_only, needs, enforcing) if p.verb == "delete"]
    deletes = [p for p in needed(enforced, needs, enforcing) if p.verb == "delete"]
    assert {p.resource for p in deletes} == {r for r, _ in registered.enforcing}


def test_only_the_sweeps_run_and_their_namespaces_are_asked_for() -> None:
    settings = Settings(delete=True, sweeps=(Sweep.ROUTES,), namespaces=("a", "b"), lock=False)

    assert needed(settings, PREFLIGHT) == [
        Permission(verb, HTTPROUTES, namespace)
        for namespace in ("a", "b")
        for verb in ("get", "list", "patch", "delete")
    ]


def test_the_lease_is_asked_for_in_the_lock_namespace() -> None:
    settings = Settings(delete=True, sweeps=(Sweep.ROUTES,), lock_namespace="ops")

    leases = [p for p in needed(settings, PREFLIGHT) if p.resource is LEASES]

    assert [(p.verb, p.namespace, p.name) for p in leases] == [
        ("create", "ops", None),  # RBAC cannot limit `create` to a name: it is in the body
        ("get", "ops", "gcjob"),
        ("update", "ops", "gcjob"),
    ]


# --shard 0/1 is the whole hub: the run's Lease alone, as unsharded.
@given(
    st.integers(min_value=2, max_value=MAX_SHARDS).flatmap(
        lambda count: st.tuples(st.integers(min_value=0, max_value=count - 1), st.just(count))
    )
)
def test_a_shard_asks_for_its_own_lease_the_runs_and_to_read_every_siblings(
    shard: tuple[int, int],
) -> None:
    index, count = shard
    unlimited = {"max_deletions": 0, "max_marks": 0, "max_writes": 0}  # any COUNT shares them
    settings = Settings(delete=True, sweeps=(Sweep.ROUTES,), shard=Shard(index, count), **unlimited)

    leases = [(p.verb, p.name) for p in needed(settings, PREFLIGHT) if p.resource is LEASES]

    own = f"gcjob-shard-{index}-of-{count}"
    siblings = [f"gcjob-shard-{i}-of-{count}" for i in range(count) if i != index]
    assert leases == [
        ("create", None),
        ("get", own),
        ("update", own),
        ("get", "gcjob"),
        ("update", "gcjob"),
        *(("get", name) for name in siblings),
    ]
    # What ShardLock takes and reads (gcjob/lease.py), by the same names.
    lock = ShardLock(None, "default", "gcjob", Shard(index, count), "me", timedelta(minutes=5))  # type: ignore[arg-type]
    assert {lock.own.name, lock.run.name, *lock.siblings} == {n for _, n in leases if n}


def test_a_review_names_the_verb_resource_namespace_and_name() -> None:
    body = review(Permission("delete", SECRETS, "ns-a"))
    assert body["kind"] == "SelfSubjectAccessReview"
    assert body["spec"] == {
        "resourceAttributes": {
            "group": "",
            "resource": "secrets",
            "verb": "delete",
            "namespace": "ns-a",
        }
    }
    lease = review(Permission("update", LEASES, "default", "gcjob"))
    assert lease["spec"]["resourceAttributes"]["name"] == "gcjob"  # type: ignore[index]
    assert str(Permission("list", SECRETS, None)) == "'list' on secrets in all namespaces"
    assert (
        str(Permission("get", LEASES, "ops", "gcjob-shard-1-of-4"))
        == "'get' on leases.coordination.k8s.io named gcjob-shard-1-of-4 in namespace ops"
    )
