"""gcjob/decide/common.py: the ownership step, whose evidence describes the ownerReferences
that are there (issue 34 item 5: a copy owned by its anchor was explained as having none)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gcjob.decide.common import check_owners, is_anchor
from gcjob.decide.trace import StepOutcome, Trace
from gcjob.model import UNREADABLE_OWNER, OwnerRef
from gcjob.reasons import Reason
from gcjob.sweeps.copies.judge import Member, understand
from tests.sweeps.copies.test_judge import OLD_UID, copy

ANCHOR = f"anchor-{OLD_UID}"


def evidence(trace: Trace) -> str:
    [step] = [s for s in trace.steps if s.rule == "not-owned"]
    return step.evidence


def test_a_copy_owned_by_its_anchor_is_explained_as_owned_by_its_anchor() -> None:
    """The copies sweep lets go of plain references (NSO's to the anchor is one): the step
    says it saw that reference, and why it manages nothing."""
    trace = Trace()

    member = understand(copy(), trace)

    assert isinstance(member, Member)
    said = evidence(trace)
    assert said == (
        f"ownerReference to ConfigMap {ANCHOR}: an anchor (NSO's bookkeeping): no other owner "
        "manages it"
    )


def test_a_plain_reference_to_another_owner_is_named_and_let_go_where_controllers_count() -> None:
    trace = Trace()
    web = OwnerRef("apps/v1", "Deployment", "web", controller=False)

    assert check_owners((web,), trace, ours=is_anchor, controllers_only=True) is None

    assert "ownerReference to Deployment web: not a controller" in evidence(trace)


def test_without_references_each_sweep_says_what_it_read() -> None:
    companions, routes = Trace(), Trace()
    check_owners((), companions)
    check_owners((), routes, ours=is_anchor, controllers_only=True)  # reads controllers only
    assert evidence(companions) == "no ownerReferences"
    assert evidence(routes) == "no controller ownerReference"


owner_refs = st.lists(
    st.one_of(
        st.just(UNREADABLE_OWNER),
        st.builds(
            OwnerRef,
            st.sampled_from(["v1", "apps/v1"]),
            st.sampled_from(["ConfigMap", "Deployment"]),
            st.sampled_from([ANCHOR, "anchor-web", "web"]),
            st.booleans(),
        ),
    ),
    max_size=5,
)


@given(owner_refs, st.booleans())
def test_the_evidence_never_says_none_where_there_are_some_and_the_verdict_is_as_before(
    owners: list[OwnerRef], controllers_only: bool
) -> None:
    trace = Trace()

    held = check_owners(tuple(owners), trace, ours=is_anchor, controllers_only=controllers_only)

    considered = [o for o in owners if o.controller or not controllers_only]
    assert (held is not None) == any(not is_anchor(o) for o in considered)
    if held is not None:
        assert held[0] is Reason.OWNED
        return
    [step] = trace.steps
    assert step.outcome is StepOutcome.PASSED
    assert ("no " in step.evidence.split(":")[0]) == (not owners)
