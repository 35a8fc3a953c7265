"""A hostile or broken upstream's answers against each cluster's read budget (issue 20 items
7, 8, 10): generated answers (page sizes, item counts, continue tokens, statuses, Status
bodies with arbitrary text, bytes that are no JSON) go through the real access layer and the
upstream index. The wire itself (encodings refused, body caps, deadlines) has its own tests
in tests/kube/test_transport.py, and the whole CLI meets a hostile upstream in
tests/e2e/test_hostile_upstream_e2e.py.

The transport here only hands each request its generated answer, cut into chunks as a
socket would: it stands for the wire, not for a Kubernetes API.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.enumerate.upstream import UpstreamIndex, Wanted
from gcjob.kube.access import BudgetExhausted, KubeAccess, ReadBudget, ReadLimits
from gcjob.kube.errors import UnknownCluster
from gcjob.kube.requests import Request
from gcjob.kube.resources import GATEWAYS
from gcjob.kube.transport import BodyConsumer, Response, Transport
from gcjob.model import ClusterStatus, RouteTarget
from gcjob.redact import redact

SECRET = "s3cr3t-t0ken"
LIMITS = ReadLimits(pages=3, items=60, bytes=40_000, value=4096, seconds=30.0)
DISCOVERY = json.dumps(
    {"kind": "APIResourceList", "resources": [{"name": "gateways", "namespaced": True}]}
).encode()


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    chunk: int = 4096


@dataclass
class ScriptedWire:
    """Answers discovery as a server serving Gateways, and the n-th other request with
    `answers[n]` (the last one again forever: a loop never ends by itself)."""

    answers: list[Answer]
    sent: list[Request] = field(default_factory=list)
    fed: int = 0
    server: str = "https://hostile.example"
    clock: list[float] = field(default_factory=lambda: [0.0])  # advanced as the wire "drips"
    tick: float = 0.0  # seconds each chunk takes to arrive

    def send(
        self, request: Request, *, final: bool = False, consume: BodyConsumer | None = None
    ) -> Response:
        if request.path == GATEWAYS.group_version_path:
            return Response(200, {}, DISCOVERY)
        answer = self.answers[min(len(self.sent), len(self.answers) - 1)]
        self.sent.append(request)
        if consume is None or not 200 <= answer.status < 300:
            return Response(answer.status, {}, answer.body)
        for start in range(0, len(answer.body), answer.chunk):
            chunk = answer.body[start : start + answer.chunk]
            self.fed += len(chunk)
            self.clock[0] += self.tick
            consume.feed(chunk)
        return Response(answer.status, {}, b"", streamed=True)

    def close_idle(self) -> None:
        pass


class Source:
    def __init__(self, readers: dict[str, KubeAccess]) -> None:
        self.readers = readers

    def reader_for(self, cluster: str) -> KubeAccess:
        if cluster not in self.readers:
            raise UnknownCluster(cluster)
        return self.readers[cluster]


def reader(wire: ScriptedWire, limits: ReadLimits = LIMITS) -> KubeAccess:
    return KubeAccess(
        cast(Transport, wire),
        page_size=5,
        budget=ReadBudget(limits, "x", clock=lambda: wire.clock[0]),
        max_value_chars=limits.value,
    )


def page(names: list[str], token: str | None, pad: int = 0) -> bytes:
    items = [{"metadata": {"name": n, "annotations": {"a": "x" * pad}}} for n in names]
    meta: dict[str, Any] = {"continue": token} if token is not None else {}
    return json.dumps(
        {"kind": "PartialObjectMetadataList", "metadata": meta, "items": items}
    ).encode()


names = st.sampled_from(["gw-a", "gw-b", "gw-c", "gw-x", "gw-y"])
status_text = st.text(max_size=200).map(lambda t: f"{t}\nAuthorization: Bearer {SECRET}\n{t}")
answers = st.one_of(
    st.builds(
        lambda n, token, pad, chunk: Answer(200, page(n, token, pad), chunk),
        st.lists(names, max_size=40),
        st.one_of(st.none(), st.just("again"), st.text(min_size=1, max_size=20)),
        st.integers(0, 300),
        st.integers(1, 5000),
    ),
    st.builds(
        lambda status, message: Answer(
            status,
            json.dumps({"kind": "Status", "reason": message[:20], "message": message}).encode(),
        ),
        st.sampled_from([400, 401, 403, 404, 410, 429, 500, 503]),
        status_text,
    ),
    st.builds(
        lambda junk, chunk: Answer(200, junk, chunk), st.binary(max_size=3000), st.integers(1, 500)
    ),
)


@given(
    script=st.lists(answers, min_size=1, max_size=6),
    healthy=st.booleans(),
    tick=st.sampled_from([0.0, 0.01, 1.0]),
)
def test_no_answer_escapes_the_cluster_or_its_budget(
    script: list[Answer], healthy: bool, tick: float
) -> None:
    wire = ScriptedWire(script, tick=tick)
    good = ScriptedWire([Answer(200, page(["gw-a"], None))])
    readers = {"hostile": reader(wire), "healthy": reader(good)}
    asked = ("gw-a", "gw-b")
    targets = [RouteTarget("hostile", f"p{i}", asked, "ns-h") for i in range(3)]
    if healthy:
        targets.append(RouteTarget("healthy", "p", asked, "ns-g"))
    index = UpstreamIndex(Source(readers))

    index.load(Wanted.of(targets), suspect_min_routes=10)  # never raises

    state = index.clusters["hostile"]
    assert state.status in (ClusterStatus.OK, ClusterStatus.UNAVAILABLE)
    assert state.detail == redact(state.detail) and SECRET not in state.detail
    budget = readers["hostile"].budget
    assert budget is not None
    continued = [r for r in wire.sent if any(k == "continue" for k, _ in r.query)]
    assert len(continued) <= LIMITS.pages
    assert budget.items <= LIMITS.items + 1  # the one that crossed it ends the read
    assert wire.fed <= LIMITS.bytes + max(a.chunk for a in script)
    assert budget.seconds <= LIMITS.seconds + tick  # the chunk that crossed it ends the read
    for target in targets[:3]:
        view = index.view(target)
        assert view.gateways is None or view.gateways <= set(asked)
        assert view.cluster_status is state.status
        assert SECRET not in view.cluster_detail and SECRET not in view.lookup_error
    if healthy:  # the other cluster is decided whatever this one did
        assert index.clusters["healthy"].status is ClusterStatus.OK
        assert index.view(targets[-1]).gateways == {"gw-a"}


def test_a_continue_loop_ends_at_the_page_budget() -> None:
    """issue 20 item 8: 0 items a page, a continue token on every one, forever."""
    wire = ScriptedWire([Answer(200, page([], "again"))])
    index = UpstreamIndex(Source({"loop": reader(wire)}))

    index.load(Wanted.of([RouteTarget("loop", "p", ("gw-a", "gw-b"), "ns")]), 10)

    state = index.clusters["loop"]
    assert state.status is ClusterStatus.UNAVAILABLE
    assert "read budget ran out: more than 3 continued list pages" in state.detail
    assert "--upstream-max-pages" in state.detail
    assert len(wire.sent) == 1 + LIMITS.pages


def test_a_list_ignoring_limit_ends_at_the_item_budget_and_keeps_only_names_asked() -> None:
    """issue 20 item 7: one answer of far more items than asked for."""
    wire = ScriptedWire([Answer(200, page([f"gw-{i}" for i in range(1000)], None))])
    index = UpstreamIndex(Source({"huge": reader(wire)}))

    index.load(Wanted.of([RouteTarget("huge", "p", ("gw-1", "gw-2"), "ns")]), 10)

    assert index.clusters["huge"].status is ClusterStatus.UNAVAILABLE
    assert "more than 60 list items (--upstream-max-items)" in index.clusters["huge"].detail


def test_a_list_within_budget_keeps_only_the_names_asked() -> None:
    wire = ScriptedWire([Answer(200, page([f"gw-{i}" for i in range(50)], None))])
    index = UpstreamIndex(Source({"big": reader(wire)}))
    target = RouteTarget("big", "p", ("gw-1", "gw-99"), "ns")

    index.load(Wanted.of([target]), 10)

    assert index.clusters["big"].status is ClusterStatus.OK
    assert index.view(target).gateways == {"gw-1"}
    assert index.clusters["big"].gateways_found == 1


def test_bytes_are_counted_over_every_request() -> None:
    wire = ScriptedWire([Answer(200, page(["gw-a"], None, pad=3000))])
    index = UpstreamIndex(Source({"fat": reader(wire)}))
    targets = [RouteTarget("fat", f"p{i}", ("gw-a", "gw-b"), "ns") for i in range(20)]

    index.load(Wanted.of(targets), 10)

    state = index.clusters["fat"]
    assert state.status is ClusterStatus.UNAVAILABLE
    assert "more than 40000 bytes of answers (--upstream-max-mib)" in state.detail
    assert len(wire.sent) < 20  # the namespaces after the budget ran out were not asked


@given(
    takes=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 30), st.integers(0, 9000)), max_size=50
    )
)
def test_the_budget_raises_at_the_first_crossing_and_after(
    takes: list[tuple[int, int, int]],
) -> None:
    budget = ReadBudget(LIMITS, "x")
    crossed = False
    for pages, items, size in takes:
        before = (budget.pages, budget.items, budget.bytes)
        over = (
            before[0] + pages > LIMITS.pages
            or before[1] + items > LIMITS.items
            or before[2] + size > LIMITS.bytes
        )
        if over or crossed:
            with pytest.raises(BudgetExhausted) as raised:
                budget.take(pages=pages, items=items, size=size)
            assert str(raised.value) == redact(str(raised.value))
            crossed = True
        else:
            budget.take(pages=pages, items=items, size=size)


def test_a_peer_dripping_pages_ends_at_the_time_budget() -> None:
    """Each page arrives within --read-timeout, but slowly, with a continue token: the pages
    budget alone would let it hold its reader for 20 pages of drip."""
    wire = ScriptedWire([Answer(200, page(["gw-x"] * 3, "more"), chunk=16)], tick=1.0)
    limits = ReadLimits(pages=1000, items=10_000, seconds=30.0)
    index = UpstreamIndex(Source({"drip": reader(wire, limits)}))

    index.load(Wanted.of([RouteTarget("drip", "p", ("gw-a", "gw-b"), "ns")]), 10)

    state = index.clusters["drip"]
    assert state.status is ClusterStatus.UNAVAILABLE
    assert "more than 30.0 seconds waiting on answers (--upstream-max-time)" in state.detail
    assert wire.clock[0] <= 31.0
