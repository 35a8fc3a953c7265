"""Deleting an orphaned companion: re-read its referrers live, delete it, then its binding."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from gcjob.act.deleter import Deleter, read_failure
from gcjob.act.marker import Marker, waiting
from gcjob.decide.grace import Graced
from gcjob.decide.grace import left_scope as left_the_sweep
from gcjob.domain import COMPANION_LABEL, NEVER_DELETED_SECRET_TYPES, binding_name
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.reader import Reader
from gcjob.kube.resources import (
    COMPANION_RESOURCES,
    RESOURCEBINDINGS,
    SECRETS,
    WORKLOADDEPLOYMENTS,
)
from gcjob.logs import warn_once
from gcjob.marks import Rule, companion_binding_evidence, new_mark, rule_of
from gcjob.model import Action, Binding, Companion, ObjectRef, Outcome, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.redact import error_line
from gcjob.sweeps.companions.judge import follow_binding, referrer_names

SWEEP = Sweep.COMPANIONS


def delete_companion(verdict: Verdict, hub: Reader, deleter: Deleter) -> list[Outcome]:
    ref = verdict.ref
    held = deleter.held(SWEEP, verdict)  # before the reads that serve the deletion
    if held is not None:
        return [held]
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
                    Reason.REFERRER_APPEARED,
                    f"WorkloadDeployment {name} exists on a second look",
                )
            ]
    if ref.kind == "Secret":
        unproven = prove_secret_type(verdict, hub)
        if unproven is not None:
            return [unproven]
    outcome = deleter.delete(SWEEP, verdict, COMPANION_RESOURCES[ref.kind])
    if outcome.action not in (Action.DELETED, Action.WOULD_DELETE, Action.ALREADY_GONE):
        return [outcome]  # a companion that was not deleted keeps its binding, and its cell copies
    return [outcome, *_binding_step(ref, lambda: _delete_binding(verdict, hub, deleter))]


def _binding_step(companion: ObjectRef, step: Callable[[], list[Outcome]]) -> list[Outcome]:
    """What follows for a companion's binding once the companion was written (deleted,
    marked): an unexpected error here is the binding's (kept, `internal-error`), never a
    reason to report the companion's write as not done."""
    try:
        return step()
    except Stopped:
        raise
    except Exception as exc:
        return [Outcome.internal_error(SWEEP, _binding_ref(companion), error_line(exc))]


# A Secret of any type but those gcjob never deletes: the server filters on `type`, which is
# not in a Secret's metadata (and is immutable, so the proof holds for this uid).
DELETABLE_SECRET_TYPES = ",".join(f"type!={t}" for t in NEVER_DELETED_SECRET_TYPES)


def prove_secret_type(verdict: Verdict, hub: Reader) -> Outcome | None:
    """None when a metadata-only list, filtered by the server on `type`, shows this very
    Secret (its uid) is of a type gcjob may delete; else the Outcome that keeps it. Its type
    is never read from the Secret itself: a GET of a Secret answers with its data."""
    ref = verdict.ref
    selector = f"metadata.name={ref.name},{DELETABLE_SECRET_TYPES}"
    try:
        uids = hub.list(SECRETS, reduce.uid_of, namespace=ref.namespace, field_selector=selector)
    except KubeError as exc:
        return read_failure(SWEEP, verdict, f"the type of Secret {ref.name}", exc)
    if ref.uid and ref.uid in uids:
        return None
    detail = (
        f"not listed with {DELETABLE_SECRET_TYPES}: a Secret type gcjob never deletes "
        "(or replaced since it was observed)"
    )
    return Outcome.of(SWEEP, verdict, Action.SKIPPED, Reason.OWNED_SECRET_TYPE, detail)


def _read_binding(companion: ObjectRef, hub: Reader) -> Binding | Outcome | None:
    """The companion's binding, read in full; None when there is none; an Outcome when it
    cannot be read."""
    unread = _binding_ref(companion)
    try:
        return hub.get(
            RESOURCEBINDINGS, unread.namespace, unread.name, reduce.binding, metadata_only=False
        )
    except KubeError as exc:
        verdict = Verdict(unread, False, Reason.LOOKUP_FAILED, "")
        return read_failure(SWEEP, verdict, f"ResourceBinding {unread.name}", exc)


def _binding_ref(companion: ObjectRef) -> ObjectRef:
    """A companion's binding, by name only: not read (yet)."""
    name = binding_name(companion.name, companion.kind)
    return ObjectRef(
        RESOURCEBINDINGS.api_version, RESOURCEBINDINGS.kind, companion.namespace, name, "", "", None
    )


def _delete_binding(companion: Verdict, hub: Reader, deleter: Deleter) -> list[Outcome]:
    ref = companion.ref
    binding = _read_binding(ref, hub)
    if binding is None:
        return []  # never bound, or already gone with it
    if isinstance(binding, Outcome):
        return [binding]
    verdict = follow_binding(binding, ref)
    if not verdict.delete:
        return [Outcome.of(SWEEP, verdict, Action.SKIPPED)]
    return [deleter.delete(SWEEP, verdict, RESOURCEBINDINGS)]


