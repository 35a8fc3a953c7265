"""What a sweep declares of itself, once, in its folder's `__init__.py` (`REGISTERED`, a
`Registered`): its name, the kinds it reads and deletes, the hub permissions it needs, its
reasons, whether a --delete run enforces it by default, its declaration for the driver, its
part of `gcjob explain`, and the reads it shares with other sweeps. `gcjob/sweeps/__init__.py`
lists them in run order (`REGISTRY`); everything else about the sweeps is derived from that
list or held to it by a test (tests/sweeps/test_registry.py).

What two sweeps read once between them is a `Shared` read a round provides (`Round`): Milo's
Project API's answers, judged once a round (`RoundProjects`), the upstream Gateways one sweep
finds and another does not read again (enumerate/shared.py `Found`), and what a sweep that ran
earlier in the round hands on (the companions the first sweep read, the bindings it reported).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from gcjob.decide.explanation import Conclusion, Explanation, Target
from gcjob.decide.projects import ProjectCalls
from gcjob.decide.trace import Trace
from gcjob.enumerate.keyset import KeySet
from gcjob.enumerate.shared import Found
from gcjob.kube.resources import Resource
from gcjob.model import Binding, Sweep, Verdict
from gcjob.reasons import Reason
from gcjob.run import Run
from gcjob.sweeps.driver import Declaration, Named, RoundProjects
from gcjob.sweeps.explaining import ExplainContext

# The permissions a sweep needs on the hub: each resource and its verbs.
Needs = tuple[tuple[Resource, tuple[str, ...]], ...]


class Shared(StrEnum):
    """A read two sweeps share, made once a round."""

    PROJECTS = "projects"  # Milo's Project API's answers, judged once a round
    GATEWAYS = "gateways"  # the upstream Gateways found, not read twice
    HANDED = "handed"  # what a sweep earlier in the round read and reported, handed on


@dataclass(frozen=True, slots=True)
class Handed:
    """What the sweep earlier in the round hands the one after it: the labelled companions,
    as (kind, namespace, name) (read for the later sweep when the earlier did not read them
    all), and the uids of the bindings it reported with them."""

    keys: KeySet
    reported: frozenset[str]


@dataclass
class Round:
    """What a round provides the sweeps it runs (`registered`, in order): the shared reads
    each declared. `found`: the Gateways one sweep found upstream, for another (None unless a
    sweep that provides them and one that reads them both run); `ahead`: each sweep's read
    started before the first sweep, by name; `projects`: the round's one judgement of Milo's
    projects (made once the reads ahead started); `handed`: what a sweep earlier in the round
    hands on (gcjob/sweeps/__init__.py, which knows both)."""

    run: Run
    registered: tuple[Registered, ...]
    found: Found | None = None
    ahead: dict[Sweep, Future[Any]] = field(default_factory=dict)
    projects: RoundProjects | None = None
    handed: Callable[[], Handed] | None = None

    def handed_on(self) -> Handed:
        assert self.handed is not None  # gcjob/sweeps/__init__.py hands it on
        return self.handed()

    @property
    def sweeps(self) -> tuple[Sweep, ...]:
        return tuple(r.name for r in self.registered)

    def round_projects(self) -> RoundProjects:
        assert self.projects is not None  # made once every read ahead started
        return self.projects

    def read_ahead(self, provides: Shared) -> Future[Any] | None:
        """The read ahead of the sweep that provides `provides` (None: none runs ahead)."""
        for registered in self.registered:
            if provides in registered.provides:
                return self.ahead.get(registered.name)
        return None


class Hand(Protocol):
    """What one sweep's part of `gcjob explain` is handed of another's (gcjob/sweeps/__init__.py
    hands them on: the folders do not know each other)."""

    def binding_after_companion(self, binding: Binding, subject: str, steps: Trace) -> Conclusion:
        """The bindings sweep's call on a companion's binding."""
        ...

    def binding_of_companion(self, binding: Binding, steps: Trace) -> Conclusion | None:
        """The companions sweep's call on a binding of a labelled companion (None: none)."""
        ...

    def as_copy(self, target: Target, out: Explanation) -> Verdict | None:
        """What the copies sweep says of an object no companion (None: not its own)."""
        ...

    def project_calls(self, sweep: Sweep, named: Named) -> ProjectCalls:
        """The calls of the projects `named` (what `sweep`'s explanation read), made as a
        run's round makes them: driver.py `RoundProjects`, over what every other sweep of
        the run names too, read as its run reads it (`Registered.explain_named`)."""
        ...


Explainer = Callable[[ExplainContext, Target, Explanation, Trace, Hand], "Verdict | None"]


def always(run: Run) -> bool:
    return True


@dataclass(frozen=True)
class Registered:
    """One sweep, declared once (see the module's docstring).

    `kinds`: the kinds it judges, as domain.py `JUDGED_KINDS` names them (`Kind.group`);
    `needs`: what it reads, marks and deletes on the hub (cronjobs/rbac/hub grants them);
    `enforcing`: what it needs besides only where a --delete run enforces it (a sweep that
    lands report-only: its deletes, granted by the component that enforces it);
    `asks_itself`: the kinds it needs are known only from the hub's discovery, so it asks for
    its permissions itself and, lacking them, is skipped rather than refusing the run (the
    preflight leaves them out); `reasons`: the codes its report items carry besides those of
    every sweep (reasons.py); `enforced`: deleted by a --delete run unless --enforce says
    otherwise; `declare`: its declaration for the driver, with what the round hands it;
    `explain`: its part of `gcjob explain`; `reads` and `provides`: the shared reads it
    takes and those it makes; `ahead`: its read started before the first sweep of a round
    (None: none or not here), `named` what that read names of projects; `runs`: whether it
    runs by default with this run (asked for by name, it says why not); `done`: what follows
    its drive (memory given back); `explain_named`: `named`, as `gcjob explain` reads it;
    `upstream_required`: asked for by name (or explaining one
    of its objects) without an upstream, the run is refused (exit 2); `served`: what the hub
    must serve besides a Karmada hub's bindings for the sweep to run (the preflight's
    check_hub)."""

    name: Sweep
    kinds: tuple[str, ...]
    needs: Needs
    reasons: tuple[Reason, ...]
    enforced: bool
    declare: Callable[[Run, Round], Declaration[Any, Any]]
    explain: Explainer
    declaration: type[Declaration[Any, Any]]
    enforcing: Needs = ()
    asks_itself: bool = False
    reads: frozenset[Shared] = frozenset()
    provides: frozenset[Shared] = frozenset()
    ahead: Callable[[Run, Round], Callable[[], Any] | None] | None = None
    named: Callable[[Any], Named | None] | None = None
    runs: Callable[[Run], bool] = always
    upstream_required: bool = False
    served: tuple[Resource, ...] = ()
    done: Callable[[Run], None] | None = None
    # What its objects name of projects, read by `gcjob explain` as its read ahead reads it
    # (`named`): so explaining another sweep's object judges projects over it too, as a run
    # does (raises KubeError; None: it would judge none). None: it names no project.
    explain_named: Callable[[ExplainContext], Named | None] | None = None
