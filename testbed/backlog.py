"""The rollout Job's world: a backlog of 510 orphans interleaved with live objects in one
namespace, for the documented run with the real grace (bench/bench_drain.py), and a third of
it for the drain e2e test (tests/e2e/test_drain_e2e.py, a 3-second grace, a third of the cap:
the same rounds in a third of the time)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from testbed.cluster import TestCluster
from testbed.objects import binding, companion, workload

COMPANION_ORPHANS = 460  # each with its binding: one deletion each, the binding goes along
BINDING_ORPHANS = 50  # bindings whose ConfigMap is gone: the bindings sweep's
LIVE = 200  # live companions with their bindings, interleaved with the orphans

Named = tuple[str, str]  # (kind, name)


def seed_backlog(hub: TestCluster, ns: str, share: int = 1) -> tuple[list[Named], list[Named]]:
    """(the orphans, the live objects) created in `ns`: the i-th orphaned companion, live
    companion and orphaned binding made together, four at a time; 1/`share` of each."""
    hub.create(workload(ns, "web"))

    def make(i: int) -> tuple[list[Named], list[Named]]:
        dead: list[Named] = []
        kept: list[Named] = []
        if i < COMPANION_ORPHANS // share:
            name = f"orphan-{i}"
            rb = hub.create_with_binding(companion("ConfigMap", ns, name, [f"default/gone-{i}"]))
            dead += [("ConfigMap", name), ("ResourceBinding", rb)]
        if i < LIVE // share:
            name = f"live-{i}"
            rb = hub.create_with_binding(companion("ConfigMap", ns, name, ["default/web"]))
            kept += [("ConfigMap", name), ("ResourceBinding", rb)]
        if i < BINDING_ORPHANS // share:
            name = f"gone-{i}-configmap"
            hub.create(binding(ns, name, kind="ConfigMap", target=f"gone-{i}"))
            dead.append(("ResourceBinding", name))
        return dead, kept

    orphans: list[Named] = []
    live: list[Named] = []
    with ThreadPoolExecutor(4) as pool:
        for dead, kept in pool.map(make, range(max(COMPANION_ORPHANS, LIVE, BINDING_ORPHANS))):
            orphans += dead
            live += kept
    return orphans, live
