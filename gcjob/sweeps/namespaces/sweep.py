"""Sweep 5: the hub namespaces `ns-<uid>` whose upstream namespace is proven gone, and what
they still hold. Report-only by design: it never deletes, marks or patches a namespace
(docs/rules.md, "Hub namespaces": Karmada propagates every hub namespace to the member
clusters, and deleting one deletes or orphans theirs).

The hub's namespaces carrying both upstream labels are listed once (metadata only); each
candidate's upstream Namespace is looked up as the copies sweep looks up an owner (enumerate/
owners.py, one list of namespaces per upstream cluster, a GET to prove one gone) and its
project judged in the round's one judgement (the Project API, with its trust rule). Only the
candidates proven gone are inspected, at most --namespaces-max-inspected a run, in name
order: one metadata-only list per kind the namespace controller would delete there.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from gcjob.act.deleter import Deleter
from gcjob.decide.common import Claims, hold_back
from gcjob.decide.grace import GraceCall, Graced, Next
from gcjob.decide.projects import ProjectCalls, project_calls
from gcjob.domain import sorted_names
from gcjob.enumerate.owners import OwnerLookups
from gcjob.exitcodes import ExitCode
from gcjob.kube.access import KubeAccess
from gcjob.kube.errors import KubeError, Stopped
from gcjob.kube.resources import NAMESPACES, WORKS, Resource
from gcjob.logs import log
from gcjob.marks import Rule
from gcjob.model import (
    Action,
    Holdings,
    HubNamespace,
    Outcome,
    OwnerFacts,
    Propagation,
    Sweep,
    UpstreamOwner,
    Verdict,
)
from gcjob.preflight import Needs, Permission, missing
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.sweeps.driver import (
    Counted,
    Declaration,
    Exits,
    Healthy,
    Incomplete,
    Judged,
    NotConfigured,
    Planned,
    Projects,
    RoundProjects,
    Scan,
)
from gcjob.sweeps.namespaces.act import NO_MARK
from gcjob.sweeps.namespaces.judge import (
    NO_PROJECTS_BRAKE,
    judge_namespace,
    upstream_of,
)
from gcjob.sweeps.namespaces.scan import (
    NamespacedDiscovery,
    holdings,
    propagations,
    scan_namespaces,
    what_it_deletes,
)

SWEEP = Sweep("namespaces")
# What it reads on the hub, cluster-wide, metadata only (cronjobs/components/namespaces grants
# them, with `list` on every kind it inspects): it asks for them itself, and without them is
# skipped, not the run.
NEEDS: Needs = ((NAMESPACES, ("list",)), (WORKS, ("list",)))


Judgement = tuple[Verdict, HubNamespace]


@dataclass
class BatchWorld:
    """The sweep's world for judge.py: what was read before judging. `inspected`: each
    namespace listed (None in it: asked for, not yet listed); asking about one not in it
    records it (`asked`)."""

    lookups: OwnerLookups
    calls: ProjectCalls
    inspected: dict[str, Holdings | None]
    works: dict[str, Propagation] | str
    asked: list[str]

    def facts(self, owner: UpstreamOwner) -> OwnerFacts:
        return OwnerFacts(self.calls[owner.cluster], self.lookups.read(owner))

    def holdings(self, namespace: HubNamespace) -> Holdings | None:
        name = namespace.ref.name
        if name not in self.inspected:
            self.asked.append(name)
        return self.inspected.get(name)

    def propagation(self, namespace: HubNamespace) -> Propagation:
        if isinstance(self.works, str):
            return Propagation(unknown=self.works)
        return self.works.get(namespace.ref.uid, Propagation())


class Namespaces(Declaration[Judgement, Resource]):
    """Sweep 5, declared (gcjob/sweeps/driver.py runs it). It deletes nothing whatever the
    settings say (`delete` says `would-delete`, no deleter is used), writes no mark and removes
    none; Settings refuses `--enforce namespaces` (exit 2)."""

    sweep = SWEEP
    rule = Rule.COPY  # never written: `mark` and `unmark` write nothing
    marks_each = 0  # so the marks brake never holds it back for marks it does not write

    def __init__(self, run: Run, projects: RoundProjects) -> None:
        super().__init__(run)
        self.projects = projects

    def scan(self) -> Scan[Judgement, Resource]:
        run, settings = self.run, self.run.settings
        if run.upstreams is None:
            raise NotConfigured("no upstream configured (--upstream-kubeconfig)")
        if not isinstance(run.hub, NamespacedDiscovery) or settings.snapshot:
            raise NotConfigured(
                "not swept from a snapshot: it needs the hub's discovery", "not run"
            )
        denied = _denied(run)
        if denied:
            raise NotConfigured(
                f"the hub identity may not {'; '.join(denied)}: grant it "
                "(cronjobs/components/namespaces) to report leftover hub namespaces",
                "not run",
            )
        try:
            listed = scan_namespaces(run.hub)
        except KubeError as exc:
            raise Incomplete("cannot list the hub namespaces", exc) from exc
        candidates: list[tuple[HubNamespace, UpstreamOwner | Verdict]] = []
        elsewhere = 0
        for namespace in sorted(listed, key=lambda n: n.ref.name):
            name = namespace.ref.name
            if not run.scope.allows(name):
                continue
            upstream = upstream_of(namespace)
            if isinstance(upstream, Verdict) and upstream.reason is Reason.OUT_OF_SCOPE:
                continue  # not `ns-<uuid>`: never this sweep's, not reported
            if not run.shard.judges(name):
                elsewhere += 1
                continue
            candidates.append((namespace, upstream))
        yield Counted(len(listed), len(candidates), elsewhere)
        # Only the upstream namespaces of candidates not held back already (terminating,
        # young, protected: kept whatever upstream says) are looked up.
        owners = {
            o
            for n, o in candidates
            if isinstance(o, UpstreamOwner) and not held_back(n, run.now, settings.min_age)
        }
        lookups = OwnerLookups(run.upstreams, run.upstream_reads)
        try:
            lookups.load(owners)
            clusters = sorted_names(o.cluster for o in owners)
            # The run's one answer a project, judged with the trust rule but no projects
            # brake: the brake stops deletions on a Project API that suddenly finds many
            # projects gone, and this sweep deletes nothing; its leftovers are deleted
            # projects', thousands on a big hub, which would hold it (exit 4) every run.
            answers = self.projects.reads.answers(clusters)
            calls, _ = project_calls(
                clusters, run.is_project, answers, lookups.answered(), NO_PROJECTS_BRAKE
            )
        except Stopped as exc:
            raise Incomplete("stopped while reading upstream namespaces", exc) from exc
        yield Projects(calls, "", self.projects.reads.failed(clusters))
        world = BatchWorld(lookups, calls, {}, propagations(run.hub), [])

        def judge(namespace: HubNamespace) -> Verdict:
            return judge_namespace(namespace, world, run.now, settings.min_age, settings.clock_skew)

        # First pass: which leftovers need their contents listed; the first ones by name,
        # up to the cap, are; then every candidate is judged on what was read.
        for namespace, _ in candidates:
            judge(namespace)
        if world.asked:
            try:
                kinds, undiscovered = what_it_deletes(run.hub)
            except Stopped as exc:
                raise Incomplete("stopped while reading the hub's discovery", exc) from exc
            except KubeError as exc:
                raise Incomplete("cannot tell which kinds the hub serves", exc) from exc
            for name in world.asked[: settings.namespaces_max_inspected]:
                try:
                    world.inspected[name] = holdings(run.hub, name, kinds, undiscovered)
                except Stopped as exc:
                    raise Incomplete("stopped while listing a namespace", exc) from exc
            for name in world.asked[settings.namespaces_max_inspected :]:
                world.inspected[name] = None
        judged: list[Judgement] = []
        healthy: Counter[Reason] = Counter()
        failed = False
        for namespace, _ in candidates:
            verdict = judge(namespace)
            failed = failed or verdict.reason in (Reason.UPSTREAM_UNAVAILABLE, Reason.LOOKUP_FAILED)
            if verdict.healthy and not settings.report_healthy:
                healthy[verdict.reason] += 1
            else:
                judged.append((verdict, namespace))
        if failed:
            yield Exits(ExitCode.ITEM_FAILED)  # a failed upstream read fails the run
        yield Judged(judged, lambda j: j[0].ref)
        yield Healthy(healthy)

    def plan(self, judged: Judgement) -> Planned[Resource]:
        verdict, namespace = judged
        if not verdict.delete:
            return Planned(verdict, None, None, NAMESPACES, None)
        call = GraceCall(Next.DELETE, NO_MARK)
        return Planned(verdict, None, call, NAMESPACES, Claims(namespace.owners, namespace.protect))

    def resource(self, graced: Graced[Resource]) -> Resource:
        return NAMESPACES

    def delete(self, graced: Graced[Resource], deleter: Deleter) -> list[Outcome]:
        """Never sent, whatever `deleter`: what it would do, said."""
        verdict = graced.verdict
        return [Outcome.of(SWEEP, verdict, Action.WOULD_DELETE, detail=verdict.detail)]

    def mark(self, graced: Graced[Resource]) -> list[Outcome]:
        return [Outcome.of(SWEEP, graced.verdict, Action.SKIPPED, detail=NO_MARK)]

    def unmark(self, graced: Graced[Resource]) -> list[Outcome]:
        return [Outcome.of(SWEEP, graced.verdict, Action.SKIPPED, detail=NO_MARK)]

    def wait(self, graced: Graced[Resource]) -> list[Outcome]:
        return [Outcome.of(SWEEP, graced.verdict, Action.SKIPPED, detail=NO_MARK)]


def held_back(namespace: HubNamespace, now: datetime, min_age: timedelta) -> bool:
    """Kept by the rules every sweep obeys whatever its upstream namespace is."""
    return hold_back(namespace.ref, now, min_age, namespace.protect) is not None


def _denied(run: Run) -> list[str]:
    """What the hub identity may not do of what this sweep reads cluster-wide, as its
    SelfSubjectAccessReviews answer; [] when the hub cannot say."""
    if not isinstance(run.hub, KubeAccess):
        return []
    needs = [Permission(verb, resource, None) for resource, verbs in NEEDS for verb in verbs]
    try:
        return missing(run.hub, needs)
    except KubeError as exc:
        log.warning("cannot check the namespaces sweep's permissions (%s): going on", exc)
        return []
