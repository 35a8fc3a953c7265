"""gcjob/decide/projects.py: a project is gone only on the Project API's word, and only when
that API is proven to be the right one this run."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gcjob.decide.projects import (
    ProjectJudgement,
    check_project_api,
    judge_project,
    project_calls,
)
from gcjob.model import ProjectAnswer, ProjectCall, ProjectState

FOUND, GONE = ProjectAnswer.FOUND, ProjectAnswer.NOT_FOUND


def test_a_not_found_from_a_trusted_api_proves_the_project_gone():
    api = check_project_api({"p1": FOUND, "p2": GONE}, ["p1"])
    assert api.trusted
    assert judge_project("p2", True, GONE, api).state is ProjectState.GONE


def test_an_api_that_misses_a_live_project_proves_nothing_for_anyone():
    # Another organisation's API: p1's control plane answered, the API does not know p1.
    api = check_project_api({"p1": GONE, "p2": GONE}, ["p1"])
    assert not api.trusted
    assert judge_project("p2", True, GONE, api).state is ProjectState.UNKNOWN


def test_no_control_plane_answered_means_no_check_and_no_proof():
    api = check_project_api({"p2": GONE}, [])
    assert not api.trusted
    assert judge_project("p2", True, GONE, api).state is ProjectState.UNKNOWN


def test_a_terminating_project_is_kept_apart():
    api = check_project_api({"p1": FOUND}, ["p1"])
    assert judge_project("p3", True, ProjectAnswer.TERMINATING, api).state is (
        ProjectState.TERMINATING
    )


def test_a_kubeconfig_context_is_never_a_project():
    api = check_project_api({"p1": FOUND}, ["p1"])
    assert judge_project("p2", False, GONE, api).state is ProjectState.NOT_A_PROJECT


def test_a_name_that_is_no_project_name_is_never_proven_gone():
    api = check_project_api({"p1": FOUND}, ["p1"])
    for name in ("org/p2", "p.2", "P2", "-p", "x" * 64):
        assert judge_project(name, True, GONE, api).state is ProjectState.UNKNOWN


@given(
    st.dictionaries(st.text(max_size=8), st.sampled_from(list(ProjectAnswer)), max_size=6),
    st.lists(st.text(max_size=8), max_size=6),
    st.text(max_size=70),
    st.booleans(),
    st.sampled_from(list(ProjectAnswer)),
)
def test_generated_answers_prove_gone_only_under_every_condition(
    answers, answered, name, is_project, answer
):
    api = check_project_api(answers, answered)
    call = judge_project(name, is_project, answer, api)
    if call.state is ProjectState.GONE:
        assert is_project and answer is ProjectAnswer.NOT_FOUND and answered
        assert all(answers.get(a) in (FOUND, ProjectAnswer.TERMINATING) for a in answered)


def test_more_projects_gone_than_the_brake_allows_proves_none_gone():
    answers = {"p1": FOUND, "a": GONE, "b": GONE, "c": GONE}

    def is_project(name: str) -> bool:
        return True

    calls, brake = project_calls(answers, is_project, answers, ["p1"], max_gone=2)
    assert "projects brake" in brake
    assert {calls[n].state for n in "abc"} == {ProjectState.UNKNOWN}
    calls, brake = project_calls(answers, is_project, answers, ["p1"], max_gone=3)
    assert brake == "" and {calls[n].state for n in "abc"} == {ProjectState.GONE}


@given(
    answers=st.dictionaries(
        st.sampled_from(["p1", "p2", "a", "b", "c", "x/y"]), st.sampled_from(list(ProjectAnswer))
    ),
    clusters=st.sets(st.sampled_from(["p1", "p2", "a", "b", "c", "x/y", "ctx"])),
    answered=st.lists(st.sampled_from(["p1", "p2", "a", "ctx"])),
    max_gone=st.integers(0, 3),
    elsewhere=st.lists(st.sampled_from(["p1", "b", "c", "d", "e", "x/y"])),
)
def test_calls_made_when_asked_for_are_the_calls_judged_one_by_one(
    answers, clusters, answered, max_gone, elsewhere
):
    """project_calls' map makes each call when asked for (not held): it is, key for key,
    what judging each cluster on its own answer gives, behind the brake. The brake counts
    each project gone once, whether this shard judges it or another (`elsewhere`, named any
    number of times)."""

    def is_project(name: str) -> bool:
        return name != "ctx"

    calls, brake = project_calls(clusters, is_project, answers, answered, max_gone, elsewhere)
    api = check_project_api(answers, [c for c in answered if is_project(c)])

    def judged(c: str) -> ProjectCall:
        return judge_project(c, is_project(c), answers.get(c, ProjectAnswer.UNREAD), api)

    expected = {c: judged(c) for c in sorted(clusters)}
    gone = [c for c, call in expected.items() if call.state is ProjectState.GONE]
    gone_elsewhere = {c for c in set(elsewhere) - clusters if judged(c).state is ProjectState.GONE}
    assert (brake != "") == (len(gone) + len(gone_elsewhere) > max_gone)
    if brake:
        expected.update({c: ProjectCall(ProjectState.UNKNOWN, brake) for c in gone})
    assert dict(calls.items()) == expected and list(calls) == sorted(clusters)
    assert len(calls) == len(clusters) and "nowhere" not in calls


# The run's one judgement (issue 46 item 3): two projects gone, one named only by the routes
# sweep, one only by the copies sweep, each sweep with one; --max-projects-gone 1.
BOTH = {"live": FOUND, "gone-route": GONE, "gone-copy": GONE}


def _is_project(name: str) -> bool:
    return name != "ctx"


def test_the_projects_brake_counts_the_projects_every_sweep_names_together():
    """Judged over the union before either sweep acts, neither project is taken as gone, and
    the brake says the run's count (2), not one sweep's (1)."""
    judgement = ProjectJudgement(max_gone=1)
    calls = judgement.judge(["live", "gone-route", "gone-copy"], _is_project, BOTH, ["live"])
    assert "projects brake: 2 projects" in calls.brake
    routes, copies = calls.of(["live", "gone-route"]), calls.of(["gone-copy"])
    assert (
        routes["gone-route"]
        == copies["gone-copy"]
        == ProjectCall(ProjectState.UNKNOWN, calls.brake)
    )
    assert routes["live"].state is ProjectState.PRESENT
    assert list(copies) == ["gone-copy"] and "gone-route" not in copies


def test_a_brake_that_held_holds_for_the_rest_of_the_run():
    """Judged one after the other (one sweep, then the other; a round of --drain, then the
    next), the second judgement's project makes two: the brake holds it, and every later
    judgement of the run takes no project as gone that it had not taken before it held,
    even one that alone would be within the limit."""
    judgement = ProjectJudgement(max_gone=2)
    answers = {**BOTH, "gone-late": GONE, "gone-last": GONE}
    first = judgement.judge(["live", "gone-route"], _is_project, answers, ["live"])
    assert first.brake == "" and first["gone-route"].state is ProjectState.GONE
    second = judgement.judge(["live", "gone-copy", "gone-late"], _is_project, answers, ["live"])
    assert (
        second["gone-copy"]
        == second["gone-late"]
        == ProjectCall(ProjectState.UNKNOWN, second.brake)
    )
    assert "projects brake: 3 projects" in second.brake
    again = judgement.judge(["gone-copy", "gone-last"], _is_project, answers, ["live"])
    assert again.brake == second.brake
    assert (
        again["gone-copy"] == again["gone-last"] == ProjectCall(ProjectState.UNKNOWN, second.brake)
    )


def test_a_project_taken_as_gone_stays_gone_when_the_brake_holds_later():
    """Issue 46 item 3, as an audit found it: under --max-projects-gone 1 a round of --drain
    takes project A as gone (its routes and copies are deleted); the next names B, gone
    too. The brake holds B, not A: A keeps its verdict, the one every sweep of the first
    round acted on (before: A turned not known, brake-held, after its objects were deleted),
    and the brake says so."""
    judgement = ProjectJudgement(max_gone=1)
    first = judgement.judge(["live", "gone-route"], _is_project, BOTH, ["live"])
    assert first.brake == "" and first["gone-route"].state is ProjectState.GONE
    second = judgement.judge(["live", "gone-route", "gone-copy"], _is_project, BOTH, ["live"])
    assert "projects brake: 2 projects" in second.brake
    assert "the 1 taken earlier stay gone" in second.brake
    assert second["gone-route"] == first["gone-route"]
    assert second.of(["gone-route"])["gone-route"] == first["gone-route"]  # in every sweep
    assert second["gone-copy"] == ProjectCall(ProjectState.UNKNOWN, second.brake)
    assert second["live"].state is ProjectState.PRESENT
    later = judgement.judge(["gone-route", "gone-copy"], _is_project, BOTH, ["live"])
    assert later["gone-route"] == first["gone-route"]
    assert later["gone-copy"] == second["gone-copy"]


def test_a_project_counted_again_is_counted_once():
    judgement = ProjectJudgement(max_gone=1)
    for _ in range(3):  # each sweep, each round: the same project gone
        calls = judgement.judge(["live", "gone-route"], _is_project, BOTH, ["live"])
        assert calls.brake == "" and calls["gone-route"].state is ProjectState.GONE


def test_one_sweeps_vouching_control_planes_vouch_for_the_other_sweeps_projects():
    """As an operator's run found: the copies sweep's only project was the gone one, so no
    control plane of its own answered; the routes sweep's live project's did. One judgement,
    one answer: `project-gone` to both (before: gone to the routes, unknown to the copies)."""
    judgement = ProjectJudgement(max_gone=3)
    calls = judgement.judge(["live", "gone-route"], _is_project, BOTH, ["live"])
    assert calls.of(["gone-route"])["gone-route"].state is ProjectState.GONE
    alone = ProjectJudgement(max_gone=3).judge(["gone-route"], _is_project, BOTH, [])
    assert alone["gone-route"].state is ProjectState.UNKNOWN  # nothing vouched: no proof


def test_an_api_distrusted_once_is_distrusted_for_the_rest_of_the_run():
    judgement = ProjectJudgement(max_gone=3)
    answers = {**BOTH, "other": GONE}  # "other"'s control plane answers: a wrong API?
    assert (
        judgement.judge(["gone-route"], _is_project, answers, ["live"])["gone-route"].state
        is ProjectState.GONE
    )
    distrusted = judgement.judge(["other"], _is_project, answers, ["other"])
    assert distrusted["other"].state is ProjectState.UNKNOWN and not distrusted.brake
    later = judgement.judge(["gone-route"], _is_project, answers, ["live"])
    assert later["gone-route"].state is ProjectState.UNKNOWN


NAMES = ["live", "p1", "p2", "a", "b", "c", "x/y", "ctx"]


@given(
    answers=st.dictionaries(st.sampled_from(NAMES), st.sampled_from(list(ProjectAnswer))),
    judgements=st.lists(
        st.tuples(
            st.sets(st.sampled_from(NAMES)),
            st.lists(st.sampled_from(["live", "p1", "p2", "a", "ctx"])),
            st.lists(st.sampled_from(NAMES), max_size=3),
        ),
        min_size=1,
        max_size=6,
    ),
    max_gone=st.integers(0, 3),
)
def test_no_more_projects_than_the_limit_are_taken_as_gone_in_a_run(answers, judgements, max_gone):
    """However the run's sweeps, rounds and shards name its projects (any order, any
    overlap), the brake holds once the distinct projects found gone over the run pass
    --max-projects-gone (each counted once), and from then on; the projects taken as gone
    over the whole run are at most that many; and a project's call only ever moves towards
    keeping (gone -> not known, and only when the API is found unable to prove anything),
    never back: one taken as gone stays gone under the brake."""
    judgement = ProjectJudgement(max_gone)
    taken: set[str] = set()
    found_gone: set[str] = set()  # by the run's API check as it stood at each judgement
    first: dict[str, ProjectState] = {}
    held = False
    for clusters, answered, elsewhere in judgements:
        calls = judgement.judge(clusters, _is_project, answers, answered, elsewhere)
        api = judgement.api
        assert api is not None
        for name in [*clusters, *elsewhere]:
            answer = answers.get(name, ProjectAnswer.UNREAD)
            if judge_project(name, _is_project(name), answer, api).state is ProjectState.GONE:
                found_gone.add(name)
        held = held or len(found_gone) > max_gone
        assert bool(calls.brake) == held, (found_gone, calls.brake)
        for name, call in calls.items():
            if call.state is ProjectState.GONE:
                taken.add(name)
            before = first.setdefault(name, call.state)
            if call.state is not before:
                assert (before, call.state) == (ProjectState.GONE, ProjectState.UNKNOWN)
                assert not api.trusted, (name, call.detail)
    assert len(taken) <= max_gone
