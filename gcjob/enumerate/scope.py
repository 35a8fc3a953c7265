"""Which namespaces a run may read and delete in."""

from __future__ import annotations

from dataclasses import dataclass

from gcjob.domain import is_reserved_namespace
from gcjob.kube import reduce
from gcjob.kube.errors import KubeError
from gcjob.kube.reader import Reader
from gcjob.kube.resources import NAMESPACES


@dataclass(frozen=True)
class Scope:
    namespaces: tuple[str, ...] = ()  # empty: every namespace
    excluded: frozenset[str] = frozenset()

    def allows(self, namespace: str) -> bool:
        if is_reserved_namespace(namespace) or namespace in self.excluded:
            return False
        return not self.namespaces or namespace in self.namespaces

    def list_targets(self) -> tuple[str | None, ...]:
        """Where to list: each named namespace, or cluster-wide (None) filtered on read."""
        return (
            tuple(ns for ns in self.namespaces if self.allows(ns)) if self.namespaces else (None,)
        )


@dataclass(frozen=True)
class NamespaceCheck:
    """What a GET of each `--namespace` found. A name that does not exist is swept as empty,
    which is exactly what an operator's typo looks like: the run says so, and goes on."""

    not_found: tuple[str, ...] = ()
    unchecked: tuple[tuple[str, str], ...] = ()  # (namespace, why the GET failed)

    def warnings(self) -> list[str]:
        return [
            f"--namespace {ns}: no such namespace on the hub (nothing swept there)"
            for ns in self.not_found
        ] + [
            f"--namespace {ns}: could not check that it exists: {why}" for ns, why in self.unchecked
        ]

    def summary(self) -> dict[str, list[str]]:
        """The summary's `namespaces` fields for it (none when all were found)."""
        fields = {"not_found": list(self.not_found), "unchecked": [ns for ns, _ in self.unchecked]}
        return {key: value for key, value in fields.items() if value}


def check_namespaces(hub: Reader, namespaces: tuple[str, ...]) -> NamespaceCheck:
    """GET each named namespace (metadata only); a failed GET is `unchecked`, never fatal."""
    not_found: list[str] = []
    unchecked: list[tuple[str, str]] = []
    for namespace in namespaces:
        try:
            if hub.get(NAMESPACES, None, namespace, reduce.name_of) is None:
                not_found.append(namespace)
        except KubeError as exc:
            unchecked.append((namespace, str(exc)))
    return NamespaceCheck(tuple(not_found), tuple(unchecked))
