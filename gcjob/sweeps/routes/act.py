"""Deleting an orphaned route: read its parent Gateways upstream again, live, first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gcjob.act.deleter import Deleter, read_failure, second_look
from gcjob.enumerate.upstream import UpstreamIndex
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import HTTPROUTES
from gcjob.model import (
    Action,
    Looked,
    Outcome,
    RouteTarget,
    SecondLook,
    Sweep,
    UpstreamOwner,
    Verdict,
)
from gcjob.reasons import Reason
from gcjob.sweeps.routes.judge import before_delete

SWEEP = Sweep("routes")


@dataclass(frozen=True, slots=True)
class LiveRead:
    """What the live second look upstream saw of one route about to go, read right before its
    delete (or a moment ahead of it, on the upstream readers: `read_again`): the project or
    upstream HTTPRoute looked at again (`look`), else its Gateways and their namespace."""

    look: SecondLook | None = None
    failed: tuple[str, KubeError] | None = None  # (which Gateway, why) it could not be read
    appeared: str = ""  # the Gateway that exists on a second look
    namespace_exists: bool | None = None


def read_again(
    verdict: Verdict,
    target: RouteTarget,
    upstream: UpstreamIndex,
    project_still_gone: Callable[[str], SecondLook] | None = None,
    owner_still_gone: Callable[[UpstreamOwner], SecondLook] | None = None,
) -> LiveRead:
    """The upstream reads a route's delete rests on, live, in any thread; it changes nothing.
    A route of a project or HTTPRoute proven gone: that looked at again. Else each of its
    Gateways (the first that exists or cannot be read ends it), then whether its whole
    upstream namespace is gone (one read per namespace: deciding stays at one upstream
    request per route)."""
    if verdict.reason in (Reason.PROJECT_GONE, Reason.OWNER_GONE):
        return LiveRead(look=_look_again(verdict, target, project_still_gone, owner_still_gone))
    for gateway in target.gateways:
        where = f"Gateway {target.namespace}/{gateway} on cluster {target.cluster}"
        try:
            exists = upstream.gateway_exists(target.cluster, target.namespace, gateway)
        except KubeError as exc:
            return LiveRead(failed=(where, exc))
        if exists:
            return LiveRead(appeared=where)
    return LiveRead(namespace_exists=upstream.namespace_exists(target.cluster, target.namespace))


def delete_route(
    verdict: Verdict,
    target: RouteTarget,
    upstream: UpstreamIndex,
    deleter: Deleter,
    project_still_gone: Callable[[str], SecondLook] | None = None,
    owner_still_gone: Callable[[UpstreamOwner], SecondLook] | None = None,
    read: Callable[[], LiveRead] | None = None,
) -> Outcome:
    """`project_still_gone`: the Project API asked again, one GET of the project, for a route
    of a project proven gone, whose control plane cannot be asked. `owner_still_gone`: the
    upstream HTTPRoute read again, live, for a route whose owner is proven gone while its
    Gateways may exist. Only a second look that answered keeps a route as `owner-appeared`;
    one that could not be read keeps it as a lookup failure. `read`: the live read, when it
    was read ahead (`read_again`); else it is read now."""
    held = deleter.held(SWEEP, verdict)  # before the reads that serve the deletion
    if held is not None:
        return held
    seen = (
        read()
        if read is not None
        else read_again(verdict, target, upstream, project_still_gone, owner_still_gone)
    )
    if seen.look is not None:
        kept = second_look(SWEEP, verdict, seen.look)
        return kept if kept is not None else deleter.delete(SWEEP, verdict, HTTPROUTES)
    if seen.failed is not None:
        where, exc = seen.failed
        if isinstance(exc, Stopped):
            return read_failure(SWEEP, verdict, where, exc)
        return Outcome.of(
            SWEEP,
            verdict,
            Action.SKIPPED,
            Reason.UPSTREAM_UNAVAILABLE,
            f"re-reading {where}: {exc}",
        )
    if seen.appeared:
        return Outcome.of(
            SWEEP,
            verdict,
            Action.SKIPPED,
            Reason.GATEWAY_APPEARED,
            f"{seen.appeared} exists on a second look",
        )
    # Only now, for a route about to go: is its whole upstream namespace gone? (its own reason)
    return deleter.delete(SWEEP, before_delete(verdict, target, seen.namespace_exists), HTTPROUTES)


def _look_again(
    verdict: Verdict,
    target: RouteTarget,
    project_still_gone: Callable[[str], SecondLook] | None,
    owner_still_gone: Callable[[UpstreamOwner], SecondLook] | None,
) -> SecondLook:
    if verdict.reason == Reason.PROJECT_GONE:
        if project_still_gone is None:
            return SecondLook(Looked.FAILED, "no Project API to look at the project again")
        return project_still_gone(target.cluster)
    if target.owner is None or owner_still_gone is None:
        return SecondLook(Looked.FAILED, "its upstream HTTPRoute cannot be read again")
    return owner_still_gone(target.owner)
