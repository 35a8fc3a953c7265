"""gcjob/decide/projects.py: a project is gone only on the Project API's word, and only when
that API is proven to be the right one this run."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gcjob.decide.projects import check_project_api, judge_project, project_calls
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