# -- marks: a companion and its binding are marked, waited on and unmarked together ----------


def mark_companion(graced: Graced[None], hub: Reader, marker: Marker) -> list[Outcome]:
    """Mark a newly orphaned companion, then its binding with the same time."""
    verdict = graced.verdict
    since = graced.call.since
    assert graced.evidence is not None and since is not None
    if verdict.ref.kind == "Secret":  # proven before the mark too: a mark says "will delete"
        unproven = prove_secret_type(verdict, hub)
        if unproven is not None:
            return [unproven]
    resource = COMPANION_RESOURCES[verdict.ref.kind]
    upgrade = graced.call.upgrade
    outcome = marker.mark(
        SWEEP, verdict, resource, graced.evidence, since, graced.call.detail, upgrade=upgrade
    )
    if outcome.action not in (Action.MARKED, Action.WOULD_MARK) or outcome.reason == Reason.BRAKE:
        return [outcome]  # a companion left unmarked leaves its binding unmarked too

    def follows() -> list[Outcome]:
        return _binding_follows(verdict.ref, since, hub, marker, upgrade=upgrade)

    return [outcome, *_binding_step(verdict.ref, follows)]


def wait_companion(graced: Graced[None], hub: Reader, marker: Marker) -> list[Outcome]:
    """A companion inside its grace period; its binding carries the same mark (again, if it
    lost it or was created since)."""
    since = graced.call.since
    assert since is not None
    kept = waiting(SWEEP, graced.verdict, graced.call.detail, since)
    ref = graced.verdict.ref
    return [kept, *_binding_step(ref, lambda: _binding_follows(ref, since, hub, marker))]


def _binding_follows(
    companion: ObjectRef, since: datetime, hub: Reader, marker: Marker, *, upgrade: bool = False
) -> list[Outcome]:
    braked = marker.marks_braked(upgrade=upgrade)
    if braked is not None:
        # No mark can be written: no read for one either. Not an item: whether the binding
        # exists, or already carries the mark, is not known unread. It is deleted with its
        # companion whether marked or not; the next run marks it.
        warn_once("binding-marks-braked", f"binding marks not written or read: {braked}")
        return []
    binding = _read_binding(companion, hub)
    if binding is None or isinstance(binding, Outcome):
        return [] if binding is None else [binding]
    verdict = follow_binding(binding, companion)
    if not verdict.delete:
        return [Outcome.of(SWEEP, verdict, Action.SKIPPED)]  # it would not go with it either
    verdict = replace(
        verdict,
        reason=Reason.COMPANION_ORPHANED,
        detail=f"binds {companion.kind} {companion.name}, marked with it",
    )
    evidence = companion_binding_evidence(companion).on(binding.ref.uid)
    if binding.ref.mark == new_mark(evidence, Reason.COMPANION_ORPHANED, since):
        return [waiting(SWEEP, verdict, "deleted with its companion", since)]
    return [marker.mark(SWEEP, verdict, RESOURCEBINDINGS, evidence, since, upgrade=upgrade)]


def companion_left_scope(companion: Companion) -> Graced[None] | None:
    """A ConfigMap or Secret with the companions' mark, no longer labelled a companion: its
    mark goes, with its binding's (unmark_companion)."""
    detail = f"no longer labelled {COMPANION_LABEL}=true: out of the sweep, its mark with it"
    return left_the_sweep(companion.ref, Rule.COMPANION, detail)


def unmark_companion(graced: Graced[None], hub: Reader, marker: Marker) -> list[Outcome]:
    """A companion no longer orphaned: its mark goes, and its binding's (the mark the
    companions sweep wrote; a mark of the bindings sweep is that sweep's to remove)."""
    verdict = graced.verdict
    ref = verdict.ref
    outcomes = [marker.unmark(SWEEP, verdict, COMPANION_RESOURCES[ref.kind])]
    done = outcomes[0].action in (Action.UNMARKED, Action.WOULD_UNMARK)
    if not done or outcomes[0].reason == Reason.BRAKE:
        return outcomes  # its binding's mark waits with it: no read for a write not sent
    return [*outcomes, *_binding_step(ref, lambda: _unmark_binding(verdict, hub, marker))]


def _unmark_binding(companion: Verdict, hub: Reader, marker: Marker) -> list[Outcome]:
    verdict, ref = companion, companion.ref
    binding = _read_binding(ref, hub)
    if binding is None or isinstance(binding, Outcome):
        return [] if binding is None else [binding]
    mark = binding.ref.mark
    if mark is None or rule_of(mark) != Rule.COMPANION_BINDING:
        return []
    detail = f"{ref.kind} {ref.name} is no orphan: {verdict.detail}"
    unmark = Verdict(binding.ref, False, verdict.reason, detail)
    return [marker.unmark(SWEEP, unmark, RESOURCEBINDINGS)]
