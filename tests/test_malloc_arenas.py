"""A run caps glibc's malloc arenas (lifecycle.few_malloc_arenas), unless the operator's
MALLOC_ARENA_MAX already says how many: theirs wins."""

from __future__ import annotations

import platform

import pytest

from gcjob.lifecycle import few_malloc_arenas


def test_the_operators_malloc_arena_max_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    assert few_malloc_arenas() is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_on_glibc_the_arenas_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert few_malloc_arenas() is True
