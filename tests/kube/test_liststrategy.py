"""gcjob.kube.liststrategy: how the hub's lists are read, chosen from its `/version` answer
(docs/list-strategy.md). Pure: recorded answers in, a choice out; any answer at all gives a
choice, never an exception."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.kube.liststrategy import (
    PAGES_FROM_CACHE_SINCE,
    ListStrategy,
    choose,
    server_version,
)


def answer(git_version: str, major: str, minor: str, **more: str) -> dict[str, str]:
    """A `/version` answer as kube-apiserver sends it (k8s.io/apimachinery version.Info)."""
    return {
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": "0123456789abcdef0123456789abcdef01234567",
        "gitTreeState": "clean",
        "buildDate": "2025-09-09T19:44:50Z",
        "goVersion": "go1.24.6",
        "compiler": "gc",
        "platform": "linux/amd64",
        **more,
    }


def emulating(major: str, minor: str) -> dict[str, str]:
    # Newer servers also name the release they emulate and the oldest they stay compatible with.
    return {
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": str(int(minor) - 1),
    }


# The test bed's own servers, as they answered (built from testbed/kube/: docs/testing.md).
TEST_SERVERS = [
    (
        {
            "major": "1",
            "minor": "31",
            "gitVersion": "v1.31.14",
            "gitCommit": "",
            "gitTreeState": "",
            "buildDate": "2025-11-12T11:37:56Z",
            "goVersion": "go1.26.8",
            "compiler": "gc",
            "platform": "linux/amd64",
        },
        "v1.31.14",
        ListStrategy.CACHE,
    ),
    (
        {
            "major": "1",
            "minor": "34",
            "emulationMajor": "1",
            "emulationMinor": "34",
            "minCompatibilityMajor": "1",
            "minCompatibilityMinor": "33",
            "gitVersion": "v1.34.4",
            "gitCommit": "",
            "gitTreeState": "",
            "buildDate": "2026-02-10T12:53:36Z",
            "goVersion": "go1.26.8",
            "compiler": "gc",
            "platform": "linux/amd64",
        },
        "v1.34.4",
        ListStrategy.PAGES,
    ),
    (
        {
            "major": "1",
            "minor": "36",
            "emulationMajor": "1",
            "emulationMinor": "36",
            "minCompatibilityMajor": "1",
            "minCompatibilityMinor": "35",
            "gitVersion": "v1.36.3",
            "gitCommit": "",
            "gitTreeState": "",
            "buildDate": "2026-07-22T18:07:38Z",
            "goVersion": "go1.26.8",
            "compiler": "gc",
            "platform": "linux/amd64",
        },
        "v1.36.3",
        ListStrategy.PAGES,
    ),
]

# The test bed's servers, the one the tests ran on before (kube-apiserver v1.25.0-k3s1), the
# releases production hubs run (Karmada 1.15-1.19 ship 1.31-1.36) and vendors' spellings.
RECORDED = [
    *TEST_SERVERS,
    (answer("v1.25.0-k3s1", "1", "25"), "v1.25.0-k3s1", ListStrategy.CACHE),
    (answer("v1.28.15", "1", "28"), "v1.28.15", ListStrategy.CACHE),
    (answer("v1.30.14", "1", "30"), "v1.30.14", ListStrategy.CACHE),
    (answer("v1.31.2+k0s", "1", "31"), "v1.31.2+k0s", ListStrategy.CACHE),
    (answer("v1.31.4-eks-2d5f260", "1", "31+"), "v1.31.4-eks-2d5f260", ListStrategy.CACHE),
    (
        answer("v1.33.5-gke.1080000", "1", "33", **emulating("1", "33")),
        "v1.33.5-gke.1080000",
        ListStrategy.CACHE,
    ),
    (answer("v1.34.1", "1", "34", **emulating("1", "34")), "v1.34.1", ListStrategy.PAGES),
    (
        answer("v1.34.1-eks-3025e55", "1", "34+", **emulating("1", "34")),
        "v1.34.1-eks-3025e55",
        ListStrategy.PAGES,
    ),
    (answer("v1.35.0", "1", "35", **emulating("1", "35")), "v1.35.0", ListStrategy.PAGES),
    (answer("v1.36.0", "1", "36", **emulating("1", "36")), "v1.36.0", ListStrategy.PAGES),
    (answer("v1.36.0-rc.1", "1", "36"), "v1.36.0-rc.1", ListStrategy.PAGES),
]


@pytest.mark.parametrize(("recorded", "shown", "strategy"), RECORDED)
def test_each_release_is_read_its_cheapest_safe_way(
    recorded: dict[str, str], shown: str, strategy: ListStrategy
) -> None:
    choice = choose("auto", recorded)
    assert choice.strategy is strategy
    assert choice.requested == "auto"
    assert choice.server_version == shown
    assert ("KEP-2340" in choice.why) is (strategy is ListStrategy.PAGES)


def test_the_line_is_1_34() -> None:
    """Continue pages come from the cache only with ListFromCacheSnapshot (beta in 1.34,
    KEP-4988): 1.31-1.33 serve only a list's first page from it, the rest from etcd."""
    assert PAGES_FROM_CACHE_SINCE == (1, 34)
    assert choose("auto", answer("v1.33.9", "1", "33")).strategy is ListStrategy.CACHE
    assert choose("auto", answer("v1.34.0", "1", "34")).strategy is ListStrategy.PAGES
    assert choose("auto", answer("v2.0.0", "2", "0")).strategy is ListStrategy.PAGES


