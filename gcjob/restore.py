"""`gcjob restore`: put back objects a `--delete` run recorded (`--record-deletions`).

A dry run unless `--apply`: each selected object is checked (its kind restorable, no object of
its name there now, its owners looked up) and what would be created is said. With `--apply`
it is created: never over an existing object, its ownerReferences pointed at the live owners
or dropped, annotated `protect` unless told not to. Never a Secret (its data was never
recorded), nor a ResourceBinding of one (it would bind a Secret that is not there): those
are `skipped` (`refused` when named as a target), with where to get them back. The
transforms are gcjob/undo.py's; the page is docs/undo.md.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gcjob import undo
from gcjob.act.events import Regarding
from gcjob.decide.explanation import Target
from gcjob.domain import is_reserved_namespace
from gcjob.exitcodes import ExitCode
from gcjob.kube import reduce
from gcjob.kube.access import KubeAccess
from gcjob.kube.errors import ApiError, KubeError
from gcjob.kube.resources import (
    JUDGED_RESOURCES,
    NAMESPACES,
    RESOURCEBINDINGS,
    SECRETS,
    WORKLOADDEPLOYMENTS,
    Resource,
)
from gcjob.visible import visible

SECRET_REFUSAL = (
    "a Secret's data is never recorded, so it cannot be put back from here: a copy NSO "
    "replicates comes back when NSO reconciles its upstream Secret (or re-create it upstream); "
    "a companion Secret from its source of truth (the workload's operator, your secret store)"
)
SECRET_BINDING_REFUSAL = (
    "it binds Secret {secret}, which restore cannot put back (its data is never recorded): "
    "restored alone it would bind nothing; once the Secret is back from its source, Karmada "
    "makes its binding again"
)
# What gcjob's record holds of a Secret (domain.secret_as_kept; the server sends no `type`
# in a metadata answer, but a kept Secret may say it).
SECRET_ENTRY = frozenset({"apiVersion", "kind", "metadata", "type"})
# Actions: what restore did, or would do, with one object.
WOULD_RESTORE, RESTORED = "would-restore", "restored"
SKIPPED = "skipped"  # what restore never puts back (a Secret, a Secret's binding), not named
REFUSED, FAILED = "refused", "failed"  # exit 1


@dataclass
class Restored:
    """What restore did (or would do) with one recorded object: one line of its output."""

    object: str
    uid: str  # the deleted object's uid, as recorded
    action: str  # WOULD_RESTORE, RESTORED, SKIPPED, REFUSED, FAILED
    detail: str
    owner_references: list[str] = field(default_factory=list)
    new_uid: str | None = None
    regarding: Regarding | None = None  # what was created, for its Event (not in the output)

    def as_json(self) -> dict[str, Any]:
        line: dict[str, Any] = {
            "object": self.object,
            "uid": self.uid,
            "action": self.action,
            "detail": self.detail,
        }
        if self.owner_references:
            line["owner_references"] = self.owner_references
        if self.new_uid is not None:
            line["new_uid"] = self.new_uid
        return line

    def as_text(self) -> list[str]:
        """Its lines for a person: the action, the object and why; each ownerReference change
        on a line below. Control characters escaped: a record is a file anyone who can write
        its volume can edit."""
        uid = f" (uid {self.uid})" if self.uid else ""  # a hand-written entry may name none
        lines = [visible(f"{self.action}: {self.object}{uid}: {self.detail}")]
        if self.new_uid is not None:
            lines[0] += visible(f"; new uid {self.new_uid}")
        lines += [visible(f"    {note}") for note in self.owner_references]
        return lines


def summary_text(results: Sequence[Restored], record: str, apply: bool) -> str:
    """The last line: how many of each action, and what a dry run did not do."""
    counts: dict[str, int] = {}
    for result in results:
        counts[result.action] = counts.get(result.action, 0) + 1
    said = ", ".join(f"{n} {action}" for action, n in counts.items()) or "nothing chosen"
    how = "" if apply else "; a dry run: nothing created (add --apply)"
    return visible(f"{record}: {said}{how}")


RestoreTarget = Target | str  # KIND/NAMESPACE/NAME as explain parses it, or a deleted uid


def _names(recorded: undo.Recorded, target: RestoreTarget) -> bool:
    if isinstance(target, str):
        return target == recorded.uid
    return (target.kind, target.namespace, target.name) == (
        recorded.kind,
        recorded.namespace,
        recorded.name,
    )


def _label(target: RestoreTarget) -> str:
    if isinstance(target, str):
        return target
    return f"{target.kind}/{target.namespace}/{target.name}"


def select(
    recorded: Sequence[undo.Recorded], targets: Sequence[RestoreTarget]
) -> list[undo.Recorded]:
    """The records `targets` name (each must name one), or without targets every object the
    run deleted. Owners first: an anchor is back before the copies it owns are re-pointed to
    it. Raises ValueError on a target no record names."""
    if targets:
        chosen: list[undo.Recorded] = []
        for target in targets:
            found = [r for r in recorded if _names(r, target)]
            if not found:
                raise ValueError(f"{_label(target)}: no delete of it in this record")
            chosen.extend(r for r in found if r not in chosen)
    else:
        chosen = [r for r in recorded if r.deleted_by_gcjob]
    return sorted(chosen, key=lambda r: bool(r.meta.get("ownerReferences")))


# What gcjob deletes, so what a record of its deletes can name: companions, bindings, routes
# and NSO's copies, all namespaced. Anything else in a record was not written by gcjob (a
# hand-edited file): restore never creates it (a ClusterRoleBinding, a Pod, ...).
RESTORABLE: Mapping[tuple[str, str], Resource] = {
    (r.group, r.kind): r
    for r in JUDGED_RESOURCES.values()
    if r.namespaced  # a Namespace: the namespaces sweep reports, never deletes one
}
# The kinds whose owners restore looks up by name (metadata only): what gcjob itself reads.
KNOWN_OWNERS: Mapping[tuple[str, str], Resource] = {
    **RESTORABLE,
    (WORKLOADDEPLOYMENTS.group, WORKLOADDEPLOYMENTS.kind): WORKLOADDEPLOYMENTS,
}
# A version as the API names one (v1, v1alpha2, v1beta1): the copies sweep takes each kind's
# from the hub's discovery, so the record's own is used.
_VERSION = re.compile(r"v[0-9]{1,4}(?:(?:alpha|beta)[0-9]{0,4})?")


def _resource(where: undo.Where) -> Resource | None:
    """gcjob's own resource for a recorded one, at the recorded version; None for anything
    gcjob never deletes."""
    known = RESTORABLE.get((where.group, where.kind))
    if (
        known is None
        or where.plural != known.plural
        or where.namespaced is not known.namespaced
        or not _VERSION.fullmatch(where.version)
    ):
        return None
    return dataclasses.replace(known, version=where.version)


def _live_owners(
    access: KubeAccess,
    namespace: str,
    owners: Iterable[Mapping[str, Any]],
    planned: Mapping[tuple[str, str, str, str], str],
) -> dict[undo.OwnerKey, str]:
    """The uid of each owner found now (or about to be restored, in a dry run), by key. Raises
    KubeError when one cannot be read: never dropped on doubt."""
    found: dict[undo.OwnerKey, str] = {}
    for owner in owners:
        key = undo.owner_key(owner)
        group, kind, name = key
        if (group, kind, namespace, name) in planned:
            found[key] = planned[(group, kind, namespace, name)]
            continue
        resource = KNOWN_OWNERS.get((group, kind))
        if resource is None or not name:
            continue  # a kind gcjob does not read: dropped, and said so
        uid = access.get(resource, namespace, name, reduce.uid_of)
        if uid is not None:
            found[key] = uid
    return found


def restore(
    access: KubeAccess,
    chosen: Sequence[undo.Recorded],
    *,
    apply: bool,
    protect: bool,
    other_hub: bool = False,
    named: bool = False,
) -> tuple[list[Restored], ExitCode]:
    """Each chosen object put back (or, not `apply`, what would be). Exit 0 when every one
    was (or would be), or is one restore never puts back (a Secret, a Secret's binding:
    `skipped`); 1 when one was refused or failed. `named`: the objects were named as
    targets, so one restore never puts back is `refused` (what was asked for is not done).
    The exit code is the same with and without `apply`: a dry run says what applying will.
    An object recorded on another hub (or a record that does not say which) is refused
    unless `other_hub`."""
    try:
        hub = access.get(NAMESPACES, None, undo.HUB_IDENTITY, reduce.uid_of)
    except KubeError as exc:
        why = f"cannot read this hub's identity (namespace {undo.HUB_IDENTITY}): {_said(exc)}"
        return [Restored(r.label, r.uid, FAILED, why) for r in chosen], ExitCode.ITEM_FAILED
    results: list[Restored] = []
    # What a dry run would have created by now: its dependents are said to be re-pointed to it.
    planned: dict[tuple[str, str, str, str], str] = {}
    never = REFUSED if named else SKIPPED
    for recorded in chosen:
        if not other_hub and (recorded.hub is None or recorded.hub != hub):
            results.append(Restored(recorded.label, recorded.uid, REFUSED, _elsewhere(recorded)))
            continue
        results.append(
            _one(access, recorded, apply=apply, protect=protect, planned=planned, never=never)
        )
    failed = any(r.action in (REFUSED, FAILED) for r in results)
    return results, ExitCode.ITEM_FAILED if failed else ExitCode.OK


def _said(exc: KubeError) -> str:
    """A failed request as restore says it: the server's reason first (a namespace being
    deleted is not a permission to grant)."""
    return exc.server_first() if isinstance(exc, ApiError) else str(exc)


def _bound_secret(recorded: undo.Recorded) -> str | None:
    """`namespace/name` of the Secret a recorded ResourceBinding binds, else None."""
    if recorded.where.kind != RESOURCEBINDINGS.kind:
        return None
    bound = reduce.binding(dict(recorded.entry["object"])).resource
    if bound is None or (bound.api_version, bound.kind) != (SECRETS.api_version, SECRETS.kind):
        return None
    return f"{bound.namespace or recorded.namespace}/{bound.name}"


def _elsewhere(recorded: undo.Recorded) -> str:
    where = (
        f"deleted from another hub (namespace {undo.HUB_IDENTITY} uid {recorded.hub})"
        if recorded.hub
        else "the record does not say which hub it was deleted from"
    )
    return f"{where}: not restored here (--other-hub to restore it on this hub anyway)"


def _one(
    access: KubeAccess,
    recorded: undo.Recorded,
    *,
    apply: bool,
    protect: bool,
    planned: dict[tuple[str, str, str, str], str],
    never: str,
) -> Restored:
    def said(action: str, detail: str, notes: list[str] | None = None) -> Restored:
        return Restored(recorded.label, recorded.uid, action, detail, notes or [])

    where = recorded.where
    resource = _resource(where)
    if resource is None:
        return said(
            REFUSED,
            f"gcjob never deletes a {where.kind} ({where.plural}.{where.group or 'core'} "
            f"{where.version}): not gcjob's record of it, not created",
        )
    if is_reserved_namespace(recorded.namespace):
        return said(
            REFUSED,
            f"gcjob never sweeps namespace {recorded.namespace}: not gcjob's record of it, "
            "not created",
        )
    if resource.sensitive:
        if recorded.data_recorded or set(recorded.entry["object"]) - SECRET_ENTRY:
            return said(
                REFUSED,
                "the record holds more of a Secret than its metadata, which gcjob never "
                "records: not gcjob's record of it, not created",
            )
        return said(never, SECRET_REFUSAL)
    if not recorded.data_recorded:
        return said(
            REFUSED,
            f"the record says a {where.kind}'s data was not recorded, which gcjob never "
            "writes: not gcjob's record of it, not created",
        )
    secret = _bound_secret(recorded)
    if secret is not None:
        return said(never, SECRET_BINDING_REFUSAL.format(secret=secret))
    namespace = recorded.namespace if where.namespaced else None
    key = (where.group, where.kind, recorded.namespace, recorded.name)
    if key in planned:  # as --apply finds the one it created above: the exit code is the same
        return said(REFUSED, "an object of that name is restored above: not overwritten")
    try:
        existing = access.get(resource, namespace, recorded.name, reduce.uid_of)
        if existing is not None:
            return said(REFUSED, f"an object of that name exists (uid {existing}): not overwritten")
        owners = _live_owners(
            access, recorded.namespace, recorded.meta.get("ownerReferences") or [], planned
        )
    except KubeError as exc:
        return said(FAILED, f"cannot read what restoring needs: {_said(exc)}")
    body, notes = undo.restore_body(recorded.entry["object"], owners, protect=protect)
    # Created as what the record says it deleted, whatever the object's own fields say.
    body["apiVersion"], body["kind"] = resource.api_version, resource.kind
    if not apply:
        planned[key] = "(restored)"
        return said(WOULD_RESTORE, "not created: a dry run (add --apply)", notes)
    try:
        created = access.create(resource, namespace, body)
    except ApiError as exc:
        if exc.status == 409:
            return said(REFUSED, f"an object of that name exists now: not overwritten ({exc})")
        return said(FAILED, _said(exc), notes)
    except KubeError as exc:
        return said(FAILED, _said(exc), notes)
    new_uid = (
        str((created.get("metadata") or {}).get("uid") or "") if isinstance(created, dict) else ""
    )
    done = said(RESTORED, "created" + (", annotated protect" if protect else ""), notes)
    done.new_uid = new_uid
    done.regarding = Regarding(
        resource.api_version, resource.kind, recorded.namespace, recorded.name, new_uid
    )
    return done
