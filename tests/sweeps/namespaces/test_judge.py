"""The namespaces sweep's judgement (pure): which hub namespaces are candidates, the copies
sweep's proofs over the upstream Namespace, and what a leftover holds."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gcjob.cli import cli
from gcjob.decide.common import Claims, claimed
from gcjob.domain import UPSTREAM_CLUSTER_LABEL, UPSTREAM_NAMESPACE_LABEL
from gcjob.model import (
    Holdings,
    HubNamespace,
    ObjectRef,
    OwnerFacts,
    OwnerRead,
    OwnerRef,
    Presence,
    ProjectCall,
    ProjectState,
    Propagation,
    Sweep,
    UpstreamOwner,
)
from gcjob.reasons import Reason
from gcjob.settings import Settings, SettingsError
from gcjob.sweeps.namespaces import REGISTERED
from gcjob.sweeps.namespaces.judge import judge_namespace, upstream_of

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
UID = "0f8b1a2c-3d4e-4f50-8a6b-7c8d9e0f1a2b"
OTHER = "11111111-2222-4333-8444-555555555555"
LABELS = {UPSTREAM_CLUSTER_LABEL: "cluster-proj", UPSTREAM_NAMESPACE_LABEL: "default"}
GONE = ProjectCall(ProjectState.GONE, "projects/proj: NotFound")
LIVE = ProjectCall(ProjectState.PRESENT, "projects/proj found")
EMPTY = Holdings({}, {})


def ns(
    name: str = f"ns-{UID}",
    labels: dict[str, str] | None = None,
    created: datetime = NOW - timedelta(hours=1),
    terminating: bool = False,
    protect: tuple[tuple[str, str], ...] = (),
) -> HubNamespace:
    ref = ObjectRef("v1", "Namespace", "", name, "u-1", "7", created, terminating)
    return HubNamespace(ref, LABELS if labels is None else labels, (), protect)


class World:
    def __init__(
        self,
        project: ProjectCall = LIVE,
        read: OwnerRead | None = None,
        held: Holdings | None = EMPTY,
    ) -> None:
        self.project = project
        self.read = read or OwnerRead(True, resolved=True, owner=Presence.GONE)
        self.held = held
        self.asked: list[str] = []

    def facts(self, owner: UpstreamOwner) -> OwnerFacts:
        return OwnerFacts(self.project, self.read)

    def holdings(self, namespace: HubNamespace) -> Holdings | None:
        self.asked.append(namespace.ref.name)
        return self.held

    def propagation(self, namespace: HubNamespace) -> Propagation:
        return Propagation(("member-1",))


def judge(namespace: HubNamespace, world: World, min_age: int = 300):  # type: ignore[no-untyped-def]
    return judge_namespace(namespace, world, NOW, timedelta(seconds=min_age), timedelta(minutes=5))


@pytest.mark.parametrize(
    "name", ["default", "kube-system", "karmada-es-member", f"ns-{UID.upper()}", "ns-web", UID]
)
def test_only_ns_uuid_namespaces_are_candidates(name: str) -> None:
    verdict = upstream_of(ns(name))
    assert not isinstance(verdict, UpstreamOwner) and verdict.reason is Reason.OUT_OF_SCOPE


def test_both_labels_are_needed() -> None:
    for key in LABELS:
        labels = {k: v for k, v in LABELS.items() if k != key}
        verdict = judge(ns(labels=labels), World(GONE))
        assert (verdict.delete, verdict.reason) == (False, Reason.LABELS_MISSING)


def test_the_upstream_namespace_is_the_owner_looked_up() -> None:
    assert upstream_of(ns()) == UpstreamOwner("proj", "", "Namespace", "", "default")


def test_a_gone_project_and_an_empty_namespace_would_go_saying_karmada() -> None:
    verdict = judge(ns(), World(GONE))
    assert (verdict.delete, verdict.reason) == (True, Reason.PROJECT_GONE)
    assert "member-1" in verdict.detail and "report-only" in verdict.detail


def test_a_namespace_an_owner_manages_is_kept_owned_as_the_run_keeps_it() -> None:
    """The driver holds every sweep's orphan to its owners; the judgement (and so explain)
    says the same (the audit: explain said would-delete where the run said owned)."""
    owner = OwnerRef("v1", "ConfigMap", "o", True)
    owned = replace(ns(), owners=(owner,))
    verdict = judge(owned, World(GONE))
    assert (verdict.delete, verdict.reason) == (False, Reason.OWNED)
    assert claimed(Claims(owned.owners, owned.protect)) is not None  # the driver's rule


def test_a_notfound_upstream_namespace_would_go() -> None:
    verdict = judge(ns(), World())
    assert (verdict.delete, verdict.reason) == (True, Reason.UPSTREAM_NAMESPACE_GONE)


def test_a_live_upstream_namespace_with_the_hub_names_uid_is_healthy() -> None:
    read = OwnerRead(True, resolved=True, owner=Presence.PRESENT, owner_uid=UID, owner_created=NOW)
    world = World(read=read)
    verdict = judge(ns(), world)
    assert (verdict.delete, verdict.reason, verdict.healthy) == (
        False,
        Reason.UPSTREAM_NAMESPACE_EXISTS,
        True,
    )
    assert world.asked == []  # nothing listed for a namespace in use


def test_recreated_goes_only_when_created_later_by_more_than_the_skew() -> None:
    hub = ns(created=NOW - timedelta(hours=1))
    later = OwnerRead(
        True, resolved=True, owner=Presence.PRESENT, owner_uid=OTHER, owner_created=NOW
    )
    verdict = judge(hub, World(read=later))
    assert (verdict.delete, verdict.reason) == (True, Reason.UPSTREAM_NAMESPACE_RECREATED)
    within = OwnerRead(
        True,
        resolved=True,
        owner=Presence.PRESENT,
        owner_uid=OTHER,
        owner_created=hub.ref.created + timedelta(minutes=4),  # type: ignore[operator]
    )
    verdict = judge(hub, World(read=within))
    assert (verdict.delete, verdict.reason) == (False, Reason.UPSTREAM_NAMESPACE_EXISTS)


def test_unavailable_and_terminating_projects_keep_it() -> None:
    assert judge(ns(), World(read=OwnerRead(False, "down"))).reason is Reason.UPSTREAM_UNAVAILABLE
    terminating = ProjectCall(ProjectState.TERMINATING, "being deleted")
    assert judge(ns(), World(terminating)).reason is Reason.PROJECT_TERMINATING


def test_holding_anything_keeps_it_naming_kinds_and_counts() -> None:
    verdict = judge(ns(), World(GONE, held=Holdings({"Secret": 1, "ConfigMap": 2}, {})))
    assert (verdict.delete, verdict.reason) == (False, Reason.NAMESPACE_HOLDS)
    assert "ConfigMap 2" in verdict.detail and "Secret 1" in verdict.detail


def test_a_kind_not_listable_keeps_it_naming_it() -> None:
    verdict = judge(ns(), World(GONE, held=Holdings({}, {"Secret": "403 Forbidden"})))
    assert (verdict.delete, verdict.reason) == (False, Reason.NAMESPACE_NOT_LISTABLE)
    assert "Secret" in verdict.detail


def test_past_the_cap_it_is_kept_saying_so() -> None:
    verdict = judge(ns(), World(GONE, held=None))
    assert (verdict.delete, verdict.reason) == (False, Reason.NAMESPACE_NOT_INSPECTED)
    assert "--namespaces-max-inspected" in verdict.detail


def test_young_terminating_and_protected_are_kept_before_any_read() -> None:
    for namespace, reason in (
        (ns(created=NOW - timedelta(seconds=10)), Reason.TOO_YOUNG),
        (ns(terminating=True), Reason.TERMINATING),
        (ns(protect=(("annotation gcjob.datumapis.com/protect", "true"),)), Reason.PROTECTED),
    ):
        world = World(GONE)
        verdict = judge(namespace, world)
        assert (verdict.delete, verdict.reason) == (False, reason)
        assert world.asked == []


def test_enforcing_it_is_refused_exit_2_in_one_line() -> None:
    with pytest.raises(SettingsError, match="report-only by design"):
        Settings(enforce=(REGISTERED.name,))
    result = CliRunner().invoke(cli, ["sweep", "--enforce", "namespaces"])
    assert result.exit_code == 2
    assert "report-only by design" in result.output
    assert not REGISTERED.enforced


def test_the_rbac_component_grants_list_on_what_it_reads_and_no_write() -> None:
    """It adds to the hub's ClusterRole `gcjob` (bound to the user or the ServiceAccount)
    `list` on what the sweep reads, and nothing else. On the real hub, as both identities:
    tests/e2e/test_rbac_e2e.py::test_every_documented_rbac_applied_as_documented_lets_its_run_through."""
    path = Path(__file__).parents[3] / "cronjobs/components/namespaces/kustomization.yaml"
    component = yaml.safe_load(path.read_text())
    [patch] = component["patches"]
    assert patch["target"]["kind"] == "ClusterRole" and patch["target"]["name"] == "gcjob"
    added = yaml.safe_load(patch["patch"])
    assert all(op["op"] == "add" and op["path"] == "/rules/-" for op in added)
    rules = [op["value"] for op in added]
    for resource, verbs in REGISTERED.needs:
        assert any(
            resource.group in r["apiGroups"]
            and resource.plural in r["resources"]
            and set(verbs) <= set(r["verbs"])
            for r in rules
        ), resource
    assert any(r["apiGroups"] == ["*"] and r["resources"] == ["*"] for r in rules)
    assert all(r["verbs"] == ["list"] for r in rules)


def test_it_runs_only_when_named() -> None:
    """A run that does not name it reads nothing more than before (its RBAC is optional)."""
    from types import SimpleNamespace

    default = SimpleNamespace(settings=Settings())
    named = SimpleNamespace(settings=Settings(sweeps=(REGISTERED.name,), sweeps_explicit=True))
    others = SimpleNamespace(settings=Settings(sweeps=(Sweep("routes"),), sweeps_explicit=True))
    assert not REGISTERED.runs(default)  # type: ignore[arg-type]
    assert REGISTERED.runs(named)  # type: ignore[arg-type]
    assert not REGISTERED.runs(others)  # type: ignore[arg-type]