def test_a_newer_server_emulating_an_older_release_is_read_as_that_release() -> None:
    """Its feature defaults are the emulated release's (KEP-4330)."""
    recorded = answer("v1.35.2", "1", "35", **emulating("1", "33"))
    choice = choose("auto", recorded)
    assert choice.strategy is ListStrategy.CACHE
    assert choice.server_version == "v1.35.2"
    assert "1.33 (emulated) < 1.34" in choice.why
    # An emulated release newer than the binary is no release it has: the binary counts.
    odd = answer("v1.34.0", "1", "34", **emulating("1", "40"))
    assert server_version(odd) == server_version(answer("v1.34.0", "1", "34"))


def test_the_fields_serve_when_git_version_does_not() -> None:
    recorded = answer("unknown", "1", "34+")
    assert choose("auto", recorded).strategy is ListStrategy.PAGES
    assert choose("auto", recorded).server_version == "1.34"
    del recorded["gitVersion"]
    assert choose("auto", recorded).server_version == "1.34"
    assert choose("auto", {"major": "1", "minor": "30"}).strategy is ListStrategy.CACHE


@pytest.mark.parametrize(
    "recorded",
    [
        None,
        {},
        [],
        "v1.34.0",
        {"gitVersion": None},
        {"gitVersion": "v1"},
        {"gitVersion": "one.thirty-four"},
        {"gitVersion": "v1.34.0 ; drop"},
        {"gitVersion": "v\u0661.\u0663\u0664.0"},  # Arabic-Indic digits: not a version
        {"gitVersion": "v1." + "3" * 5000 + ".0"},  # too long a number: not a version
        {"major": 1, "minor": 34},  # numbers, not the strings a server sends
        {"major": "1", "minor": ""},
        {"major": "1"},
    ],
)
def test_no_readable_version_is_read_the_known_way(recorded: Any) -> None:
    choice = choose("auto", recorded)
    assert choice.strategy is ListStrategy.CACHE
    assert choice.server_version is None
    assert "no version" in choice.why


def test_a_version_with_odd_characters_is_read_but_not_echoed() -> None:
    """The report repeats only a short printable gitVersion; anything else, major.minor."""
    choice = choose("auto", answer("v1.34.0-" + "x" * 200, "1", "34"))
    assert choice.strategy is ListStrategy.PAGES
    assert choice.server_version == "1.34"


@pytest.mark.parametrize(
    ("requested", "strategy"), [("cache", ListStrategy.CACHE), ("pages", ListStrategy.PAGES)]
)
def test_a_forced_read_asks_nothing(requested: str, strategy: ListStrategy) -> None:
    for recorded in (None, answer("v1.36.0", "1", "36"), answer("v1.25.0-k3s1", "1", "25")):
        choice = choose(requested, recorded)
        assert choice.strategy is strategy
        assert choice.requested == requested
        assert choice.server_version is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELD = st.one_of(
    st.text(max_size=30),
    st.from_regex(r"v?[0-9]{1,12}\.[0-9]{1,12}(\.[0-9]{1,3})?[-+.]?[\w.+-]{0,20}", fullmatch=True),
    st.from_regex(r"[0-9]{1,12}\+?", fullmatch=True),
    JSON,
)
ANSWERS = st.one_of(
    JSON,
    st.fixed_dictionaries(
        {},
        optional={
            "gitVersion": FIELD,
            "major": FIELD,
            "minor": FIELD,
            "emulationMajor": FIELD,
            "emulationMinor": FIELD,
        },
    ),
)


@given(ANSWERS)
def test_any_answer_gives_a_choice(recorded: Any) -> None:
    choice = choose("auto", recorded)
    assert choice.strategy in ListStrategy
    version = server_version(recorded)
    if version is None:
        assert choice.strategy is ListStrategy.CACHE and choice.server_version is None
    else:
        assert choice.server_version == version.shown
        assert len(version.shown) <= 64 and version.shown.isprintable()
        assert (choice.strategy is ListStrategy.PAGES) is (
            (version.major, version.minor) >= PAGES_FROM_CACHE_SINCE
        )
    summary = choice.as_dict()
    assert summary["read"] == choice.strategy.value and summary["requested"] == "auto"
