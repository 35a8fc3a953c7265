"""Deleting an orphaned companion: re-read its referrers live, delete it, then its binding.

Every delete orphans dependents (gcjob/kube/requests.py): the hub's garbage collector never
takes a companion's binding with it, so the binding is judged and deleted here, explicitly,
after its companion (docs/rules.md, "The binding goes second")."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from gcjob.act.deleter import Deleter, read_failure
from gcjob.act.mark_writer import Marker, waiting
from gcjob.decide.grace import GraceCall, Graced, Next
from gcjob.domain import binding_name
from gcjob.enumerate.parallel import ReadAhead
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
from gcjob.model import Action, Binding, ObjectRef, Outcome, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.redact import error_line
from gcjob.sweeps.companions.judge import (
    DELETABLE_SECRET_TYPES,
    binding_plan,
    companion_binding,
    referrer_names,
)

SWEEP = Sweep("companions")


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
    if outcome.action not in (
        Action.DELETED,
        Action.DELETE_HELD,  # its delete went out: the binding follows
        Action.WOULD_DELETE,
        Action.ALREADY_GONE,
    ):
        return [outcome]  # a companion that was not deleted keeps its binding, and its cell copies
    deleted = GraceCall(Next.DELETE, "")
    return [outcome, *_binding_step(ref, lambda: _binding_follows(verdict, deleted, hub, deleter))]


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


BindingRead = Binding | Outcome | None
BindingsAhead = ReadAhead[ObjectRef, BindingRead]


def read_binding(companion: ObjectRef, hub: Reader) -> BindingRead:
    """The companion's binding, read in full; None when there is none; an Outcome when it
    cannot be read."""
    unread = _binding_ref(companion)
    try:
        return hub.get(
            RESOURCEBINDINGS,
            unread.namespace,
            unread.name,
            reduce.binding,
            metadata_only=False,
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


def _binding_follows(
    companion: Verdict,
    call: GraceCall,
    hub: Reader,
    writer: Deleter | Marker,
    *,
    upgrade: bool = False,
    ahead: BindingsAhead | None = None,
    again: bool = False,
    read: Binding | None = None,
) -> list[Outcome]:
    """The binding of a companion just written (deleted, marked, waited on, unmarked): read
    (or taken from a read a moment ahead: a write is pinned to what that read saw, so a
    binding changed since is not written), then the rule for it (judge.py companion_binding),
    then the write that rule calls for. `again`: a delete's second try, on the binding
    `read` after its first met a 409 (no third)."""
    binding: BindingRead = read
    if binding is None:
        taken = ahead.take(companion.ref) if ahead is not None else None
        binding = taken.result() if taken is not None else read_binding(companion.ref, hub)
    if binding is None or isinstance(binding, Outcome):
        return [] if binding is None else [binding]  # none there, or not read
    follows = companion_binding(binding, companion.ref, companion, call)
    if follows is None:
        return []
    verdict, since = follows.verdict, call.since
    planned = binding_plan(follows)
    if planned.next in (Next.NOTHING, Next.WAIT):  # reported, nothing written
        waited = since if planned.next is Next.WAIT else None
        return [Outcome.of(SWEEP, verdict, planned.action, planned.reason, planned.detail, waited)]
    if isinstance(writer, Deleter):
        assert follows.next is Next.DELETE
        outcome = writer.delete(SWEEP, verdict, RESOURCEBINDINGS)
        if outcome.reason is Reason.CHANGED_SINCE_OBSERVED and not again:
            return _binding_read_again(companion, call, hub, writer, outcome)
        return [outcome]
    if follows.next is Next.UNMARK:
        return [writer.unmark(SWEEP, verdict, RESOURCEBINDINGS)]
    assert follows.next is Next.MARK and follows.evidence is not None and since is not None
    return [writer.mark(SWEEP, verdict, RESOURCEBINDINGS, follows.evidence, since, upgrade=upgrade)]


def _binding_read_again(
    companion: Verdict, call: GraceCall, hub: Reader, deleter: Deleter, conflict: Outcome
) -> list[Outcome]:
    """A binding whose pinned delete met a 409: the companion's Orphan delete has the hub's
    garbage collector remove the companion's ownerReference from it, which changes its
    resourceVersion, maybe between the read and the delete (or Karmada wrote its status).
    Read, judged and deleted once more, pinned to that read. No longer there: someone else
    deleted it (Karmada's detector puts the owner back after the collector removed it, and the
    collector then deletes the binding itself: issue 47), `already-gone`; not read: that
    failure."""
    binding = read_binding(companion.ref, hub)
    if binding is None:
        verdict = Verdict(conflict.ref, False, conflict.reason, conflict.detail)
        return [Outcome.already_gone(SWEEP, verdict)]
    if isinstance(binding, Outcome):
        return [binding]
    return _binding_follows(companion, call, hub, deleter, again=True, read=binding)


# -- marks: a companion and its binding are marked, waited on and unmarked together ----------


def mark_companion(
    graced: Graced[None], hub: Reader, marker: Marker, ahead: BindingsAhead | None = None
) -> list[Outcome]:
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

    follows = partial(_marks_follow, graced, hub, marker, ahead)
    return [outcome, *_binding_step(verdict.ref, follows)]


def wait_companion(
    graced: Graced[None], hub: Reader, marker: Marker, ahead: BindingsAhead | None = None
) -> list[Outcome]:
    """A companion inside its grace period; its binding carries the same mark (again, if it
    lost it or was created since)."""
    since = graced.call.since
    assert since is not None
    kept = waiting(SWEEP, graced.verdict, graced.call.detail, since)
    ref = graced.verdict.ref
    return [kept, *_binding_step(ref, partial(_marks_follow, graced, hub, marker, ahead))]


def _marks_follow(
    graced: Graced[None], hub: Reader, marker: Marker, ahead: BindingsAhead | None
) -> list[Outcome]:
    """A marked or waiting companion's binding carries the same mark (again, if it lost it
    or was created since)."""
    upgrade = graced.call.upgrade
    braked = marker.marks_braked(upgrade=upgrade)
    if braked is not None:
        # No mark can be written: no read for one either (one read ahead goes unused). Not an
        # item: whether the binding exists, or already carries the mark, is not judged. It is
        # deleted with its companion whether marked or not; the next run marks it.
        warn_once("binding-marks-braked", f"binding marks not written or read: {braked}")
        return []
    return _binding_follows(graced.verdict, graced.call, hub, marker, upgrade=upgrade, ahead=ahead)


def unmark_companion(graced: Graced[None], hub: Reader, marker: Marker) -> list[Outcome]:
    """A companion no longer orphaned: its mark goes, and its binding's (the mark the
    companions sweep wrote; a mark of the bindings sweep is that sweep's to remove)."""
    verdict = graced.verdict
    ref = verdict.ref
    outcomes = [marker.unmark(SWEEP, verdict, COMPANION_RESOURCES[ref.kind])]
    done = outcomes[0].action in (Action.UNMARKED, Action.WOULD_UNMARK)
    if not done or outcomes[0].reason == Reason.BRAKE:
        return outcomes  # its binding's mark waits with it: no read for a write not sent

    def follows() -> list[Outcome]:
        return _binding_follows(verdict, graced.call, hub, marker)

    return [*outcomes, *_binding_step(ref, follows)]
