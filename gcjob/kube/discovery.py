"""Which resources an API serves for a group and kind: discovery, read and understood.

A kind is matched by its group and kind, whatever version the server prefers; subresources
(`connectors/status`) are never a kind's resource. An answer that cannot be read raises: a
group whose discovery failed is unknown, never "not served".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gcjob.kube.resources import Resource


def preferred_version(group_body: Any) -> str | None:
    """The version an APIGroup answer prefers (else its first), or None when it names none."""
    if not isinstance(group_body, dict):
        return None
    preferred = group_body.get("preferredVersion")
    if isinstance(preferred, dict) and isinstance(preferred.get("version"), str):
        return str(preferred["version"]) or None
    versions = group_body.get("versions")
    if isinstance(versions, list) and versions and isinstance(versions[0], dict):
        version = versions[0].get("version")
        return version if isinstance(version, str) and version else None
    return None


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
