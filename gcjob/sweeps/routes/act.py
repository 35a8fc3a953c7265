"""Deleting an orphaned route: read its parent Gateways upstream again, live, first."""

from __future__ import annotations

from gcjob.act.deleter import Deleter, read_failure
from gcjob.enumerate.upstream import UpstreamIndex
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import HTTPROUTES
from gcjob.model import Action, Outcome, RouteTarget, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.sweeps.routes.judge import before_delete

SWEEP = Sweep.ROUTES


def delete_route(
    verdict: Verdict, target: RouteTarget, upstream: UpstreamIndex, deleter: Deleter
) -> Outcome:
    held = deleter.held(SWEEP, verdict)  # before the reads that serve the deletion
    if held is not None:
        return held
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
