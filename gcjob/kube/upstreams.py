"""Readers for upstream clusters, made on first use and kept for the run."""

from __future__ import annotations

from collections.abc import Callable

from kubernetes.client import ApiClient

from gcjob.kube.access import KubeAccess
from gcjob.kube.connect import UpstreamResolver
from gcjob.kube.errors import ConfigError, Unavailable


class LiveUpstreams:
    def __init__(
        self, resolver: UpstreamResolver, make_access: Callable[[ApiClient, str], KubeAccess]
    ) -> None:
        self.resolver = resolver
        self.make_access = make_access
        self._readers: dict[str, KubeAccess] = {}

    def reader_for(self, cluster: str) -> KubeAccess:
        if cluster not in self._readers:
            try:
                client = self.resolver.client_for(cluster)
            except ConfigError as exc:  # configured, but its credentials cannot be loaded
                raise Unavailable(str(exc)) from exc
            self._readers[cluster] = self.make_access(client, f"upstream/{cluster}")
        return self._readers[cluster]
