"""How pytest-xdist's workers share the tests (`-n 4`): a module whose fixtures start servers
of its own, once a module, runs whole on one worker, so those servers start once a run, not
once for each worker that drew one of its tests; every other test goes, one at a time, to
whichever worker is free. tests/conftest.py hands xdist this scheduler for its default
`--dist load`.

xdist's own `--dist loadgroup` would do this from `xdist_group` marks, but with pytest 9.2 it
silently groups nothing (it rewrites a node id pytest no longer reads: pytest-xdist issue
1386), so the modules are named here, by path, where the controller (which collects nothing)
can read them.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

# The modules with module-scoped fixtures that start servers (tests/test_docs_testing.py
# holds this list to them): a hub and an upstream with the rendered RBAC; a hub and an
# upstream, and a lone hub, for the install; a Milo; a Prometheus; upstreams of two surfaces;
# a hub with prometheus-operator's CRD for the chart's renders.
ONE_WORKER = frozenset(
    {
        "tests/e2e/test_alerts_e2e.py",
        "tests/e2e/test_discovery_sharing_e2e.py",
        "tests/e2e/test_helm_chart_e2e.py",
        "tests/e2e/test_install_e2e.py",
        "tests/e2e/test_owner_lookups_e2e.py",
        "tests/e2e/test_rbac_e2e.py",
    }
)


# The Karmada hub's tests: one unit, on one worker, for the whole folder (its hub is started
# once a worker that runs one of them: half a minute or more of two cores, docs/testing.md).
ONE_WORKER_FOLDERS = ("tests/karmada/",)


def work_unit(nodeid: str) -> str:
    """The unit a test is scheduled in: its module, for the modules of ONE_WORKER; its folder,
    for ONE_WORKER_FOLDERS; else the test alone."""
    for folder in ONE_WORKER_FOLDERS:
        if nodeid.startswith(folder):
            return folder
    module = nodeid.split("::", 1)[0]
    return module if module in ONE_WORKER else nodeid


class ServersOnceScheduling(LoadScopeScheduling):
    """xdist's scope scheduling with work_unit's units: the largest first (xdist sorts units
    by their count of tests), so the modules of ONE_WORKER start at once, each on a worker of
    its own, and the single tests fill in behind them."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)
