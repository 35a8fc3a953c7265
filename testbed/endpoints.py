"""One cluster under test as gcjob sees it: a real server behind the fault proxy, and a
kubeconfig that points at the proxy.

The server is started here (testbed/servers.py), or is a real cluster a kubeconfig names
(GCJOB_E2E_HUB_KUBECONFIG, GCJOB_E2E_UPSTREAM_KUBECONFIG: see tests/README.md). Either way
gcjob and the tests talk to it through testbed/faultproxy.py, which forwards every request
unchanged unless a test asks for a fault, and keeps the request log.
"""

from __future__ import annotations

import contextlib
import os
import ssl
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as kube_client
from kubernetes import config as kube_config

from testbed.faultproxy import FaultProxy, Target
from testbed.servers import ADMIN_TOKEN, ApiServer, running, write_kubeconfig

UPSTREAM_CLUSTER = "e2e-upstream"  # the context name gcjob resolves route labels to
HUB_CONTEXT = "e2e-hub"


@dataclass
class Endpoint:
    """One cluster under test as gcjob sees it: the proxy in front of it and a kubeconfig
    whose context `context` points at that proxy. `server` is the server started for it
    (None for a real cluster the environment named). `collects_garbage`: a garbage collector
    and namespace controller run on it (a started hub's kube-controller-manager, or a real
    cluster's)."""

    proxy: FaultProxy
    kubeconfig: str
    context: str
    server: ApiServer | None = None
    collects_garbage: bool = True


@contextlib.contextmanager
def started(
    work: Path,
    name: str,
    context: str,
    crds: Iterable[str],
    *,
    users: Sequence[tuple[str, str, str]] = (),
    token: str = ADMIN_TOKEN,
    controllers: bool = False,
) -> Iterator[Endpoint]:
    """A server started here, serving `crds`, behind a proxy; its kubeconfig (in `work`)
    presents `token` (one of `users`, or the administrator's). `controllers`: a hub's, with
    kube-controller-manager beside it (testbed/servers.py running())."""
    with running(name, crds, users=users, controllers=controllers) as server:
        proxy = FaultProxy(Target(server.url, server.ssl_context())).start(work)
        try:
            kubeconfig = server.write_kubeconfig(
                work / f"{name}-kubeconfig",
                context=context,
                token=token,
                server=proxy.url,
                ca_file=proxy.ca_file,
            )
            yield Endpoint(proxy, str(kubeconfig), context, server, server.collects_garbage)
        finally:
            proxy.stop()


@contextlib.contextmanager
def external(
    work: Path, name: str, context: str, given: Path, given_context: str | None
) -> Iterator[Endpoint]:
    """A real cluster (a kubeconfig and maybe a context in it) behind a proxy."""
    target, user = external_target(given, given_context)
    proxy = FaultProxy(target).start(work)
    try:
        kubeconfig = write_kubeconfig(
            work / f"{name}-kubeconfig",
            context=context,
            server=proxy.url,
            ca_file=proxy.ca_file,
            user=user,
        )
        yield Endpoint(proxy, str(kubeconfig), context)
    finally:
        proxy.stop()


def from_environment(
    work: Path,
    name: str,
    context: str,
    crds: Iterable[str],
    env_prefix: str,
    *,
    controllers: bool = False,
) -> contextlib.AbstractContextManager[Endpoint]:
    """The cluster `<env_prefix>_KUBECONFIG` (and `_CONTEXT`) names, else one started here
    (with a hub's controllers when `controllers`)."""
    given = os.environ.get(f"{env_prefix}_KUBECONFIG")
    if given:
        return external(work, name, context, Path(given), os.environ.get(f"{env_prefix}_CONTEXT"))
    return started(work, name, context, crds, controllers=controllers)


def external_target(path: Path, context: str | None) -> tuple[Target, dict[str, Any]]:
    """How the proxy reaches a real cluster (its TLS trust and client certificate), and the
    kubeconfig user entry gcjob keeps presenting (tokens and exec plugins pass through)."""
    config = kube_client.Configuration()
    kube_config.load_kube_config(
        config_file=str(path), context=context, client_configuration=config, persist_config=False
    )
    tls = ssl.create_default_context(cafile=config.ssl_ca_cert)
    if not config.verify_ssl:
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
    if config.cert_file:
        tls.load_cert_chain(config.cert_file, config.key_file)
    source = yaml.safe_load(path.read_text())
    absolute_file_paths(source, path.resolve().parent)
    current = context or source["current-context"]
    chosen = next(c for c in source["contexts"] if c["name"] == current)
    user = next(u for u in source["users"] if u["name"] == chosen["context"]["user"])
    return Target(config.host, tls), user["user"]


def absolute_file_paths(config: dict[str, Any], base: Path) -> None:
    """Relative file paths in a kubeconfig are relative to the file: keep them valid in a
    copy written elsewhere."""
    entries = [
        (c.get("cluster") or {}, ("certificate-authority",)) for c in config.get("clusters") or []
    ]
    entries += [
        (u.get("user") or {}, ("client-certificate", "client-key", "tokenFile"))
        for u in config.get("users") or []
    ]
    for entry, keys in entries:
        for key in keys:
            if entry.get(key) and not os.path.isabs(entry[key]):
                entry[key] = str(base / entry[key])


def kubeconfig_copy(source: str, path: Path, *, user: Any = None, cluster: Any = None) -> str:
    """The hub kubeconfig with its current context's user and/or cluster fields changed."""
    config = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
    current = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    if user is not None:
        for entry in config["users"]:
            if entry["name"] == current["context"]["user"]:
                entry["user"] = user(entry["user"]) if callable(user) else user
    if cluster is not None:
        for entry in config["clusters"]:
            if entry["name"] == current["context"]["cluster"]:
                entry["cluster"] = cluster(entry["cluster"])
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)
