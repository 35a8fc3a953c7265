"""Exit codes: one table for the README, `--help` and the report."""

from __future__ import annotations

import textwrap
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ITEM_FAILED = 1
    USAGE = 2
    INCOMPLETE = 3
    BRAKE = 4
    STOPPED = 5
    LOCKED = 6
    INTERNAL = 70


DESCRIPTIONS = {
    ExitCode.OK: "completed",
    ExitCode.ITEM_FAILED: "completed, but an item failed (a delete or lookup errored or ran "
    "out of its read budget, or an upstream cluster or the Project API was unavailable), or "
    "the --report-file could not be written",
    ExitCode.USAGE: "bad usage or configuration (flags, kubeconfig, lock namespace; a hub "
    "that refuses the credentials or cannot be verified), or the target is not a hub: "
    "nothing touched",
    ExitCode.INCOMPLETE: "incomplete: a sweep could not read what it needed, so it deleted "
    "nothing; or an object could not be decided or acted on (kept: internal-error)",
    ExitCode.BRAKE: "safety brake engaged, each named in the sweep's detail: the deletion brake "
    "(a sweep would have deleted too much: it deleted nothing), the marks brake (--max-marks) or "
    "the write brake (--max-writes) held objects back, or an upstream cluster looked emptied "
    "(suspect): nothing deleted there",
    ExitCode.STOPPED: "stopped by --timeout or a signal before finishing",
    ExitCode.LOCKED: "another run holds the lock",
    ExitCode.INTERNAL: "internal error: the run could not go on at all (never one object's "
    "content)",
}

# How a brake (exit 4) is passed once its orphans are checked: a run with that limit raised,
# which `kubectl create job --from=cronjob` cannot give (it copies the arguments): the one-off
# Job, cronjobs/once, whose arguments are set in one place. Every brake message ends with it.
FOR_ONE_RUN = "for one run (the one-off Job: docs/operating.md#getting-past-a-brake)"

# Most severe first: when several apply, the first in this list is the exit code.
SEVERITY = (
    ExitCode.INTERNAL,
    ExitCode.USAGE,
    ExitCode.LOCKED,
    ExitCode.STOPPED,
    ExitCode.BRAKE,
    ExitCode.INCOMPLETE,
    ExitCode.ITEM_FAILED,
    ExitCode.OK,
)


def most_severe(codes: set[ExitCode]) -> ExitCode:
    for code in SEVERITY:
        if code in codes:
            return code
    return ExitCode.OK


def table(width: int = 76) -> str:
    """Wrapped to `width` columns: `--help` indents it by two and must fit 80."""
    return "\n".join(
        textwrap.fill(
            DESCRIPTIONS[code],
            width,
            initial_indent=f"{int(code):>3}  ",
            subsequent_indent=" " * 5,
            break_on_hyphens=False,  # reason codes stay whole
        )
        for code in ExitCode
    )
