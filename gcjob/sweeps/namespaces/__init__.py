"""The hub-namespaces sweep, one folder: judge.py (the judgement, pure), scan.py (its reads of
the hub), act.py (its writes: none, report-only), sweep.py (the batch run), explain.py (one
namespace, read by name); and here, the sweep declared once (`REGISTERED`,
gcjob/sweeps/registry.py)."""

from __future__ import annotations

from gcjob.decide.explanation import Explanation, Target
from gcjob.decide.trace import Trace
from gcjob.model import Verdict
from gcjob.reasons import reasons_of
from gcjob.run import Run
from gcjob.sweeps.explaining import ExplainContext
from gcjob.sweeps.namespaces import explain as explaining
from gcjob.sweeps.namespaces.sweep import NEEDS, SWEEP, Namespaces
from gcjob.sweeps.registry import Hand, Registered, Round, Shared


def explain_part(
    ctx: ExplainContext, target: Target, out: Explanation, trace: Trace, hand: Hand
) -> Verdict | None:
    return explaining.explain(ctx, target, out, trace)


def declare(run: Run, round: Round) -> Namespaces:
    return Namespaces(run, round.round_projects())


def runs(run: Run) -> bool:
    """Only when asked for by name (`--sweep namespaces`): it needs an optional RBAC component
    (cronjobs/components/namespaces, `list` on every kind), and a run that did not ask for it
    reads nothing more than before."""
    return run.settings.sweeps_explicit and SWEEP in run.settings.sweeps


REGISTERED = Registered(
    name=SWEEP,
    kinds=("Namespace",),
    needs=NEEDS,
    asks_itself=True,  # an optional component grants it: without it, skipped, not refused
    reasons=reasons_of(SWEEP),
    enforced=False,  # report-only by design: Settings refuses --enforce namespaces
    declare=declare,
    explain=explain_part,
    declaration=Namespaces,
    reads=frozenset({Shared.PROJECTS}),
    runs=runs,
)
