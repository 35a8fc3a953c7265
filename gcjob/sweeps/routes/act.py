"""Deleting an orphaned route: read its parent Gateways upstream again, live, first."""

from __future__ import annotations

from collections.abc import Callable

from gcjob.act.deleter import Deleter, read_failure
from gcjob.enumerate.upstream import UpstreamIndex
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import HTTPROUTES
from gcjob.model import Action, Outcome, RouteTarget, Sweep, UpstreamOwner, Verdict
from gcjob.reasons import Reason
from gcjob.sweeps.routes.judge import before_delete

SWEEP = Sweep.ROUTES


def delete_route(
    verdict: Verdict,
    target: RouteTarget,
    upstream: UpstreamIndex,
    deleter: Deleter,
    project_still_gone: Callable[[str], str | None] | None = None,
    owner_still_gone: Callable[[UpstreamOwner], str | None] | None = None,
) -> Outcome:
    """`project_still_gone`: the Project API asked again (None: still gone, else why not),
    for a route of a project proven gone, whose control plane cannot be asked.
    `owner_still_gone`: the upstream HTTPRoute read again, live (None: still gone, else why
    not), for a route whose owner is proven gone while its Gateways may exist."""
    held = deleter.held(SWEEP, verdict)  # before the reads that serve the deletion
    if held is not None:
        return held
    if verdict.reason == Reason.PROJECT_GONE:
        why = project_still_gone(target.cluster) if project_still_gone else "no Project API"
        if why is not None:
            return Outcome.of(SWEEP, verdict, Action.SKIPPED, Reason.OWNER_APPEARED, why)
        return deleter.delete(SWEEP, verdict, HTTPROUTES)
    if verdict.reason == Reason.OWNER_GONE:
        if target.owner is None or owner_still_gone is None:
            why = "its upstream HTTPRoute cannot be read again"
        else:
            try:
                why = owner_still_gone(target.owner)
            except Stopped as exc:
                return read_failure(SWEEP, verdict, str(target.owner), exc)
        if why is not None:
            return Outcome.of(SWEEP, verdict, Action.SKIPPED, Reason.OWNER_APPEARED, why)
        return deleter.delete(SWEEP, verdict, HTTPROUTES)
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
