"""Before a run touches anything: is the target a Karmada hub (check_hub, every run and
explain), and, before a --delete run, may the hub identity send every request it will (check)?

A verb missing from the RBAC would otherwise surface half-way through a run, after some
deletions and not others. The hub answers for itself (SelfSubjectAccessReview, allowed to
every authenticated user by Kubernetes' default `system:basic-user` binding), so gcjob
refuses the run up front (exit 2) with one line naming each verb and resource it lacks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gcjob.enumerate.owners import ProjectReads
from gcjob.kube.access import KubeAccess
from gcjob.kube.errors import ApiError, ConfigError, KubeError, ProxyRefused, TlsFailure
from gcjob.kube.reader import Reader
from gcjob.kube.resources import (
    EVENTS,
    LEASES,
    PROJECTS,
    RESOURCEBINDINGS,
    SELFSUBJECTACCESSREVIEWS,
    Resource,
)
from gcjob.logs import log
from gcjob.model import Sweep
from gcjob.settings import Settings

READ = ("get", "list")
# `patch`: an orphan is marked first (a conditional JSON Patch of its labels and annotations)
# and deleted after --grace; a mark is removed again when it stops being an orphan.
READ_DELETE = ("get", "list", "patch", "delete")
# A sweep not enforced marks, never deletes: its `delete` is needed only where it is enforced.
READ_MARK = ("get", "list", "patch")
DELETE = ("delete",)
# What a sweep needs on the hub: each resource and its verbs. Each sweep declares its own
# (its folder's REGISTERED `needs`, gcjob/sweeps/registry.py; cronjobs/rbac/hub grants them).
Needs = tuple[tuple[Resource, tuple[str, ...]], ...]
# A Lease held: read, renewed and released by name (`create` is asked for apart).
LEASE_HELD = ("get", "update")
# What Milo's Project API identity reads (cluster-scoped): one list of projects a run and a GET
# of each project the list does not show (gcjob/enumerate/owners.py); cronjobs/rbac/projects.
PROJECT_NEEDS: Needs = ((PROJECTS, READ),)


# A --delete run's Events on each object's namespace (gcjob/act/events.py): best effort, so a
# run without the permission sends none and says so, never exit 2.
EVENT_NEEDS: Needs = ((EVENTS, ("create",)),)


@dataclass(frozen=True, slots=True)
class Permission:
    verb: str
    resource: Resource
    namespace: str | None  # None: all namespaces
    name: str | None = None  # one object's (a Lease's get and update: RBAC resourceNames)

    def __str__(self) -> str:
        group = f".{self.resource.group}" if self.resource.group else ""
        named = f" named {self.name}" if self.name else ""
        where = f"in namespace {self.namespace}" if self.namespace else "in all namespaces"
        return f"'{self.verb}' on {self.resource.plural}{group}{named} {where}"


def needed(
    settings: Settings, needs: Mapping[Sweep, Needs], enforcing: Mapping[Sweep, Needs] | None = None
) -> list[Permission]:
    """Every permission a --delete run with these settings uses on the hub, in order, its
    sweeps' as `needs` says (gcjob/sweeps/__init__.py `PREFLIGHT`), and, for each sweep it
    enforces, what `enforcing` adds (its deletes, where it lands report-only)."""
    scopes: tuple[str | None, ...] = settings.namespaces or (None,)
    wanted: dict[Permission, None] = {}
    for sweep in settings.sweeps:
        extra = (enforcing or {}).get(sweep, ()) if sweep in settings.enforce else ()
        for resource, verbs in (*needs.get(sweep, ()), *extra):
            for namespace in scopes:
                for verb in verbs:
                    wanted[Permission(verb, resource, namespace)] = None
    if settings.lock:
        wanted.update(dict.fromkeys(lease_needs(settings)))
    return list(wanted)


def lease_needs(settings: Settings) -> list[Permission]:
    """The Leases a --delete run takes, reads and releases (gcjob/lease.py), by name where RBAC
    can limit a verb to one (`create` it cannot: the name is in the body). Unsharded: the run's
    Lease (--lock-name). A shard (--shard): its own Lease and the run's, which the shards hold
    together, and `get` of each sibling's, which the last shard out reads before it releases
    the run's (cronjobs/rbac/hub-sharded grants them all)."""
    namespace, shard, run_lease = settings.lock_namespace, settings.part, settings.lock_name
    held = [run_lease] if shard.whole else [shard.lease_name(run_lease), run_lease]
    needs = [Permission("create", LEASES, namespace)]
    needs += [Permission(verb, LEASES, namespace, name) for name in held for verb in LEASE_HELD]
    needs += [Permission("get", LEASES, namespace, name) for name in shard.siblings(run_lease)]
    return needs


def needed_for(
    resources: Iterable[tuple[Resource, tuple[str, ...]]], settings: Settings
) -> list[Permission]:
    """The permissions on these resources, in every namespace the run sweeps."""
    scopes: tuple[str | None, ...] = settings.namespaces or (None,)
    return [
        Permission(verb, resource, namespace)
        for resource, verbs in resources
        for namespace in scopes
        for verb in verbs
    ]


def review(permission: Permission) -> dict[str, object]:
    attributes: dict[str, str] = {
        "group": permission.resource.group,
        "resource": permission.resource.plural,
        "verb": permission.verb,
    }
    if permission.namespace:
        attributes["namespace"] = permission.namespace
    if permission.name:
        attributes["name"] = permission.name
    return {
        "apiVersion": SELFSUBJECTACCESSREVIEWS.api_version,
        "kind": SELFSUBJECTACCESSREVIEWS.kind,
        "spec": {"resourceAttributes": attributes},
    }


