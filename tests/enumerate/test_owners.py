"""gcjob/enumerate/owners.py: what is kept of each upstream cluster for the run. Clusters
that resolved their groups to the very same (interned) discovery answers share one map of
them; a map merely equal is never taken for another cluster's, and the table is bounded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.enumerate import owners
from gcjob.enumerate.owners import Kinds, shared_kinds
from gcjob.kube.resources import GATEWAYS

SERVED: list[Kinds | None] = [{"Gateway": (GATEWAYS,)}, {"Gateway": ()}, None]


@pytest.fixture(autouse=True)
def empty_table() -> Iterator[None]:
    kept = dict(owners._SHARED_KINDS)
    owners._SHARED_KINDS.clear()
    yield
    owners._SHARED_KINDS.clear()
    owners._SHARED_KINDS.update(kept)


@given(
    picks=st.lists(
        st.dictionaries(
            st.sampled_from(["", "gateway.networking.k8s.io", "net"]), st.integers(0, 2)
        ),
        max_size=6,
    )
)
def test_a_clusters_kinds_are_shared_only_with_the_very_same_answers(
    picks: list[dict[str, int]],
) -> None:
    owners._SHARED_KINDS.clear()
    made = [{group: SERVED[n] for group, n in pick.items()} for pick in picks]
    kept = [shared_kinds(kinds) for kinds in made]
    for kinds, got in zip(made, kept, strict=True):
        assert got == kinds  # what it resolves to is what the cluster said
        assert all(got[group] is kinds[group] for group in kinds)
    for i, a in enumerate(made):
        for j, b in enumerate(made):
            assert (kept[i] is kept[j]) == (a == b)  # SERVED's answers differ from each other


def test_merely_equal_answers_are_not_shared_and_the_table_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = {"net": {"Connector": ()}}
    equal_not_same = {"net": {"Connector": ()}}
    assert shared_kinds(first) is first
    assert shared_kinds(equal_not_same) is equal_not_same  # another document: its own map
    monkeypatch.setattr(owners, "MAX_SHARED_KINDS", len(owners._SHARED_KINDS))
    past = {"other": None}
    assert shared_kinds(past) is past
    assert shared_kinds({"other": None}) is not past  # not kept: the table is full
