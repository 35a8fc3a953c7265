from __future__ import annotations

import pytest

from gcjob.enumerate.keyset import KeySet, digest


def keys(*members: tuple[str, ...]) -> KeySet:
    found = KeySet()
    for member in members:
        found.add(*member)
    return found.freeze()


def test_what_was_added_is_present_and_nothing_else() -> None:
    found = keys(("ConfigMap", "ns-a", "web"), ("Secret", "ns-a", "web"))
    assert ("ConfigMap", "ns-a", "web") in found
    assert ("Secret", "ns-a", "web") in found
    assert ("ConfigMap", "ns-b", "web") not in found
    assert ("ConfigMap", "ns-a", "api") not in found
    assert ("ConfigMap", "ns-a") not in found
    assert "ConfigMap" not in found  # not a tuple of parts


def test_parts_cannot_run_together() -> None:
    # "a/b" + "c" and "a" + "b/c" are other keys than "a" + "bc": the separator is NUL.
    found = keys(("ns", "ab", "c"))
    assert ("ns", "a", "bc") not in found
    assert ("nsab", "c") not in found
    assert digest(("ns", "ab", "c")) != digest(("ns", "a", "bc"))


def test_within_a_prefix() -> None:
    found = keys(("ns-a", "web"), ("ns-b", "api"))
    assert "web" in found.within("ns-a")
    assert "api" not in found.within("ns-a")
    assert "api" in found.within("ns-b")
    assert "web" not in found.within("")
    assert 7 not in found.within("ns-a")


def test_update_merges_and_duplicates_count_once() -> None:
    first, second = KeySet(), KeySet()
    first.add("ns", "a")
    second.add("ns", "a")
    second.add("ns", "b")
    first.update(second)
    first.freeze()
    assert len(first) == 2
    assert ("ns", "a") in first and ("ns", "b") in first


def test_a_name_that_is_not_valid_unicode_is_still_a_key() -> None:
    # A JSON "\\ud800" escape decodes to a lone surrogate: it must not end the run.
    found = keys(("ns", "\ud800"))
    assert ("ns", "\ud800") in found
    assert ("ns", "\ud801") not in found


def test_a_shared_set_cannot_change_and_an_open_one_cannot_be_asked() -> None:
    open_set = KeySet()
    open_set.add("ns", "a")
    with pytest.raises(AssertionError):
        _ = ("ns", "a") in open_set
    open_set.freeze()
    with pytest.raises(AssertionError):
        open_set.add("ns", "b")


def test_many_keys_no_false_absence() -> None:
    members = [(f"ns-{i % 50}", f"name-{i}") for i in range(20_000)]
    found = keys(*members)
    assert len(found) == 20_000
    assert all(member in found for member in members)
    assert not any(("ns-x", f"name-{i}") in found for i in range(20_000))
