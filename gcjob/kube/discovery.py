"""Which resources an API serves for a group and kind: discovery, read and understood.

A kind is matched by its group and kind, whatever version the server prefers; subresources
(`connectors/status`) are never a kind's resource. An answer that cannot be read raises: a
group whose discovery failed is unknown, never "not served".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gcjob.kube.resources import Resource


def versions(group_body: Any) -> list[str]:
    """The versions an APIGroup answer names, the preferred first; [] when it names none."""
    if not isinstance(group_body, dict):
        return []
    named: list[str] = []
    preferred = group_body.get("preferredVersion")
    if isinstance(preferred, dict) and isinstance(preferred.get("version"), str):
        named.append(preferred["version"])
    listed = group_body.get("versions")
    for item in listed if isinstance(listed, list) else ():
        version = item.get("version") if isinstance(item, dict) else None
        if isinstance(version, str) and version not in named:
            named.append(version)
    return [v for v in named if v]


def merge_versions(
    per_version: list[Mapping[str, tuple[Resource, ...]]],
) -> Mapping[str, tuple[Resource, ...]]:
    """Kind -> resources over every version, the first version (preferred) winning for a
    resource served in several; two resources (plurals) for one kind stay ambiguous."""
    merged: dict[str, dict[str, Resource]] = {}
    for served in per_version:
        for kind, resources in served.items():
            for resource in resources:
                merged.setdefault(kind, {}).setdefault(resource.plural, resource)
    return {kind: tuple(by_plural.values()) for kind, by_plural in merged.items()}


def resources_by_kind(group: str, version: str, body: Any) -> Mapping[str, tuple[Resource, ...]]:
    """An APIResourceList answer: kind -> the resources serving it (more than one is
    ambiguous, and resolves to nothing)."""
    found: dict[str, list[Resource]] = {}
    items = body.get("resources") if isinstance(body, dict) else None
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        name, kind, namespaced = item.get("name"), item.get("kind"), item.get("namespaced")
        if not isinstance(name, str) or not name or "/" in name:
            continue  # a subresource, or unreadable
        if not isinstance(kind, str) or not kind or not isinstance(namespaced, bool):
            continue
        found.setdefault(kind, []).append(Resource(group, version, name, kind, namespaced))
    return {kind: tuple(resources) for kind, resources in found.items()}


def resolve(
    served: Mapping[str, tuple[Resource, ...]] | None, group: str, kind: str, namespaced: bool
) -> Resource | str:
    """The one resource serving this kind, in the scope the object's labels imply; else why
    not, in one line."""
    what = f"{kind}.{group}" if group else kind
    if served is None:
        return f"group {group or 'core'} is not served"
    candidates = served.get(kind, ())
    if not candidates:
        return f"{what} is not served"
    if len(candidates) > 1:
        plurals = ", ".join(sorted(r.plural for r in candidates))
        return f"{what} is served by more than one resource ({plurals})"
    (resource,) = candidates
    if resource.namespaced != namespaced:
        scope = "namespaced" if resource.namespaced else "cluster-scoped"
        return f"{what} is {scope}, which its labels do not say"
    return resource
