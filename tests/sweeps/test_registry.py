"""Each sweep is declared once, in its folder (`REGISTERED`, gcjob/sweeps/registry.py), and
listed once (gcjob/sweeps/__init__.py `REGISTRY`): whatever else names the sweeps is derived
from that list or held to it here, so a sweep missed anywhere fails a test, never falls to a
default (issue 48)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

import pytest

from gcjob import flags, reasons, sweeps
from gcjob.decide.explanation import SWEEP_OF, Explanation, Target
from gcjob.decide.trace import Trace
from gcjob.domain import JUDGED_KINDS, kind_name
from gcjob.model import Sweep
from gcjob.preflight import READ_DELETE
from gcjob.settings import NEVER_ENFORCED, Settings
from gcjob.sweeps import DECLARED, PREFLIGHT, REGISTERED, REGISTRY, reads_projects
from gcjob.sweeps.explaining import ExplainContext
from gcjob.sweeps.registry import Shared

NAMES = [r.name for r in REGISTRY]


def test_each_sweep_is_registered_once_by_its_own_folder_with_its_declaration() -> None:
    assert len(set(NAMES)) == len(NAMES)
    assert list(Sweep) == NAMES  # the names a report, a flag and a setting take
    for registered in REGISTRY:
        folder = registered.declaration.__module__.split(".")[2]
        assert folder == registered.name.value, registered.name
        assert registered.declaration.sweep is registered.name
        assert type(registered).__module__ == "gcjob.sweeps.registry"
    assert tuple(r.declaration for r in REGISTRY) == DECLARED


def test_the_sweep_choices_and_defaults_are_the_registry() -> None:
    assert [name.value for name in NAMES] == flags.SWEEP_NAMES
    defaults = Settings()
    assert defaults.sweeps == tuple(NAMES)
    assert defaults.enforce == tuple(r.name for r in REGISTRY if r.enforced)


def test_each_sweeps_reasons_are_the_reason_pages_and_no_sweep_is_missing_there() -> None:
    assert (reasons.ALL, *(n.value for n in NAMES), reasons.EXPLAIN) == reasons.SCOPES
    for registered in REGISTRY:
        assert registered.reasons, registered.name
        for reason in registered.reasons:
            assert registered.name.value in reason.sweeps, (registered.name, reason)
    in_a_sweep = {r for registered in REGISTRY for r in registered.reasons}
    assert {r for r in reasons.Reason if reasons.ALL not in r.sweeps} - in_a_sweep == {
        reasons.Reason.NOT_FOUND,  # explain's alone
    }


def test_the_report_schema_names_exactly_the_registered_sweeps_in_their_order() -> None:
    text = resources.files("gcjob.report").joinpath("schema.json").read_text("utf-8")
    defs = json.loads(text)["$defs"]
    names = [n.value for n in NAMES]
    assert defs["item"]["properties"]["sweep"]["enum"] == names
    assert defs["summary"]["properties"]["sweeps"]["propertyNames"]["enum"] == names


def test_each_kind_judged_by_its_kind_is_one_its_sweep_declares() -> None:
    for judged in JUDGED_KINDS:
        registered = REGISTERED[Sweep(judged.sweep)]  # a KeyError: a sweep not registered
        assert kind_name(judged.group, judged.kind) in registered.kinds, judged
    for registered in REGISTRY:
        assert registered.kinds, registered.name
        assert registered.name in SWEEP_OF.values(), registered.name  # explain can name one


def test_each_sweep_needs_to_write_each_kind_it_deletes_and_the_preflight_asks_it() -> None:
    for registered in REGISTRY:
        if registered.name.value in NEVER_ENFORCED:
            # Report-only by design: it deletes nothing, and asks for no write at all.
            assert not registered.enforced, registered.name
            assert all(set(verbs) <= {"get", "list"} for _, verbs in registered.needs)
            continue
        # Read and marked in every --delete run; deleted where enforced (its `enforcing`, for
        # a sweep that lands report-only: issue 51 item 6).
        verbs: dict[str, set[str]] = {}
        for r, asked in (*registered.needs, *registered.enforcing):
            verbs.setdefault(kind_name(r.group, r.kind), set()).update(asked)
        written = {kind for kind, asked in verbs.items() if asked == set(READ_DELETE)}
        assert set(registered.kinds) <= written, registered.name
        if not registered.enforced:  # its deletes are asked for only where it is enforced
            assert not [r for r, asked in registered.needs if "delete" in asked], registered.name
        if registered.asks_itself:
            assert registered.name not in PREFLIGHT
        else:
            assert PREFLIGHT[registered.name] == registered.needs


def test_each_shared_read_a_sweep_takes_is_one_a_round_or_another_sweep_provides() -> None:
    provided = {s for r in REGISTRY for s in r.provides} | {Shared.PROJECTS}
    for registered in REGISTRY:
        assert registered.reads <= provided, registered.name
        assert (registered.ahead is None) is (registered.named is None), registered.name
    assert reads_projects(tuple(r.name for r in REGISTRY if Shared.PROJECTS in r.reads))
    assert not reads_projects(tuple(r.name for r in REGISTRY if Shared.PROJECTS not in r.reads))


@pytest.mark.parametrize("name", NAMES, ids=str)
def test_explain_asks_the_sweep_the_target_names_through_the_registry(
    name: Sweep, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each registered sweep's explain part is the one asked for a target of its sweep's kind
    (a target of no registered sweep is a KeyError, never another sweep's code)."""
    asked: list[Sweep] = []

    def part(*args: object) -> None:
        asked.append(name)

    kind = next(k.kind for k in JUDGED_KINDS if k.sweep == name.value)
    target = Target(kind, "ns", "obj")
    out = Explanation(target, "hub", datetime(2026, 1, 1, tzinfo=UTC), timedelta(0))
    ctx = object.__new__(ExplainContext)  # never read: each part here is a stand-in
    stand_ins = {
        n: replace(r, explain=part if n is name else _never) for n, r in REGISTERED.items()
    }
    monkeypatch.setattr(sweeps, "REGISTERED", stand_ins)
    assert sweeps.explain(ctx, target, out, Trace()) is None
    assert asked == [name]
    monkeypatch.setattr(sweeps, "REGISTERED", {n: r for n, r in stand_ins.items() if n is not name})
    with pytest.raises(KeyError):
        sweeps.explain(ctx, target, out, Trace())


def _never(*args: object) -> None:
    raise AssertionError("another sweep's explain asked")


def test_a_sweep_of_its_own_is_a_name_of_its_own_and_no_shipped_one() -> None:
    """`Sweep` is open (the driver's toy sweep is `Sweep("toy")`): one object a name, so `is`
    compares names; iterating it gives the shipped sweeps alone, the registry's."""
    toy = Sweep("toy")
    assert toy is Sweep("toy") and toy.value == "toy" and toy == "toy"
    assert toy not in list(Sweep) and toy not in REGISTERED
    assert Sweep("routes") is Sweep.ROUTES


def test_no_module_outside_the_sweeps_names_a_sweep_by_its_shipped_constant() -> None:
    """What a module outside a sweep's folder needs of a sweep it asks the registry (or
    model.Sweep's iteration), never `Sweep.ROUTES`: a new sweep then needs nothing there."""
    root = Path(sweeps.__file__).resolve().parent.parent
    named = re.compile(r"\bSweep\.(" + "|".join(s.value.upper() for s in Sweep) + r")\b")
    found = [
        str(path.relative_to(root))
        for path in sorted(root.rglob("*.py"))
        if path.name != "model.py" and named.search(path.read_text("utf-8"))
    ]
    assert found == []
