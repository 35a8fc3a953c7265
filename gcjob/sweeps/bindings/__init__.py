"""The bindings sweep, one folder: judge.py (the judgement, pure), scan.py (its reads of the
hub), act.py (its writes), sweep.py (the batch run), explain.py (one object, read by name);
and here, the sweep declared once (`REGISTERED`, gcjob/sweeps/registry.py)."""

from __future__ import annotations

from gcjob.decide.explanation import Explanation, Target
from gcjob.decide.trace import Trace
from gcjob.kube.resources import CONFIGMAPS, RESOURCEBINDINGS, SECRETS
from gcjob.model import Verdict
from gcjob.preflight import READ, READ_DELETE
from gcjob.reasons import reasons_of
from gcjob.run import Run
from gcjob.sweeps.bindings import explain as explaining
from gcjob.sweeps.bindings.sweep import SWEEP, Bindings
from gcjob.sweeps.explaining import ExplainContext
from gcjob.sweeps.registry import Hand, Registered, Round, Shared


def explain_part(
    ctx: ExplainContext, target: Target, out: Explanation, trace: Trace, hand: Hand
) -> Verdict | None:
    """A binding; one of a labelled companion's as the companions sweep judges it."""
    return explaining.explain(ctx, target, out, trace, hand.binding_of_companion)


def declare(run: Run, round: Round) -> Bindings:
    """Handed the labelled companions and the bindings the companions sweep reported."""
    handed = round.handed_on()
    return Bindings(run, handed.keys, handed.reported)


REGISTERED = Registered(
    name=SWEEP,
    kinds=("ResourceBinding.work.karmada.io",),
    needs=((RESOURCEBINDINGS, READ_DELETE), (CONFIGMAPS, READ), (SECRETS, READ)),
    reasons=reasons_of(SWEEP),
    enforced=True,
    declare=declare,
    explain=explain_part,
    declaration=Bindings,
    reads=frozenset({Shared.HANDED}),
)
