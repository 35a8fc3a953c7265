"""Readers for upstream clusters, made for each use (asked for from several reader threads at
once: each cluster's from its own). What a cluster's readers share is kept for the run: its
read budget, what its discovery said, the count of its requests, and its client when it has
one of its own."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from gcjob.kube.access import KeepsDiscovery, KubeAccess, ReadBudget, ReadLimits
from gcjob.kube.connect import UpstreamClient, UpstreamResolver
from gcjob.kube.discovery import Versions
from gcjob.kube.errors import ConfigError, Unavailable


class Shared(ReadBudget, KeepsDiscovery):
    """What every reader of one upstream cluster shares for the run, in one object: its read
    budget (it is one), what its discovery said (it keeps it), the count of its requests, and
    its client when it has one of its own. A reader itself (its transport, its server's URL)
    is not kept between uses: at 10,000 clusters, one kept for each was about 1 KiB a cluster
    for the run; a budget apart from this was 64 bytes more a cluster."""

    __slots__ = ("client", "groups", "requests")

    def __init__(
        self,
        limits: ReadLimits,
        cluster: str,
        client: UpstreamClient | None,
        groups: Mapping[str, Versions | None] | None = None,
        requests: int = 0,
    ) -> None:
        super().__init__(limits, cluster)
        self.client = client  # a kubeconfig context's own (loading it again may be slow)
        self.groups = {} if groups is None else groups
        self.requests = requests  # made to the cluster this run (its upstream record says)

    @property
    def budget(self) -> ReadBudget:
        return self

    @property
    def discovered(self) -> KeepsDiscovery:
        return self

    def renewed(self) -> Shared:
        """Its budget again, unspent; what its discovery said, its client and the count of its
        requests this run, kept."""
        return Shared(self.limits, self.cluster, self.client, self.groups, self.requests)

    def count_request(self) -> None:
        with self._lock:
            self.requests += 1


MakeAccess = Callable[[UpstreamClient, str, Shared], KubeAccess]


class LiveUpstreams:
    def __init__(
        self,
        resolver: UpstreamResolver,
        make_access: MakeAccess,
        limits: ReadLimits,
    ) -> None:
        """`make_access(client, cluster, shared)`: a reader of that cluster, on `shared`'s
        budget and discovery; `limits`: each cluster's read budget for the run."""
        self.resolver = resolver
        self.make_access = make_access
        self.limits = limits
        self._shared: dict[str, Shared] = {}
        self._lock = threading.Lock()  # not held while credentials load: they may be slow

    def reader_for(self, cluster: str) -> KubeAccess:
        with self._lock:
            shared = self._shared.get(cluster)
        if shared is None:
            client = self._client(cluster)
            # A templated cluster's client is the template's one, got again for nothing.
            own = None if self.resolver.is_project(cluster) else client
            first = Shared(self.limits, cluster, own)
            with self._lock:  # another thread's first reader of it may have come first
                shared = self._shared.setdefault(cluster, first)
        return self.make_access(shared.client or self._client(cluster), shared.cluster, shared)

    def requests_to(self, cluster: str) -> int:
        """The requests made to `cluster` this run."""
        with self._lock:
            shared = self._shared.get(cluster)
        return shared.requests if shared is not None else 0

    def _client(self, cluster: str) -> UpstreamClient:
        try:
            return self.resolver.client_for(cluster)
        except ConfigError as exc:  # configured, but its credentials cannot be loaded
            raise Unavailable(str(exc)) from exc

    def renew_budgets(self) -> None:
        """A new round of --drain: each cluster read so far has its read budget again."""
        with self._lock:
            for cluster, shared in self._shared.items():
                self._shared[cluster] = shared.renewed()
