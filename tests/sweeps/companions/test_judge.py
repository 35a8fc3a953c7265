"""Sweep 1 decisions (gcjob.sweeps.companions.judge), from docs/rules.md "Sweep 1: companions"."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from gcjob.decide.grace import GraceCall, Next
from gcjob.marks import binding_evidence, companion_binding_evidence, new_mark, since_value
from gcjob.model import Binding, BoundResource, Mark, OwnerRef, Verdict
from gcjob.reasons import Reason
from gcjob.sweeps.companions.judge import (
    MAX_REFERRER_KEYS,
    ReferrersUnreadable,
    binding_names_companion,
    companion_binding,
    companion_bound_by,
    companion_verdict,
    parse_referrers,
)
from testbed.model import (
    HUB_NS,
    MIN_AGE,
    NOW,
    OLD,
    PROTECTED,
    YOUNG,
    binding,
    bound,
    companion,
    ref,
)

# --- parse_referrers ---------------------------------------------------------------------


def test_parse_referrers_reads_sorted_array_of_keys() -> None:
    assert parse_referrers('["default/web-dfw"]') == ("default/web-dfw",)
    assert parse_referrers('["default/api", "proj-b/web.v2"]') == (
        "default/api",
        "proj-b/web.v2",
    )


def test_duplicate_keys_count_once() -> None:
    keys = ["default/web"] * 40_000 + [f"proj-{i}/api" for i in range(MAX_REFERRER_KEYS - 1)]
    parsed = parse_referrers(json.dumps(keys))
    assert parsed[0] == "default/web"
    assert len(parsed) == MAX_REFERRER_KEYS  # at the limit, not over it


def test_an_orphan_detail_names_a_few_referrers_and_counts_the_rest() -> None:
    keys = [f"p-{i}/web-{i}" for i in range(MAX_REFERRER_KEYS)]
    verdict = companion_verdict(companion(referrers=json.dumps(keys)), frozenset(), NOW, MIN_AGE)
    assert verdict.reason == "orphaned"
    assert verdict.detail.startswith("no WorkloadDeployment named web-0, web-1, web-2")
    assert f"and {MAX_REFERRER_KEYS - 5} more" in verdict.detail
    assert len(verdict.referrers) == MAX_REFERRER_KEYS


# (raw annotation, reason the companion is preserved)
UNREADABLE = [
    pytest.param(None, "referrers-missing", id="missing"),
    pytest.param("", "referrers-empty", id="empty"),
    pytest.param("   ", "referrers-empty", id="blank"),
    pytest.param("[]", "referrers-empty", id="empty-array"),
    pytest.param("default/web", "referrers-unparseable", id="not-json"),
    pytest.param("[default/web]", "referrers-unparseable", id="unquoted"),
    pytest.param('{"default/web": true}', "referrers-not-string-array", id="object"),
    pytest.param('"default/web"', "referrers-not-string-array", id="bare-string"),
    pytest.param("[null]", "referrers-not-string-array", id="null-item"),
    pytest.param("[1]", "referrers-not-string-array", id="number-item"),
    pytest.param('[["default/web"]]', "referrers-not-string-array", id="nested-array"),
    pytest.param('["default/web", null]', "referrers-not-string-array", id="mixed"),
    pytest.param("null", "referrers-not-string-array", id="json-null"),
    pytest.param("true", "referrers-not-string-array", id="json-bool"),
    pytest.param('["web"]', "referrer-key-malformed", id="no-slash"),
    pytest.param('["a/b/c"]', "referrer-key-malformed", id="two-slashes"),
    pytest.param('["/web"]', "referrer-key-malformed", id="empty-namespace"),
    pytest.param('["default/"]', "referrer-key-malformed", id="empty-name"),
    pytest.param('["/"]', "referrer-key-malformed", id="slash-only"),
    pytest.param('[""]', "referrer-key-malformed", id="empty-key"),
    pytest.param('["Default/web"]', "referrer-key-malformed", id="upper-namespace"),
    pytest.param('["default/Web"]', "referrer-key-malformed", id="upper-name"),
    pytest.param(json.dumps(["x" * 64 + "/web"]), "referrer-key-malformed", id="long-ns"),
    pytest.param(json.dumps(["default/" + "x" * 254]), "referrer-key-malformed", id="long-name"),
    pytest.param('["default/web", "bad key"]', "referrer-key-malformed", id="one-bad-of-two"),
    pytest.param('["default/web_dfw"]', "referrer-key-malformed", id="underscore"),
    pytest.param(
        json.dumps([f"default/web-{i}" for i in range(MAX_REFERRER_KEYS + 1)]),
        "referrers-too-many",
        id="too-many",
    ),
    pytest.param(
        json.dumps([f"default/web-{i}" for i in range(10_000)]), "referrers-too-many", id="10k"
    ),
]


@pytest.mark.parametrize(("raw", "reason"), UNREADABLE)
def test_parse_referrers_rejects(raw: str | None, reason: str) -> None:
    with pytest.raises(ReferrersUnreadable) as caught:
        parse_referrers(raw)
    assert caught.value.reason == reason
    assert caught.value.detail


@pytest.mark.parametrize(("raw", "reason"), UNREADABLE)
def test_unreadable_referrers_preserve_the_companion(raw: str | None, reason: str) -> None:
    # No WorkloadDeployment exists at all: still an odd annotation proves nothing.
    verdict = companion_verdict(companion(raw), frozenset(), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == reason


# --- companion_verdict --------------------------------------------------------------------


def test_orphan_when_every_referrer_absent() -> None:
    c = companion('["default/api", "default/web"]')
    verdict = companion_verdict(c, frozenset({"other", "web-dfw"}), NOW, MIN_AGE)
    assert verdict.delete is True
    assert verdict.reason == "orphaned"
    assert verdict.referrers == ("default/api", "default/web")
    assert verdict.ref == c.ref


def test_secret_companion_orphan() -> None:
    c = companion('["default/web"]', kind="Secret", name="db-creds")
    verdict = companion_verdict(c, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is True
    assert verdict.reason == "orphaned"


def test_legacy_prefixed_companion_orphan() -> None:
    c = companion('["default/web"]', name="configmap.app-config")
    verdict = companion_verdict(c, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is True
    assert verdict.reason == "orphaned"


def test_live_when_referrer_name_exists() -> None:
    verdict = companion_verdict(companion('["default/web"]'), frozenset({"web"}), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "referrer-live"
    assert verdict.healthy is True


def test_live_when_any_one_referrer_exists() -> None:
    c = companion('["default/api", "default/web", "default/worker"]')
    verdict = companion_verdict(c, frozenset({"worker"}), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "referrer-live"


@pytest.mark.parametrize("project_ns", ["default", "proj-b", "ns-other", "kube-system"])
def test_live_lookup_is_by_name_only_whatever_the_key_namespace(project_ns: str) -> None:
    # The key's namespace part is the project namespace, never the hub namespace.
    c = companion(json.dumps([f"{project_ns}/web"]))
    verdict = companion_verdict(c, frozenset({"web"}), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "referrer-live"


def test_key_namespace_is_not_matched_against_live_names() -> None:
    # A WD named like the key's namespace part is not a referrer.
    c = companion('["web/api"]')
    verdict = companion_verdict(c, frozenset({"web"}), NOW, MIN_AGE)
    assert verdict.delete is True
    assert verdict.reason == "orphaned"


def test_too_young_companion_preserved() -> None:
    c = companion('["default/web"]', created=YOUNG)
    verdict = companion_verdict(c, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "too-young"


def test_companion_just_under_min_age_preserved() -> None:
    c = companion('["default/web"]', created=NOW - MIN_AGE + timedelta(seconds=1))
    verdict = companion_verdict(c, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "too-young"


def test_companion_exactly_min_age_is_not_younger() -> None:
    c = companion('["default/web"]', created=NOW - MIN_AGE)
    verdict = companion_verdict(c, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is True
    assert verdict.reason == "orphaned"


def test_companion_created_in_the_future_preserved() -> None:
    c = companion('["default/web"]', created=NOW + timedelta(minutes=10))
    verdict = companion_verdict(c, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "too-young"


def test_companion_without_creation_time_never_deleted() -> None:
    c = companion('["default/web"]', created=None)
    verdict = companion_verdict(c, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "age-unknown"


def test_terminating_companion_preserved() -> None:
    c = companion('["default/web"]', terminating=True)
    verdict = companion_verdict(c, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "terminating"


def test_protected_companion_preserved() -> None:
    c = companion('["default/web"]', protected=True)
    verdict = companion_verdict(c, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "protected"


def test_companion_without_uid_never_deleted() -> None:
    c = companion('["default/web"]', uid="")
    verdict = companion_verdict(c, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "unpinnable"


def test_companion_without_resource_version_never_deleted() -> None:
    c = companion('["default/web"]', resource_version="")
    verdict = companion_verdict(c, frozenset(), NOW, MIN_AGE)
    assert verdict.delete is False
    assert verdict.reason == "unpinnable"


# --- binding_names_companion -------------------------------------------------------------


def test_binding_names_its_companion() -> None:
    assert binding_names_companion(bound(), ref()) is None


def test_binding_without_uid_names_its_companion_by_kind_and_name() -> None:
    # "same kind, name and, where set, uid"
    assert binding_names_companion(bound(uid=""), ref()) is None


def test_binding_names_legacy_prefixed_companion() -> None:
    name = "configmap.app-config"
    assert binding_names_companion(bound(name=name), ref(name=name)) is None


def test_binding_without_resource_does_not_name_companion() -> None:
    reason = binding_names_companion(None, ref())
    assert reason is not None
    assert "spec.resource" in reason


def test_binding_of_secret_does_not_name_configmap_of_same_name() -> None:
    reason = binding_names_companion(bound(kind="Secret"), ref(kind="ConfigMap"))
    assert reason is not None
    assert "Secret" in reason


def test_binding_of_configmap_does_not_name_secret_of_same_name() -> None:
    reason = binding_names_companion(bound(kind="ConfigMap"), ref(kind="Secret"))
    assert reason is not None
    assert "ConfigMap" in reason


def test_binding_of_other_name_does_not_name_companion() -> None:
    reason = binding_names_companion(bound(name="app-config-2"), ref(name="app-config"))
    assert reason is not None
    assert "app-config-2" in reason


def test_binding_of_unprefixed_name_does_not_name_prefixed_companion() -> None:
    reason = binding_names_companion(bound(name="app-config"), ref(name="configmap.app-config"))
    assert reason is not None


def test_binding_in_other_namespace_does_not_name_companion() -> None:
    reason = binding_names_companion(bound(namespace="ns-other"), ref(namespace=HUB_NS))
    assert reason is not None
    assert "ns-other" in reason


def test_binding_of_other_uid_does_not_name_companion() -> None:
    reason = binding_names_companion(bound(uid="uid-2"), ref(uid="uid-1"))
    assert reason is not None
    assert "uid-2" in reason


def test_binding_of_a_custom_kind_of_the_same_name_does_not_name_companion() -> None:
    custom = BoundResource("x.example.com/v1", "ConfigMap", HUB_NS, "app-config", "")
    reason = binding_names_companion(custom, ref())
    assert reason is not None and "x.example.com/v1" in reason


def test_no_minimum_age_holds_nothing_back_even_on_clock_skew() -> None:
    from datetime import timedelta

    from gcjob.sweeps.companions.judge import companion_verdict as decide

    ahead = companion('["default/gone"]', created=NOW + timedelta(seconds=2))
    assert decide(ahead, frozenset(), NOW, timedelta(0)).delete is True
    assert decide(ahead, frozenset(), NOW, timedelta(seconds=1)).reason == "too-young"


def test_absurdly_nested_json_is_unparseable_not_a_crash() -> None:
    from gcjob.sweeps.companions.judge import ReferrersUnreadable

    with pytest.raises(ReferrersUnreadable) as unreadable:
        parse_referrers("[" * 5000 + "]" * 5000)
    assert unreadable.value.reason == "referrers-unparseable"


def test_the_binding_of_a_deleted_companion_goes_only_if_it_is_its_own() -> None:
    from gcjob.sweeps.companions.judge import follow_binding

    owner = ref("ConfigMap", "app-config", uid="uid-1")
    own = bound(kind="ConfigMap", name="app-config", uid="uid-1")

    def rb(**kwargs: object) -> Binding:
        fields = {"resource": own, "protected": False, "terminating": False, **kwargs}
        return Binding(
            ref("ResourceBinding", "app-config-configmap", terminating=bool(fields["terminating"])),
            "city-dfw",
            None,
            False,
            fields["resource"],
            PROTECTED if fields["protected"] else (),
        )

    assert follow_binding(rb(), owner).reason == "companion-deleted"
    assert follow_binding(rb(), owner).delete is True
    for kwargs, reason in (
        ({"protected": True}, "protected"),
        ({"terminating": True}, "terminating"),
        ({"resource": bound(kind="ConfigMap", name="app-config", uid="uid-2")}, "binding-mismatch"),
        ({"resource": None}, "binding-mismatch"),
    ):
        verdict = follow_binding(rb(**kwargs), owner)
        assert (verdict.delete, verdict.reason) == (False, reason)


# --- companion_binding: the rule act.py and explain both apply to a companion's binding -----


def _called(next_: str, since: datetime | None = OLD) -> GraceCall:
    due = since + timedelta(minutes=10) if since is not None else None
    return GraceCall(Next(next_), "", since, due)


def _orphan() -> Verdict:
    return Verdict(ref("ConfigMap", "app-config", uid="uid-1"), True, Reason.ORPHANED, "gone")


def _its_binding(mark: Mark | None = None, **kwargs: Any) -> Binding:
    fields: dict[str, Any] = {"resource": bound(uid="uid-1"), **kwargs}
    rb = binding(uid="rb-uid", **fields)
    return replace(rb, ref=replace(rb.ref, mark=mark))


def test_a_deleted_companion_takes_its_own_binding_and_no_other() -> None:
    judged = _orphan()
    follows = companion_binding(_its_binding(), judged.ref, judged, _called("delete"))
    assert follows is not None and follows.next is Next.DELETE
    assert follows.verdict.reason == "companion-deleted"
    other = _its_binding(resource=bound(uid="uid-2"))
    kept = companion_binding(other, judged.ref, judged, _called("delete"))
    assert kept is not None and kept.next is Next.NOTHING
    assert kept.verdict.reason == "binding-mismatch"


@pytest.mark.parametrize("call", ["delete", "mark", "wait"])
def test_a_companions_binding_another_owns_is_kept_owned(call: str) -> None:
    """Issue 46 item 2: a companion's binding whose controller ownerReference names a ConfigMap
    other than its spec.resource is that owner's; its own template's reference is not."""
    judged = _orphan()
    own = OwnerRef("v1", "ConfigMap", "app-config", controller=True, uid="uid-1")
    follows = companion_binding(_its_binding(owners=(own,)), judged.ref, judged, _called(call))
    assert follows is not None and follows.verdict.delete  # marked, or deleted, with it
    assert follows.next in (Next.DELETE, Next.MARK, Next.WAIT)
    foreign = OwnerRef("v1", "ConfigMap", "live-config", controller=True, uid="uid-live")
    for owners in ((foreign,), (own, replace(foreign, controller=False))):
        binding = _its_binding(owners=owners)
        kept = companion_binding(binding, judged.ref, judged, _called(call))
        assert kept is not None and kept.next is Next.NOTHING, owners
        assert kept.verdict.reason == "owned"


def test_a_marked_companion_marks_its_binding_with_the_same_time_once() -> None:
    judged = _orphan()
    follows = companion_binding(_its_binding(), judged.ref, judged, _called("mark"))
    assert follows is not None and follows.next is Next.MARK and follows.evidence is not None
    assert follows.verdict.reason == "companion-orphaned"
    # When it goes, with its companion; never that it was marked (a dry run marks nothing).
    assert follows.verdict.detail == (
        f"binds ConfigMap app-config, orphaned with it; due for deletion at "
        f"{since_value(OLD + timedelta(minutes=10))} if still orphaned"
    )
    # Carrying that very mark already, it waits with its companion: no second write.
    mark = new_mark(follows.evidence, Reason.COMPANION_ORPHANED, OLD)
    waits = companion_binding(_its_binding(mark), judged.ref, judged, _called("wait"))
    assert waits is not None and waits.next is Next.WAIT


def test_an_unmarked_companion_unmarks_only_the_mark_it_wrote_on_its_binding() -> None:
    kept = Verdict(ref("ConfigMap", "app-config"), False, Reason.REFERRER_LIVE, "it lives")
    evidence = companion_binding_evidence(kept.ref).on("rb-uid")
    ours = new_mark(evidence, Reason.COMPANION_ORPHANED, OLD)
    follows = companion_binding(_its_binding(ours), kept.ref, kept, _called("unmark"))
    assert follows is not None and follows.next is Next.UNMARK
    assert follows.verdict.detail == "ConfigMap app-config is no orphan: it lives"
    bindings_own = new_mark(binding_evidence("ConfigMap", "app-config"), Reason.ORPHANED, OLD)
    assert companion_binding(_its_binding(bindings_own), kept.ref, kept, _called("unmark")) is None
    assert companion_binding(_its_binding(), kept.ref, kept, _called("unmark")) is None


def test_the_binding_named_after_a_companion_is_found_by_its_name() -> None:
    assert companion_bound_by("app-config-configmap") == ("ConfigMap", "app-config")
    assert companion_bound_by("token-secret") == ("Secret", "token")
    assert companion_bound_by("web-httproute") is None
    assert companion_bound_by("-configmap") is None
