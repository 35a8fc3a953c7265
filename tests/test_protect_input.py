"""The protect key as hostile input (issue 20 item 2): wherever it is set (annotation or label,
any case of the key) and whatever its value, an object is deletable only when the key is absent
or every place holds exactly "false". Raw objects go through reduce and the real rules."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.decide.common import protection
from gcjob.domain import PROTECT_ANNOTATION
from gcjob.kube import reduce
from gcjob.kube.resources import CONFIGMAPS
from gcjob.model import ClusterStatus, RouteTarget, UpstreamView
from gcjob.reasons import Reason
from gcjob.sweeps.bindings.judge import Existence, binding_verdict
from gcjob.sweeps.companions.judge import companion_verdict, follow_binding
from gcjob.sweeps.routes.judge import route_verdict
from testbed.model import MIN_AGE
from testbed.objects import configmap, httproute, resourcebinding

NOW = datetime(2026, 12, 1, tzinfo=UTC)  # the objects of testbed/objects.py are old by then
KEYS = st.sampled_from(
    [
        PROTECT_ANNOTATION,
        PROTECT_ANNOTATION,
        "gcjob.datumapis.com/Protect",
        "GCJOB.datumapis.com/PROTECT",
    ]
)
VALUES = st.one_of(
    st.sampled_from(["true", "false", "True", "yes", "1", " true", "false ", "", "FALSE", "no"]),
    st.text(max_size=10),
    st.integers(),
    st.none(),
    st.lists(st.text(max_size=3), max_size=2),
)
# Where the key is set: in annotations, in labels, both, or a map that is not a map.
PLACES = st.lists(st.tuples(st.sampled_from(["annotations", "labels"]), KEYS, VALUES), max_size=3)


def with_protect(obj: dict[str, Any], places: list[tuple[str, str, Any]]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    meta = obj["metadata"]
    for where, key, value in places:
        if not isinstance(meta.get(where), dict):
            meta[where] = {}
        meta[where][key] = value
    return obj


def lets_go(obj: dict[str, Any]) -> bool:
    """The rule, stated on the raw object: every protect key, however written, is "false"."""
    meta = obj["metadata"]
    for where in ("annotations", "labels"):
        values = meta.get(where)
        if values is None:
            continue
        if not isinstance(values, dict):
            return False
        for key, value in values.items():
            if key.casefold() == PROTECT_ANNOTATION and value != "false":
                return False
    return True


@given(PLACES, st.booleans())
def test_a_companion_is_deleted_only_when_protect_is_absent_or_false(
    places: list[tuple[str, str, Any]], labels_broken: bool
) -> None:
    obj = with_protect(configmap(), places)
    if labels_broken and not places:
        obj["metadata"]["labels"] = ["not", "a", "map"]
    verdict = companion_verdict(reduce.companion(CONFIGMAPS)(obj), frozenset(), NOW, MIN_AGE)
    assert verdict.delete is lets_go(obj)
    if not verdict.delete:
        assert verdict.reason in ("protected", Reason.PROTECT_NOT_UNDERSTOOD)
        assert "\n" not in verdict.detail


@given(PLACES)
def test_a_binding_is_deleted_only_when_protect_is_absent_or_false(
    places: list[tuple[str, str, Any]],
) -> None:
    obj = with_protect(resourcebinding(), places)
    record = reduce.binding(obj)
    verdict = binding_verdict(record, Existence.ABSENT, NOW, MIN_AGE)
    assert verdict.delete is lets_go(obj)
    # a companion's binding, deleted with it, follows the same rule
    companion = reduce.companion(CONFIGMAPS)(configmap())
    assert follow_binding(record, companion.ref).delete is lets_go(obj)


@given(PLACES)
def test_a_route_is_deleted_only_when_protect_is_absent_or_false(
    places: list[tuple[str, str, Any]],
) -> None:
    obj = with_protect(httproute(), places)
    record = reduce.route(obj)
    target = RouteTarget("single", "default", ("web-gateway",))
    view = UpstreamView(ClusterStatus.OK, gateways=frozenset())
    assert route_verdict(record, target, view, NOW, MIN_AGE).delete is lets_go(obj)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("true", "protected"),
        ("True", Reason.PROTECT_NOT_UNDERSTOOD),
        ("yes", Reason.PROTECT_NOT_UNDERSTOOD),
        ("1", Reason.PROTECT_NOT_UNDERSTOOD),
        (" true", Reason.PROTECT_NOT_UNDERSTOOD),
        ("", Reason.PROTECT_NOT_UNDERSTOOD),
        ("false", None),
    ],
)
@pytest.mark.parametrize("where", ["annotation", "label"])
def test_the_issue_values_as_annotation_or_label(
    where: str, value: str, reason: str | None
) -> None:
    held = protection(((f"{where} {PROTECT_ANNOTATION}", value),))
    assert (held[0] if held else None) == reason
    if held and reason == Reason.PROTECT_NOT_UNDERSTOOD:
        assert repr(value) in held[1] and "neither true nor false" in held[1]


def test_true_anywhere_wins_over_false_elsewhere() -> None:
    protect = (
        (f"annotation {PROTECT_ANNOTATION}", "false"),
        (f"label {PROTECT_ANNOTATION}", "true"),
    )
    assert protection(protect) == ("protected", f"label {PROTECT_ANNOTATION}=true")
