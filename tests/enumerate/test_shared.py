"""gcjob/enumerate/shared.py: what the routes sweep's upstream reads found, handed on to the
copies sweep's. Only what was found is handed on, and only when it answers for every name
asked; an absence never is (issue 33 item 1: each proof rule stays as strong)."""

from __future__ import annotations

import sys
import threading

from hypothesis import given
from hypothesis import strategies as st

from gcjob.enumerate.shared import Found, Seen
from gcjob.kube.resources import CONFIGMAPS, GATEWAYS, Resource

NAMES = st.sets(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=5)


def seen(name: str) -> Seen:
    return Seen(f"uid-{name}", None, False)


@given(found=NAMES, asked=NAMES)
def test_only_what_was_found_is_handed_on_and_only_whole(found: set[str], asked: set[str]) -> None:
    shared = Found()
    shared.add("p1", GATEWAYS, "app", {name: seen(name) for name in found})

    taken = shared.take("p1", GATEWAYS, "app", dict.fromkeys(asked))

    if asked <= found and found:
        assert taken == {name: seen(name) for name in asked}
        # Taken once: the next asker reads for itself.
        assert shared.take("p1", GATEWAYS, "app", dict.fromkeys(asked)) is None
    else:
        assert taken is None  # an owner not found is read (and proven gone) by its own reads


def test_another_cluster_resource_or_namespace_is_never_answered() -> None:
    shared = Found()
    shared.add("p1", GATEWAYS, "app", {"a": seen("a")})
    for cluster, resource, namespace in (
        ("p2", GATEWAYS, "app"),
        ("p1", CONFIGMAPS, "app"),
        ("p1", GATEWAYS, "other"),
    ):
        assert shared.take(cluster, resource, namespace, {"a": None}) is None
    assert shared.take("p1", GATEWAYS, "app", {"a": None}) == {"a": seen("a")}


def test_the_copies_owners_wait_until_the_routes_gateways_are_all_read() -> None:
    """Read beside the routes sweep, the copies sweep's owners are read only once nothing more
    will be found (or the routes' reads ended without saying so): a Gateway is never listed
    twice, and a wait never outlives the reads it waits for."""
    shared = Found()
    waited = threading.Event()

    def copies_owners() -> None:
        shared.wait_settled(lambda: False)
        waited.set()

    reader = threading.Thread(target=copies_owners)
    reader.start()
    shared.add("p1", GATEWAYS, "app", {"a": seen("a")})
    assert not waited.wait(0.3)  # the routes' Gateways are still being read
    shared.settle()
    reader.join(timeout=5)
    assert waited.is_set()
    assert shared.take("p1", GATEWAYS, "app", {"a": None}) == {"a": seen("a")}

    never_settled = Found()
    ended = threading.Event()
    done = threading.Thread(target=never_settled.wait_settled, args=(ended.is_set,))
    done.start()
    ended.set()  # the routes' reads ended (cancelled, say) without settling
    done.join(timeout=5)
    assert not done.is_alive()


PLACES = st.lists(
    st.tuples(
        st.sampled_from(["p1", "p2"]),
        st.sampled_from([GATEWAYS, CONFIGMAPS]),
        st.sampled_from(["app", "other"]),
        NAMES,
    ),
    max_size=8,
)


@given(adds=PLACES, takes=PLACES)
def test_finds_in_many_places_of_a_cluster_are_each_handed_on_once_and_whole(
    adds: list[tuple[str, Resource, str, set[str]]],
    takes: list[tuple[str, Resource, str, set[str]]],
) -> None:
    """A cluster's finds are held as one object, or by place past one: whatever the shape,
    each place answers as a map of (cluster, resource, namespace) to what was found would."""
    shared = Found()
    model: dict[tuple[str, Resource, str], dict[str, Seen]] = {}
    for cluster, resource, namespace, names in adds:
        shared.add(cluster, resource, namespace, {name: seen(name) for name in names})
        if names:
            model.setdefault((cluster, resource, namespace), {}).update(
                {name: seen(name) for name in names}
            )
    for cluster, resource, namespace, names in takes:
        there = model.get((cluster, resource, namespace))
        want = None
        if there and all(name in there for name in names):
            want = {name: there[name] for name in names}
            del model[(cluster, resource, namespace)]
        assert shared.take(cluster, resource, namespace, dict.fromkeys(names)) == want


def test_once_every_find_is_taken_nothing_sized_for_them_is_held() -> None:
    shared = Found()
    for n in range(1000):
        shared.add(f"p{n}", GATEWAYS, "app", {"a": seen("a")})
    for n in range(1000):
        assert shared.take(f"p{n}", GATEWAYS, "app", {"a": None}) == {"a": seen("a")}
    assert sys.getsizeof(shared._found) == sys.getsizeof({})
