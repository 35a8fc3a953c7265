"""gcjob/enumerate/scope.py: reserved namespaces stay out whatever the flags."""

from __future__ import annotations

from gcjob.enumerate.scope import Scope


def test_everything_but_reserved_by_default() -> None:
    scope = Scope()
    assert scope.list_targets() == (None,)
    assert scope.allows("ns-123") and scope.allows("default")
    for reserved in (
        "kube-system",
        "kube-public",
        "karmada-system",
        "karmada-cluster",
        "karmada-es-member1",
    ):
        assert not scope.allows(reserved)


def test_named_namespaces_only() -> None:
    scope = Scope(namespaces=("ns-a", "ns-b"))
    assert scope.list_targets() == ("ns-a", "ns-b")
    assert scope.allows("ns-a") and not scope.allows("ns-c")


def test_exclusions_win() -> None:
    scope = Scope(namespaces=("ns-a", "ns-b"), excluded=frozenset({"ns-b"}))
    assert scope.list_targets() == ("ns-a",)
    assert not scope.allows("ns-b")
    assert not Scope(excluded=frozenset({"ns-x"})).allows("ns-x")
