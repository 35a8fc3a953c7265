"""Which namespaces a run may read and delete in."""

from __future__ import annotations

from dataclasses import dataclass

from gcjob.domain import is_reserved_namespace


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
