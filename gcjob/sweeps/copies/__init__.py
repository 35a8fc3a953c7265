"""The downstream-copies sweep, one folder: judge.py (the judgement, pure), scan.py (its reads
of the hub), act.py (its writes), sweep.py (the batch run), explain.py (one object, read by
name); and here, the sweep declared once (`REGISTERED`, gcjob/sweeps/registry.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from gcjob.decide.explanation import Explanation, Target
from gcjob.decide.trace import Trace
from gcjob.domain import REPLICATED_KIND_NAMES
from gcjob.model import Verdict
from gcjob.reasons import reasons_of
from gcjob.run import Run
from gcjob.sweeps.copies import explain as explaining
from gcjob.sweeps.copies.scan import discovers
from gcjob.sweeps.copies.sweep import ENFORCING, NEEDS, SWEEP, Copies, OwnersRead, named, read
from gcjob.sweeps.explaining import ExplainContext
from gcjob.sweeps.registry import Hand, Registered, Round, Shared


def explain_part(
    ctx: ExplainContext, target: Target, out: Explanation, trace: Trace, hand: Hand
) -> Verdict | None:
    return explaining.explain(ctx, target, out, trace, hand)


def ahead(run: Run, round: Round) -> Callable[[], OwnersRead] | None:
    """Its first read of the hub, then its owners upstream, beside the Gateways' reads, so the
    upstream readers never wait between the two sweeps: its owners are read once the
    Gateways are (enumerate/shared.py), none of them twice. Only beside those reads."""
    gateways = round.read_ahead(Shared.GATEWAYS)
    if gateways is None:
        return None
    return partial(read, run, round.found, gateways.done)


def declare(run: Run, round: Round) -> Copies:
    return Copies(run, round.round_projects(), round.found, round.ahead.get(SWEEP))


def runs(run: Run) -> bool:
    """It needs the hub's discovery, which a snapshot holds only when dumped: run by default
    only where the hub answers it; asked for by name, it says why it did not run."""
    return run.settings.sweeps_explicit or discovers(run.hub)


REGISTERED = Registered(
    name=SWEEP,
    kinds=REPLICATED_KIND_NAMES,
    needs=NEEDS,
    enforcing=ENFORCING,
    asks_itself=True,
    reasons=reasons_of(SWEEP),
    enforced=False,  # it lands report-only: an operator enforces it (--enforce copies)
    declare=declare,
    explain=explain_part,
    declaration=Copies,
    reads=frozenset({Shared.PROJECTS, Shared.GATEWAYS}),
    ahead=ahead,
    named=named,
    explain_named=explaining.named,
    runs=runs,
)
