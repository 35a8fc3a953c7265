"""The API resources gcjob reads or deletes."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from gcjob.domain import JUDGED_KINDS, REPLICATED_KINDS


@dataclass(frozen=True, slots=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def sensitive(self) -> bool:
        """A core Secret, however this resource was named (gcjob's own, or the hub's or an
        upstream's discovery): its payload is a customer's secret, so only its metadata is
        ever asked for, and of that only what gcjob/domain.py secret_as_kept keeps."""
        return not self.group and (self.kind == "Secret" or self.plural == "secrets")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        parts = [self.group_version_path]
        if namespace is not None and self.namespaced:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
        return "/".join(parts)


# Every kind a sweep judges, by its kind, at the version gcjob names it by before reading it
# (gcjob/domain.py JUDGED_KINDS, the one table of them).
JUDGED_RESOURCES: dict[str, Resource] = {
    k.kind: Resource(k.group, k.version, k.plural, k.kind, k.namespaced) for k in JUDGED_KINDS
}
CONFIGMAPS = JUDGED_RESOURCES["ConfigMap"]
SECRETS = JUDGED_RESOURCES["Secret"]
RESOURCEBINDINGS = JUDGED_RESOURCES["ResourceBinding"]
HTTPROUTES = JUDGED_RESOURCES["HTTPRoute"]
GATEWAYS = JUDGED_RESOURCES["Gateway"]
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
WORKLOADDEPLOYMENTS = Resource(
    "compute.datumapis.com", "v1alpha", "workloaddeployments", "WorkloadDeployment"
)
# Milo's projects (cluster-scoped): a project's upstream control plane is served below its own.
PROJECTS = Resource(
    "resourcemanager.miloapis.com", "v1alpha1", "projects", "Project", namespaced=False
)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
# Karmada's Works (in `karmada-es-<cluster>`): its namespace controller propagates each hub
# namespace as one a member cluster, owned by the Namespace.
WORKS = Resource("work.karmada.io", "v1alpha1", "works", "Work")

COMPANION_RESOURCES = {"ConfigMap": CONFIGMAPS, "Secret": SECRETS}
# The kinds NSO copies beyond ConfigMaps and Secrets, at the versions NSO writes: how explain
# names a target before reading it (the copies sweep itself takes versions from discovery).
REPLICATED_RESOURCES = {
    kind: JUDGED_RESOURCES[kind] for _, kind in REPLICATED_KINDS if kind not in COMPANION_RESOURCES
}
SELFSUBJECTACCESSREVIEWS = Resource(
    "authorization.k8s.io",
    "v1",
    "selfsubjectaccessreviews",
    "SelfSubjectAccessReview",
    namespaced=False,
)
