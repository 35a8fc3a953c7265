"""Follow one run through the code: which gcjob files the main thread's calls pass through,
in order, and how often control climbs back to a file it already left.

    python tools/walk.py sweep --snapshot fixtures/demo --sweep routes
    python tools/walk.py --pytest tests/e2e/test_copies_e2e.py::test_... [-- pytest args]

The walk starts when gcjob/lifecycle.py `run_sweep` is entered and ends when it returns (the
first run only, with --pytest). Every call and return in run_sweep's thread that moves control
from one gcjob file to another is a step; a step into a file already visited is a climb back.
Calls that stay in one file are not steps. Printed: files visited (distinct), steps, climbs
back, distinct steps (from -> to pairs) and distinct climbs back, and per file how often the
walk entered it. Reads on the reader pools' threads are not followed: the walk is the script
one sweep runs, not its I/O."""

from __future__ import annotations

import contextlib
import json
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

import gcjob  # the package on the path: this repository's, or another checkout's (PYTHONPATH)

ROOT = Path(gcjob.__file__).resolve().parents[1]
PACKAGE = str(ROOT / "gcjob") + "/"


class Walk:
    def __init__(self) -> None:
        self.active = False
        self.done = False
        self.depth = 0
        self.current: str | None = None
        self.visited: list[str] = []
        self.steps = 0
        self.climbs = 0
        self.edges: set[tuple[str, str]] = set()
        self.climb_edges: set[tuple[str, str]] = set()
        self.entered: Counter[str] = Counter()

    def _move(self, to: str) -> None:
        if self.current == to:
            return
        if self.current is not None:
            self.steps += 1
            self.edges.add((self.current, to))
            if to in self.visited:
                self.climbs += 1
                self.climb_edges.add((self.current, to))
        if to not in self.visited:
            self.visited.append(to)
        self.entered[to] += 1
        self.current = to

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return") or self.done:
            return
        path = frame.f_code.co_filename
        if not self.active:
            if event == "call" and frame.f_code.co_name == "run_sweep" and path.startswith(PACKAGE):
                self.active, self.depth = True, 0
                self._move(_name(path))
            return
        if event == "call":
            self.depth += 1
            if path.startswith(PACKAGE):
                self._move(_name(path))
            return
        self.depth -= 1
        if self.depth < 0:  # run_sweep returned
            self.done, self.active = True, False
            return
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(PACKAGE):
            caller = caller.f_back
        if caller is not None:
            self._move(_name(caller.f_code.co_filename))

    def report(self) -> dict[str, Any]:
        return {
            "files_visited": len(self.visited),
            "steps": self.steps,
            "climbs_back": self.climbs,
            "distinct_steps": len(self.edges),
            "distinct_climbs_back": len(self.climb_edges),
            "entered": dict(self.entered.most_common()),
            "order": self.visited,
        }


def _name(path: str) -> str:
    return str(Path(path).relative_to(ROOT))


def main(argv: list[str]) -> int:
    from gcjob import lifecycle

    walk = Walk()
    run_sweep = lifecycle.run_sweep

    def walked(*args: Any, **kwargs: Any) -> Any:
        """The first run_sweep, followed; nothing else is (a profiler slows all it watches)."""
        if walk.done or walk.active:
            return run_sweep(*args, **kwargs)
        sys.setprofile(walk.profile)
        try:
            return run_sweep(*args, **kwargs)
        finally:
            sys.setprofile(None)
            walk.done = True

    lifecycle.run_sweep = walked  # the cli imports it when a sweep starts
    if argv and argv[0] == "--pytest":
        import pytest

        pytest.main(["-q", "-p", "no:randomly", "-p", "no:xdist", *argv[1:]])
    else:
        from gcjob.cli import cli

        with contextlib.suppress(SystemExit):
            cli.main(argv, standalone_mode=False)
    print(json.dumps(walk.report(), indent=1), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
