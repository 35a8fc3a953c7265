"""Deleting an orphaned companion: re-read its referrers live, delete it, then its binding."""

from __future__ import annotations

from gcjob.act.deleter import Deleter, read_failure
from gcjob.decide.companions import follow_binding, referrer_names
from gcjob.domain import binding_name
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError
from gcjob.kube.reader import Reader
from gcjob.kube.resources import COMPANION_RESOURCES, RESOURCEBINDINGS, WORKLOADDEPLOYMENTS
from gcjob.model import Action, ObjectRef, Outcome, Sweep, Verdict

SWEEP = Sweep.COMPANIONS


def delete_companion(verdict: Verdict, hub: Reader, deleter: Deleter) -> list[Outcome]:
    ref = verdict.ref
    stopped = deleter.stopped(SWEEP, verdict)
    if stopped is not None:
        return [stopped]
    # The garbage collector's pattern: the index said "gone"; ask again right before deleting.
    # One GET per distinct name: keys differing only in their namespace part name one object.
    for name in referrer_names(verdict.referrers):
        try:
            found = hub.get(WORKLOADDEPLOYMENTS, ref.namespace, name, reduce.name_of)
        except KubeError as exc:
            return [read_failure(SWEEP, verdict, f"WorkloadDeployment {name}", exc)]
        if found is not None:
            return [
                Outcome.of(
                    SWEEP,
                    verdict,
                    Action.SKIPPED,
                    "referrer-appeared",
                    f"WorkloadDeployment {name} exists on a second look",
                )
            ]
    outcome = deleter.delete(SWEEP, verdict, COMPANION_RESOURCES[ref.kind])
    if outcome.action not in (Action.DELETED, Action.WOULD_DELETE, Action.ALREADY_GONE):
        return [outcome]  # a companion that was not deleted keeps its binding, and its cell copies
    return [outcome, *_delete_binding(verdict, hub, deleter)]


def _delete_binding(companion: Verdict, hub: Reader, deleter: Deleter) -> list[Outcome]:
    ref = companion.ref
    name = binding_name(ref.name, ref.kind)
    unread = ObjectRef(
        RESOURCEBINDINGS.api_version, RESOURCEBINDINGS.kind, ref.namespace, name, "", "", None
    )
    try:
        binding = hub.get(
            RESOURCEBINDINGS, ref.namespace, name, reduce.binding, metadata_only=False
        )
    except KubeError as exc:
        verdict = Verdict(unread, False, "lookup-failed", "")
        return [read_failure(SWEEP, verdict, f"ResourceBinding {name}", exc)]
    if binding is None:
        return []  # never bound, or already gone with it
    verdict = follow_binding(binding, ref)
    if not verdict.delete:
        return [Outcome.of(SWEEP, verdict, Action.SKIPPED)]
    return [deleter.delete(SWEEP, verdict, RESOURCEBINDINGS)]
