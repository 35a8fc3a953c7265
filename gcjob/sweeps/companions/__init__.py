"""The companions sweep, one folder: judge.py (the judgement, pure), scan.py (its reads of the
hub), act.py (its writes), sweep.py (the batch run), explain.py (one object, read by name);
and here, the sweep declared once (`REGISTERED`, gcjob/sweeps/registry.py)."""

from __future__ import annotations

from gcjob.decide.explanation import Explanation, Target
from gcjob.decide.trace import Trace
from gcjob.kube.resources import CONFIGMAPS, RESOURCEBINDINGS, SECRETS, WORKLOADDEPLOYMENTS
from gcjob.model import Verdict
from gcjob.preflight import READ, READ_DELETE
from gcjob.reasons import Reason, reasons_of
from gcjob.sweeps.companions import explain as explaining
from gcjob.sweeps.companions.sweep import SWEEP, Companions
from gcjob.sweeps.explaining import ExplainContext
from gcjob.sweeps.registry import Hand, Registered, Shared


def explain_part(
    ctx: ExplainContext, target: Target, out: Explanation, trace: Trace, hand: Hand
) -> Verdict | None:
    """A companion, its binding judged as the bindings sweep would after it; an object that
    is no companion (a ConfigMap or Secret may be a copy NSO made, or an anchor) as the copies
    sweep says, where it is one of its own."""
    verdict = explaining.explain(ctx, target, out, trace, hand.binding_after_companion)
    if verdict is None or verdict.reason != Reason.OUT_OF_SCOPE:
        return verdict
    return hand.as_copy(target, out) or verdict


REGISTERED = Registered(
    name=SWEEP,
    kinds=("ConfigMap", "Secret"),
    needs=(
        (CONFIGMAPS, READ_DELETE),
        (SECRETS, READ_DELETE),
        (RESOURCEBINDINGS, READ_DELETE),
        (WORKLOADDEPLOYMENTS, READ),
    ),
    reasons=reasons_of(SWEEP),
    enforced=True,
    declare=lambda run, round: Companions(run),
    explain=explain_part,
    declaration=Companions,
    provides=frozenset({Shared.HANDED}),
    served=(WORKLOADDEPLOYMENTS,),
)
