"""Deleting an orphaned binding: confirm its object is still absent, by name, unfiltered."""

from __future__ import annotations

from gcjob.act.deleter import Deleter, read_failure
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError
from gcjob.kube.reader import Reader
from gcjob.kube.resources import COMPANION_RESOURCES, RESOURCEBINDINGS
from gcjob.model import Action, Outcome, Sweep, Verdict
from gcjob.reasons import Reason

SWEEP = Sweep("bindings")


def delete_binding(
    verdict: Verdict, target: tuple[str, str], hub: Reader, deleter: Deleter
) -> Outcome:
    held = deleter.held(SWEEP, verdict)  # before the reads that serve the deletion
    if held is not None:
        return held
    kind, name = target
    try:
        found = hub.get(COMPANION_RESOURCES[kind], verdict.ref.namespace, name, reduce.name_of)
    except KubeError as exc:
        return read_failure(SWEEP, verdict, f"{kind} {name}", exc)
    if found is not None:
        return Outcome.of(
            SWEEP,
            verdict,
            Action.SKIPPED,
            Reason.OBJECT_APPEARED,
            f"{kind} {name} exists on a second look",
        )
    return deleter.delete(SWEEP, verdict, RESOURCEBINDINGS)
