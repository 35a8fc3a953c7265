"""One module per sweep: enumerate -> decide -> act, each reporting through the Run."""

from __future__ import annotations

from collections.abc import Callable

from gcjob.enumerate.parallel import Reads
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
    """Every requested sweep, companions first: their bindings go with them. Reads that
    depend on nothing run at once: the routes sweep's (hub routes, then every upstream
    cluster) start before the first sweep and go on beside the others; each sweep's own
    collections are read at once too. Deciding, acting and reporting stay in this thread,
    in sweep order, whatever order the answers came in."""
    for sweep in Sweep:
        if sweep in run.settings.sweeps:
            run.sweeps[sweep] = SweepState()
    run.hub_reads = Reads(run.settings.hub_concurrency, "hub")
    run.upstream_reads = Reads(run.settings.upstream_concurrency, "upstream")
    ahead = Reads(1, "routes")  # not a hub or upstream worker: it may wait on those pools
    try:
        if Sweep.ROUTES in run.sweeps and run.upstreams is not None:
            run.routes_ahead = ahead.start(lambda: routes.read(run))
        for sweep, state in run.sweeps.items():
            stop = run.budget.stop_reason()
            if stop is not None:
                state.status, state.detail = "stopped", stop
                run.codes.add(ExitCode.STOPPED)
                continue
            run.reporter.progress(f"{sweep.value}: sweeping")
            RUNNERS[sweep](run)
    finally:
        for reads in (ahead, run.upstream_reads, run.hub_reads):
            reads.close()
    if ExitCode.STOPPED in run.codes:
        log.warning("run stopped: %s", run.budget.stop_reason())
