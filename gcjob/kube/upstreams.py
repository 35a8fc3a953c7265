"""Readers for upstream clusters, made on first use and kept for the run (asked for from
several reader threads at once: each cluster's from its own)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from gcjob.kube.access import KubeAccess
from gcjob.kube.connect import UpstreamClient, UpstreamResolver
from gcjob.kube.errors import ConfigError, Unavailable


class LiveUpstreams:
    def __init__(
        self, resolver: UpstreamResolver, make_access: Callable[[UpstreamClient, str], KubeAccess]
    ) -> None:
        self.resolver = resolver
        self.make_access = make_access
        self._readers: dict[str, KubeAccess] = {}
        self._lock = threading.Lock()  # not held while credentials load: they may be slow

    def reader_for(self, cluster: str) -> KubeAccess:
        with self._lock:
            reader = self._readers.get(cluster)
        if reader is not None:
            return reader
        try:
            client = self.resolver.client_for(cluster)
        except ConfigError as exc:  # configured, but its credentials cannot be loaded
            raise Unavailable(str(exc)) from exc
        made = self.make_access(client, f"upstream/{cluster}")
        with self._lock:
            return self._readers.setdefault(cluster, made)

    def renew_budgets(self) -> None:
        """A new round of --drain: each cluster read so far has its read budget again."""
        with self._lock:
            readers = list(self._readers.values())
        for reader in readers:
            reader.renew_budget()
