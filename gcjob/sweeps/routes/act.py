"""Deleting an orphaned route: read its parent Gateways upstream again, live, first."""

from __future__ import annotations

from collections.abc import Callable

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

SWEEP = Sweep.ROUTES


def delete_route(
    verdict: Verdict,
    target: RouteTarget,
    upstream: UpstreamIndex,
    deleter: Deleter,
    project_still_gone: Callable[[str], SecondLook] | None = None,
    owner_still_gone: Callable[[UpstreamOwner], SecondLook] | None = None,
) -> Outcome:
    """`project_still_gone`: the Project API asked again, one GET of the project, for a route
    of a project proven gone, whose control plane cannot be asked. `owner_still_gone`: the
    upstream HTTPRoute read again, live, for a route whose owner is proven gone while its
    Gateways may exist. Only a second look that answered keeps a route as `owner-appeared`;
    one that could not be read keeps it as a lookup failure."""
    held = deleter.held(SWEEP, verdict)  # before the reads that serve the deletion
    if held is not None:
        return held
    if verdict.reason in (Reason.PROJECT_GONE, Reason.OWNER_GONE):
        look = _look_again(verdict, target, project_still_gone, owner_still_gone)
        kept = second_look(SWEEP, verdict, look)
        return kept if kept is not None else deleter.delete(SWEEP, verdict, HTTPROUTES)
    for gateway in target.gateways:
        where = f"Gateway {target.namespace}/{gateway} on cluster {target.cluster}"
        try:
            exists = upstream.gateway_exists(target.cluster, target.namespace, gateway)
        except Stopped as exc:
            return read_failure(SWEEP, verdict, where, exc)
        except KubeError as exc:
            return Outcome.of(
                SWEEP,
                verdict,
                Action.SKIPPED,
                Reason.UPSTREAM_UNAVAILABLE,
                f"re-reading {where}: {exc}",
            )
        if exists:
            return Outcome.of(
                SWEEP,
                verdict,
                Action.SKIPPED,
                Reason.GATEWAY_APPEARED,
                f"{where} exists on a second look",
            )
    # Only now, for a route about to go: is its whole upstream namespace gone? (its own
    # reason; one read per namespace, so deciding stays at one upstream request per route)
    namespace = upstream.namespace_exists(target.cluster, target.namespace)
    return deleter.delete(SWEEP, before_delete(verdict, target, namespace), HTTPROUTES)


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