def missing(access: KubeAccess, permissions: Iterable[Permission]) -> list[str]:
    """The permissions the hub denies. Raises KubeError when it cannot be asked."""
    denied = []
    for permission in permissions:
        answer = access.create(SELFSUBJECTACCESSREVIEWS, None, review(permission))
        status = answer.get("status") if isinstance(answer, dict) else None
        if not (isinstance(status, dict) and status.get("allowed") is True):
            denied.append(str(permission))
    return denied


def events_allowed(access: KubeAccess, settings: Settings) -> bool:
    """May the hub identity post the run's Events (`create` events.k8s.io events in every
    namespace the run sweeps)? False, with a warning, when it may not: the run goes on without
    them. A hub that cannot say is let through (each Event fails safe on its own)."""
    try:
        denied = missing(access, needed_for(EVENT_NEEDS, settings))
    except KubeError as exc:
        log.warning("cannot check the hub identity's permission to post Events (%s)", exc)
        return True
    if denied:
        log.warning(
            "no Events this run: the hub identity may not %s (grant it: cronjobs/rbac/hub; or "
            "--no-events)",
            "; ".join(denied),
        )
        return False
    return True


def check(
    access: KubeAccess,
    settings: Settings,
    needs: Mapping[Sweep, Needs],
    enforcing: Mapping[Sweep, Needs] | None = None,
) -> None:
    """Raises ConfigError naming what the hub identity lacks; a hub that cannot say is let
    through with a warning (each request still fails safe on its own 403)."""
    try:
        denied = missing(access, needed(settings, needs, enforcing))
    except KubeError as exc:
        log.warning("cannot check the hub identity's permissions (%s): going on", exc)
        return
    if not denied:
        return
    # A shard's Leases are granted by the sharded RBAC, for its COUNT and --lock-name.
    rbac = "cronjobs/rbac/hub" if settings.part.whole else "cronjobs/rbac/hub-sharded"
    leases = {str(p) for p in lease_needs(settings)}
    if set(denied) <= leases:
        # The RBAC grants Leases in the settings' lock namespace only: a run by hand that names
        # another (or none: `default`) is refused there. Which namespace first, then the grant.
        raise ConfigError(
            f"--lock-namespace {settings.lock_namespace}: the hub identity may not take the "
            "lock there ("
            + "; ".join(denied)
            + "); run with the lock namespace its RBAC grants Leases in (the settings' "
            f"LOCK_NAMESPACE, docs/install.md), or grant it ({rbac}), or run without "
            "--delete; nothing was touched"
        )
    raise ConfigError(
        "the hub identity may not "
        + "; ".join(denied)
        + f": grant it ({rbac}) or run without --delete; nothing was touched"
    )


class NotAHub(Exception):
    """The target does not serve the hub's APIs: refuse before touching anything."""


def check_hub(hub: Reader, served: Iterable[Resource] = ()) -> str:
    """Raises NotAHub; ConfigError when the hub refuses the credentials, cannot be verified,
    or answers with something else than Kubernetes (a login page); KubeError when it cannot
    be asked (unreachable, 5xx: maybe better on the next run). `served`: what the run's
    sweeps need the hub to serve besides (gcjob/sweeps/__init__.py `served`). Returns what it
    saw."""
    required = [RESOURCEBINDINGS, *served]
    for resource in required:
        try:
            answered = hub.served(resource)
        except KubeError as exc:
            problem = configuration_problem(exc)
            if problem is None:
                raise
            raise ConfigError(f"the hub {hub.server} {problem}: {exc}") from exc
        if not answered:
            raise NotAHub(
                f"{hub.server} is not a Karmada hub: it does not serve "
                f"{resource.api_version} {resource.plural}"
            )
    return f"{hub.server} serves " + ", ".join(f"{r.api_version} {r.plural}" for r in required)


def configuration_problem(exc: KubeError) -> str | None:
    """What a failed first request says about the configuration, if anything: retrying
    the same kubeconfig cannot help, so it is exit 2, not 3."""
    if isinstance(exc, ApiError):
        if exc.status == 401:
            return "refuses the credentials"
        if exc.status == 403:
            return "refuses discovery to these credentials"
        if 300 <= exc.status < 400 or exc.reason == "Malformed" or "not a Kubernetes" in str(exc):
            return "does not answer as a Kubernetes API server (a login page or proxy?)"
    elif isinstance(exc, TlsFailure):
        return "cannot be verified (TLS)"
    elif isinstance(exc, ProxyRefused):
        return "is not asked through its proxy"
    return None


def check_project_list(reads: ProjectReads, wanted: bool) -> None:
    """The run's one list of Milo's projects, read at start when a sweep of the run rests on
    it (`wanted`: gcjob/sweeps/__init__.py `reads_projects`): a Project API that answers 404
    there or does not answer as Kubernetes cannot be right (ConfigError, exit 2); a 5xx, a
    timeout or a 403 leaves the projects asked about not-answered (exit 1, said by the sweeps
    that ask)."""
    if not wanted:
        return
    exc = reads.list_at_start()
    if exc is None:
        return
    problem = configuration_problem(exc)
    if isinstance(exc, ApiError) and exc.status == 404:
        problem = "does not serve Milo's projects (HTTP 404): is --project-api the right server?"
    elif isinstance(exc, ApiError) and exc.status == 403:
        problem = None  # what to grant is the preflight's to say; the projects not-answered
    if problem is not None:
        raise ConfigError(f"the Project API {problem}: {exc}")
