"""Which labelled companions exist: what the bindings sweep needs of the companions sweep.

Apart from both sweeps, so that neither imports the other (.importlinter, the sweeps'
independence contract): the companions sweep leaves its keys on the Run, and the bindings
sweep reads them here, or reads the companions itself when it runs alone.
"""

from __future__ import annotations

from gcjob.enumerate.hub import scan_companions
from gcjob.enumerate.keyset import KeySet
from gcjob.model import Companion
from gcjob.run import Run


class CompanionKeys:
    """Keeps only which companions exist, as (kind, namespace, name): what the bindings sweep
    needs of them."""

    def __init__(self) -> None:
        self.keys = KeySet()

    def add(self, companion: Companion) -> None:
        ref = companion.ref
        self.keys.add(ref.kind, ref.namespace, ref.name)


def companion_keys(run: Run) -> KeySet:
    """Labelled companions, as (kind, namespace, name): from this run's companions sweep, or
    read for the bindings sweep alone. Raises KubeError."""
    if run.companion_keys is None:
        keys = KeySet()
        for scan in scan_companions(run.hub, run.scope, CompanionKeys, run.hub_reads):
            keys.update(scan.keys)
        run.companion_keys = keys.freeze()
    return run.companion_keys
