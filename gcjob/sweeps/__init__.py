"""One module per sweep: enumerate -> decide -> act, each reporting through the Run."""

from __future__ import annotations

from collections.abc import Callable

from gcjob.exitcodes import ExitCode
from gcjob.logs import log
from gcjob.model import Sweep
from gcjob.run import Run, SweepState
from gcjob.sweeps import bindings, companions, routes

RUNNERS: dict[Sweep, Callable[[Run], None]] = {
    Sweep.COMPANIONS: companions.sweep,
    Sweep.BINDINGS: bindings.sweep,
    Sweep.ROUTES: routes.sweep,
}


def execute(run: Run) -> None:
    """Every requested sweep, companions first: their bindings go with them."""
    for sweep in Sweep:
        if sweep in run.settings.sweeps:
            run.sweeps[sweep] = SweepState()
    for sweep, state in run.sweeps.items():
        stop = run.budget.stop_reason()
        if stop is not None:
            state.status, state.detail = "stopped", stop
            run.codes.add(ExitCode.STOPPED)
            continue
        run.reporter.progress(f"{sweep.value}: sweeping")
        RUNNERS[sweep](run)
    if ExitCode.STOPPED in run.codes:
        log.warning("run stopped: %s", run.budget.stop_reason())
