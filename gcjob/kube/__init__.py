"""All of gcjob's Kubernetes I/O: connecting, the transport, the access layer.

The `kubernetes` package's own `__init__` imports every part of it: its dynamic client pulls
in jsonschema and kubernetes_validate, its stream client websocket. gcjob uses the client and
the kubeconfig loader only, so the package is registered here without running its `__init__`
(its parts then import as usual, each when first imported): about a tenth of a second of every
run's start-up, a twentieth of a hub dry run at 10,000 companions. A process that imported
`kubernetes` before (the tests' own clients) keeps it whole.
"""

from __future__ import annotations

import importlib.util
import sys


def _register_kubernetes_without_its_init() -> None:
    if "kubernetes" in sys.modules:
        return
    spec = importlib.util.find_spec("kubernetes")
    if spec is None or spec.submodule_search_locations is None:
        return  # not installed (or not a package): the first import says so
    sys.modules["kubernetes"] = importlib.util.module_from_spec(spec)


_register_kubernetes_without_its_init()
