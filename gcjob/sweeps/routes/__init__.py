"""The routes sweep, one folder: judge.py (the judgement, pure), scan.py (its reads of the
hub), act.py (its writes), sweep.py (the batch run), explain.py (one object, read by name);
and here, the sweep declared once (`REGISTERED`, gcjob/sweeps/registry.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from gcjob.decide.explanation import Explanation, Target
from gcjob.decide.trace import Trace
from gcjob.kube.resources import HTTPROUTES
from gcjob.model import Verdict
from gcjob.preflight import READ_DELETE
from gcjob.reasons import reasons_of
from gcjob.run import Run
from gcjob.sweeps.explaining import ExplainContext
from gcjob.sweeps.registry import Hand, Registered, Round, Shared
from gcjob.sweeps.routes import explain as explaining
from gcjob.sweeps.routes.sweep import SWEEP, Routes, UpstreamRead, named, read


def explain_part(
    ctx: ExplainContext, target: Target, out: Explanation, trace: Trace, hand: Hand
) -> Verdict | None:
    return explaining.explain(ctx, target, out, trace, hand)


def ahead(run: Run, round: Round) -> Callable[[], UpstreamRead] | None:
    """The hub's routes, then every upstream cluster, read before the first sweep (the
    Gateways found handed to the round: `found`)."""
    if run.upstreams is None:
        return None
    return partial(read, run, round.found)


def declare(run: Run, round: Round) -> Routes:
    return Routes(run, round.round_projects(), round.ahead.get(SWEEP))


def done(run: Run) -> None:
    """What its upstream reads found is not needed past it (the index stays on the run, each
    cluster's state, for the summary): the sweeps after it can use the room."""
    if run.upstream_index is not None:
        run.upstream_index.lookups_done()


REGISTERED = Registered(
    name=SWEEP,
    kinds=("HTTPRoute.gateway.networking.k8s.io",),
    needs=((HTTPROUTES, READ_DELETE),),
    reasons=reasons_of(SWEEP),
    enforced=True,
    declare=declare,
    explain=explain_part,
    declaration=Routes,
    reads=frozenset({Shared.PROJECTS}),
    provides=frozenset({Shared.GATEWAYS}),
    ahead=ahead,
    named=named,
    explain_named=explaining.explain_named,
    done=done,
    upstream_required=True,
)
