"""Tables that keep one object for equal state of many clusters (issue 33): a key built from
`id()`s never answers for another object once the first is freed (the kept value holds the
objects whose ids the key names), and a cluster's Discovered map, shared with another
cluster's, is never changed under it. (From an audit of that work: no hole found.)"""

from __future__ import annotations

from gcjob.enumerate import owners
from gcjob.enumerate.owners import answered
from gcjob.kube import access
from gcjob.kube.access import Discovered
from gcjob.kube.resources import Resource


def test_freed_objects_ids_are_reused_so_the_test_below_means_something() -> None:
    seen: set[int] = set()
    reused = False
    for i in range(2000):
        made = {f"Kind{i}": ()}
        reused = reused or id(made) in seen
        seen.add(id(made))
        del made
    assert reused


def test_an_answer_kept_by_ids_is_never_another_clusters_once_its_maps_are_freed() -> None:
    owners.SHARED_ANSWERS.clear()
    try:
        for i in range(3000):
            kinds = {"net": {f"Kind{i}": ()}}
            got = answered(True, "", kinds)
            assert got.kinds == kinds  # a reused id would hand back another's kinds
            del kinds, got
    finally:
        owners.SHARED_ANSWERS.clear()


def test_discovered_maps_are_shared_for_the_same_answers_and_copied_on_write() -> None:
    access.SHARED_GROUPS.clear()
    try:
        one = (("v1", {"Gateway": (Resource("g", "v1", "gateways", "Gateway"),)}),)
        other = (("v1", {"Route": (Resource("g", "v1", "routes", "Route"),)}),)
        a, b = Discovered(), Discovered()
        a.add({"g": one})
        b.add({"g": one})
        assert a.groups is b.groups  # one object for the same answers
        shared = a.groups
        a.add({"h": other})
        b.add({"g": other})  # the first answer kept for a group stays
        assert dict(shared) == {"g": one} and b.groups is shared
        assert a.groups == {"g": one, "h": other} and a.groups is not shared
        for i in range(2000):  # freed answers' ids reused: never another map's
            versions = (("v1", {f"K{i}": ()}),)
            fresh = Discovered()
            assert fresh.add({"x": versions})["x"] is versions
            del versions, fresh
    finally:
        access.SHARED_GROUPS.clear()
