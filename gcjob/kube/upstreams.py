"""Readers for upstream clusters, made for each use (asked for from several reader threads at
once: each cluster's from its own). What a cluster's readers share is kept for the run: its
read budget, what its discovery said, and its client when it has one of its own."""

from __future__ import annotations

import threading
from collections.abc import Callable

from gcjob.kube.access import Discovered, KubeAccess, ReadBudget
from gcjob.kube.connect import UpstreamClient, UpstreamResolver
from gcjob.kube.errors import ConfigError, Unavailable


class Shared:
    """What every reader of one upstream cluster shares for the run. A reader itself (its
    transport, its server's URL) is not kept between uses: at 10,000 clusters, one kept for
    each was about 1 KiB a cluster for the run."""

    __slots__ = ("budget", "client", "discovered")

    def __init__(
        self, budget: ReadBudget | None, discovered: Discovered, client: UpstreamClient | None
    ) -> None:
        self.budget = budget
        self.discovered = discovered
        self.client = client  # a kubeconfig context's own (loading it again may be slow)


MakeAccess = Callable[[UpstreamClient, str, Shared | None], KubeAccess]


class LiveUpstreams:
    def __init__(self, resolver: UpstreamResolver, make_access: MakeAccess) -> None:
        """`make_access(client, target, shared)`: a reader of that cluster, on `shared`'s
        budget and discovery (None: the cluster's first, on its own new ones)."""
        self.resolver = resolver
        self.make_access = make_access
        self._shared: dict[str, Shared] = {}
        self._lock = threading.Lock()  # not held while credentials load: they may be slow

    def reader_for(self, cluster: str) -> KubeAccess:
        with self._lock:
            shared = self._shared.get(cluster)
        target = f"upstream/{cluster}"
        if shared is not None:
            return self.make_access(shared.client or self._client(cluster), target, shared)
        client = self._client(cluster)
        made = self.make_access(client, target, None)
        # A templated cluster's client is the template's one, got again for nothing.
        own = None if self.resolver.is_project(cluster) else client
        first = Shared(made.budget, made.discovered, own)
        with self._lock:
            shared = self._shared.setdefault(cluster, first)
        # Another thread's first reader of this cluster came first: share its budget.
        return made if shared is first else self.make_access(client, target, shared)

    def _client(self, cluster: str) -> UpstreamClient:
        try:
            return self.resolver.client_for(cluster)
        except ConfigError as exc:  # configured, but its credentials cannot be loaded
            raise Unavailable(str(exc)) from exc

    def renew_budgets(self) -> None:
        """A new round of --drain: each cluster read so far has its read budget again."""
        with self._lock:
            every = list(self._shared.values())
        for shared in every:
            if shared.budget is not None:
                shared.budget = shared.budget.renewed()
