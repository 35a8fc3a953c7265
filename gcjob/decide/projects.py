"""Whether an upstream project is proven gone: Milo's Project API, judged (docs/rules.md).

A deleted project's control plane answers 404 for every path, and so does a wrong URL: a
control plane's silence proves nothing. A project is gone only when the Project API answers
a NotFound that names `projects/<name>` in `resourcemanager.miloapis.com`, while the same API,
with the same credentials, in the same run, found every project whose control plane
answered. An API that cannot find a live project (another organisation's, another
environment's, a proxy that answers 404 for everything) proves nothing for anyone.

Pure: the answers are read elsewhere (enumerate) and passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from gcjob.brakes import ProjectsBrake
from gcjob.domain import ByName, is_dns1123_label, sorted_names
from gcjob.model import ProjectAnswer, ProjectCall, ProjectState

PROJECT_GROUP = "resourcemanager.miloapis.com"
PROJECT_RESOURCE = "projects"


@dataclass(frozen=True, slots=True)
class ProjectApiCheck:
    """Whether this run's Project API answers can prove anything: it must have found every
    project whose control plane answered, and at least one."""

    trusted: bool
    detail: str


def check_project_api(
    answers: Mapping[str, ProjectAnswer], control_planes_answered: Iterable[str]
) -> ProjectApiCheck:
    answered = sorted_names(control_planes_answered)  # a set of them was the peak (0.5 MiB)
    if not answered:
        return ProjectApiCheck(
            False, "no project's control plane answered this run: nothing to check the API by"
        )
    missed = [
        name
        for name in answered
        if answers.get(name) not in (ProjectAnswer.FOUND, ProjectAnswer.TERMINATING)
    ]
    if missed:
        shown = ", ".join(missed[:3]) + (f" and {len(missed) - 3} more" if len(missed) > 3 else "")
        return ProjectApiCheck(
            False,
            f"the Project API did not find {shown}, whose control plane answered: "
            "it proves nothing this run",
        )
    return ProjectApiCheck(
        True, f"the Project API found all {len(answered)} projects whose control plane answered"
    )


def judge_project(
    name: str, is_project: bool, answer: ProjectAnswer, api: ProjectApiCheck
) -> ProjectCall:
    """The state of the project behind upstream cluster `name`. `is_project`: the cluster is
    reached through --upstream-server-template (a kubeconfig context never is)."""
    if not is_project:
        return ProjectCall(ProjectState.NOT_A_PROJECT, f"cluster {name} is not a Milo project")
    if answer is ProjectAnswer.FOUND:
        return ProjectCall(ProjectState.PRESENT, f"project {name} exists")
    if answer is ProjectAnswer.TERMINATING:
        return ProjectCall(
            ProjectState.TERMINATING, f"project {name} is being deleted: Milo finalizes it"
        )
    if answer is ProjectAnswer.UNREAD:
        return ProjectCall(ProjectState.UNKNOWN, f"project {name} could not be read")
    # Only a name that is a project name can be proven gone: a cluster name with `/` or dots
    # was never a project, and its NotFound says nothing.
    if not is_dns1123_label(name):
        return ProjectCall(
            ProjectState.UNKNOWN, f"cluster {name[:80]!r} is not a project name: not proven gone"
        )
    if not api.trusted:
        return ProjectCall(ProjectState.UNKNOWN, f"project {name} not found, but {api.detail}")
    return ProjectCall(
        ProjectState.GONE,
        f"project {name} not found by the Project API ({PROJECT_RESOURCE}/{name}), "
        f"which {api.detail.removeprefix('the Project API ')}",
    )


def never_a_project(cluster: str) -> bool:
    """Without a Project API (or a template), no upstream cluster is a Milo project."""
    return False


class ProjectCalls(ByName[ProjectCall]):
    """Each cluster's project call, made from the answers each time it is asked for (a pure
    function of them), not held: a map of calls, each detail naming its project, was about
    120 bytes a project for the run. Behind the projects brake (`brake`: its reason, "" when
    it held nothing), a project found gone is not known, unless the run took it as gone
    before the brake held (`taken`): that one stays gone."""

    def __init__(
        self,
        clusters: tuple[str, ...],  # sorted, each once (a set of 10,000 was 0.5 MiB)
        is_project: Callable[[str], bool],
        answers: Mapping[str, ProjectAnswer],
        api: ProjectApiCheck,
        brake: str = "",
        taken: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(clusters)
        self._is_project = is_project
        self._answers = answers
        self._api = api
        self.brake = brake
        self._taken = taken

    def __getitem__(self, cluster: str) -> ProjectCall:
        if cluster not in self:
            raise KeyError(cluster)
        call = self.unbraked(cluster)
        if self.brake and call.state is ProjectState.GONE and cluster not in self._taken:
            return ProjectCall(ProjectState.UNKNOWN, self.brake)
        return call

    def unbraked(self, cluster: str) -> ProjectCall:
        """Its call before the brake, whichever cluster (another shard's too)."""
        answer = self._answers.get(cluster, ProjectAnswer.UNREAD)
        return judge_project(cluster, self._is_project(cluster), answer, self._api)

    def of(self, clusters: Iterable[str]) -> ProjectCalls:
        """The same calls (the same answers, API check and brake), of `clusters` only: what
        one sweep of a judgement made for several is handed."""
        return ProjectCalls(
            sorted_names(clusters),
            self._is_project,
            self._answers,
            self._api,
            self.brake,
            self._taken,
        )


class ProjectJudgement:
    """The run's one judgement of Milo's projects (one a run: `Run.projects_judged`), made
    for every sweep and every round of --drain. Each `judge` is over every project the
    sweeps of a round name, before any of them acts (gcjob/sweeps/driver.py
    `RoundProjects`); what it found holds for the rest of the run, and a later judgement (a
    round of --drain, a project first named then) can only renew it towards keeping, but for
    a project first found gone then, within the brake's limit:

    - the Project API's check (`check_project_api`): once a judgement found the API cannot
      prove anything, no project is proven gone for the rest of the run;
    - the projects brake (brakes.py `ProjectsBrake`): each project found gone counted once,
      however many sweeps, rounds (or, with --shard, shards: `elsewhere`) find it; once more
      than --max-projects-gone are, none not yet taken as gone is, for the rest of the run.
      One taken as gone by an earlier judgement (a round of --drain that may have deleted
      its objects) stays gone, and counted: its project has one verdict a run.

    The answers themselves are the first the Project API gave this run (enumerate/owners.py
    `ProjectReads` keeps them), so each project has one answer a run. Pure."""

    def __init__(self, max_gone: int) -> None:
        self.brake = ProjectsBrake(max_gone)
        self.api: ProjectApiCheck | None = None

    def judge(
        self,
        clusters: Iterable[str],
        is_project: Callable[[str], bool],
        answers: Mapping[str, ProjectAnswer],
        answered: Sequence[str],
        elsewhere: Iterable[str] = (),
    ) -> ProjectCalls:
        """Each cluster's project call, behind the run's brake: gone only on a trusted
        Project API's NotFound (trusted by every control plane in `answered`, and by every
        earlier judgement of the run), and no more of them than --max-projects-gone in the
        run (else none is taken as gone but those taken by an earlier judgement, which stay
        gone). `elsewhere`: with --shard, the clusters other
        shards judge: the brake counts theirs found gone too (by `answers`), so that it holds
        for the whole hub, the same in every shard."""
        api = check_project_api(answers, [c for c in answered if is_project(c)])
        if self.api is None or self.api.trusted:  # distrust, once found, stays for the run
            self.api = api
        asked = sorted_names(clusters)
        calls = ProjectCalls(asked, is_project, answers, self.api)
        gone = [c for c, call in calls.items() if call.state is ProjectState.GONE]
        gone += [
            c
            for c in sorted_names(elsewhere)
            if c not in calls and calls.unbraked(c).state is ProjectState.GONE
        ]
        reason = self.brake.count(gone)
        if not reason:
            return calls
        return ProjectCalls(asked, is_project, answers, self.api, reason, self.brake.taken)


def project_calls(
    clusters: Iterable[str],
    is_project: Callable[[str], bool],
    answers: Mapping[str, ProjectAnswer],
    answered: Sequence[str],
    max_gone: int,
    elsewhere: Iterable[str] = (),
) -> tuple[ProjectCalls, str]:
    """Each cluster's project call, and the projects brake's reason ("" when it holds
    nothing), as one judgement of a run of its own (`ProjectJudgement`). A run and `gcjob
    explain` judge through gcjob/sweeps/driver.py `RoundProjects` instead."""
    calls = ProjectJudgement(max_gone).judge(clusters, is_project, answers, answered, elsewhere)
    return calls, calls.brake


def answers_used(project: ProjectCall | None, answered: bool, cluster_detail: str) -> str:
    """Which answers the judgement of an object upstream rests on, as `gcjob explain` says
    it: the Project API's (its project's call, made by the run's one judgement: a project
    gone or being deleted decides alone), its control plane's (`answered`, and what it said,
    `cluster_detail`), or both. `project`: None when no Project API is asked about its
    cluster. Pure."""
    plane = "it answered" if answered else f"it did not answer: {cluster_detail or 'no answer'}"
    if project is None:
        return (
            f"its control plane's answer ({plane}); not a Milo project "
            "(none is without --upstream-server-template): the Project API is not asked"
        )
    if project.state is ProjectState.NOT_A_PROJECT:
        return f"its control plane's answer ({plane}); {project.detail}"
    if project.state in (ProjectState.GONE, ProjectState.TERMINATING):
        return (
            f"the Project API's answer: {project.detail}; its control plane's not needed ({plane})"
        )
    return f"both: the Project API's answer ({project.detail}), then its control plane's ({plane})"
