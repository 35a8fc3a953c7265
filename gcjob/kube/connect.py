"""Which API server gcjob talks to, and with what credentials.

Hub: an explicit kubeconfig first, `$KUBECONFIG` next, in-cluster last. Upstream clusters:
a context named after the cluster, else the server template with the upstream kubeconfig's
current context's credentials.
"""

from __future__ import annotations

import copy
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple
from urllib.parse import quote, urlsplit

import urllib3
import yaml
from kubernetes import config as kube_config
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import ENV_KUBECONFIG_PATH_SEPARATOR

from gcjob.kube.errors import ConfigError, UnknownCluster
from gcjob.logs import warn_once
from gcjob.redact import keep_authorization, keep_secret, redact
from gcjob.urls import is_loopback, keep_proxy_credentials
from gcjob.visible import clip

# A kubeconfig is a few KiB (certificates included): a larger file is not one.
MAX_KUBECONFIG_BYTES = 4 * 1024 * 1024
# The named lists of a kubeconfig, and the key that holds each entry's body.
_NAMED_LISTS = (("clusters", "cluster"), ("contexts", "context"), ("users", "user"))


def _configuration() -> Configuration:
    """A Configuration that reads no proxy from the environment: the client would choose one
    for the kubeconfig's host, once, by Python's rules (the issue 46 leak: a templated
    upstream's http:// requests went to HTTPS_PROXY, token and all). The transport chooses
    per URL, as Go does (transport.Routes, urls.proxy_route). A kubeconfig's `proxy-url`
    still lands in `proxy`: that cluster's proxy for every URL, as kubectl uses it."""
    return Configuration(proxy="", no_proxy="")


def _client(configuration: Configuration, target: str) -> ApiClient:
    # gcjob retries in its own transport only: urllib3's retries would re-send a DELETE.
    configuration.retries = False
    if not configuration.verify_ssl:
        _warn_insecure(target)
    keep_credentials(configuration)
    # The client's own pool goes straight to the server; the kubeconfig's proxy-url, if any,
    # is kept in the configuration for the transport to route through (transport.Routes).
    explicit = configuration.proxy
    configuration.proxy = ""
    try:
        return ApiClient(configuration=configuration)
    finally:
        configuration.proxy = explicit


def keep_credentials(configuration: Configuration) -> None:
    """The credentials `configuration` holds, redacted by value from every output from now
    on (redact.keep_secret): a server that echoes a bare token in a message must not put it
    in the report. Its bearer token (a basic-auth one, its user:password too) and its client
    key, its `proxy-url`'s password (urls.keep_proxy_credentials); a token refreshed later is
    kept by the transport when it is sent."""
    keep_authorization(configuration.api_key.get("BearerToken"))
    keep_proxy_credentials(configuration.proxy)
    key_file = configuration.key_file
    if key_file:
        try:
            with open(key_file, encoding="utf-8", errors="replace") as file:
                key = file.read(MAX_KUBECONFIG_BYTES)
        except OSError:
            return
        for line in key.splitlines():
            if not line.startswith("-----"):
                keep_secret(line.strip())


def _warn_insecure(target: str) -> None:
    """Said once per run and target, as gcjob's own warning: urllib3 would print an
    InsecureRequestWarning for every request, burying the real errors in the log."""
    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    warn_once(
        f"insecure:{target}",
        f"TLS verification is off for the {target} (insecure-skip-tls-verify in the "
        "kubeconfig): the server's identity is not checked",
    )


def _trim_token(configuration: Configuration) -> None:
    """Trim the bearer token as kubectl does: a token file (or exec output, or `token:`) that
    ends in a newline works with kubectl, and would otherwise fail as an invalid header."""
    _trim(configuration)
    refresh = configuration.refresh_api_key_hook
    if refresh is not None:  # the client re-applies the untrimmed token before each request

        def refresh_trimmed(target: Configuration) -> None:
            refresh(target)  # which installs its own hook again: put this one back
            target.refresh_api_key_hook = refresh_trimmed
            _trim(target)

        configuration.refresh_api_key_hook = refresh_trimmed


def _trim(configuration: Configuration) -> None:
    value = configuration.api_key.get("BearerToken")
    if isinstance(value, str):
        scheme, _, token = value.partition(" ")
        configuration.api_key["BearerToken"] = f"{scheme} {token.strip()}"


class _Captures(logging.Handler):
    """The root logger's only handler while any kubeconfig loads (several load at once: each
    upstream cluster's first reader loads its context's credentials). The client logs a
    failed exec credential plugin (logging.error, its stderr in the message) and goes on as
    anonymous; gcjob turns that into its own error instead. A record of a loading thread is
    that load's, never shown; another thread's (a load a bound gave up on, failing later; a
    library's warning) goes where it would have gone: to the root's handlers from before the
    first of the loads. One handler for every load at once, counted: loads that each put their
    own in and the saved list back, ending out of order, left one load's failure uncaught and
    its stderr printed by basicConfig."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.guard = threading.Lock()  # not `lock`: logging.Handler holds that one in handle()
        self.loads: dict[int, list[str]] = {}  # loading thread -> its load's error messages
        self.passed: list[logging.Handler] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread is None:  # threads not recorded: it may be any load's, so it is each's
            for messages in list(self.loads.values()):
                if record.levelno >= logging.ERROR:
                    messages.append(record.getMessage())
            if self.loads:
                return
        elif record.thread in self.loads:
            if record.levelno >= logging.ERROR:
                self.loads[record.thread].append(record.getMessage())
            return
        fallback = [logging.lastResort] if logging.lastResort is not None else []
        for handler in self.passed or fallback:
            if record.levelno >= handler.level:
                handler.handle(record)

    @contextmanager
    def loading(self) -> Iterator[list[str]]:
        """This thread's load: the errors it logs, gathered while it runs."""
        root = logging.getLogger()
        thread = threading.get_ident()
        messages: list[str] = []
        with self.guard:
            # Put in unless it is the root's only handler (a load left behind, its plugin
            # hanging, keeps one counted, while whoever set the root's handlers since may
            # have taken it out): also keeps logging.error() from calling basicConfig().
            if root.handlers != [self]:
                self.passed = [handler for handler in root.handlers if handler is not self]
                root.handlers = [self]
            self.loads[thread] = messages
        try:
            yield messages
        finally:
            with self.guard:
                del self.loads[thread]
                if not self.loads and root.handlers == [self]:
                    root.handlers = self.passed
                    self.passed = []


_CAPTURES = _Captures()


def check_kubeconfig(paths: str) -> None:
    """Raises ConfigError unless each kubeconfig file of `paths` (split as the client splits
    `$KUBECONFIG`) has the shape the client reads, with no name twice in one list.

    The client takes the first of two contexts (clusters, users) of one name, silently;
    kubectl refuses such a file (`duplicate name "x" in list`), and so does gcjob: a context
    named after an upstream cluster, given twice, could point gcjob at another server that
    finds the cluster's Gateways "gone". Messages name the file and the entry, never the
    file's content (it holds credentials).
    """
    named_in: dict[tuple[str, str], str] = {}  # (list, name) -> the file that has it
    for path in paths.split(ENV_KUBECONFIG_PATH_SEPARATOR):
        path = os.path.expanduser(path)
        if path and os.path.exists(path):  # as the client: a missing one of several is skipped
            for key, name in _check_kubeconfig_file(path):
                first = named_in.setdefault((key, name), path)
                if first != path:
                    # The client merges several files first-wins: a context, cluster or user
                    # named in two of them is taken from the first, whatever the second says.
                    raise ConfigError(
                        f"kubeconfig {path}: {key} name {_quoted(name)} is in {first} too: "
                        "name it in one file only"
                    )


def _check_kubeconfig_file(path: str) -> list[tuple[str, str]]:
    """The (list, name) pairs of one well-shaped file; raises ConfigError otherwise."""

    def refuse(problem: str) -> ConfigError:
        return ConfigError(f"kubeconfig {path}: {problem}")

    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_KUBECONFIG_BYTES + 1)
    except OSError as exc:
        raise refuse(exc.strerror or type(exc).__name__) from None
    if len(raw) > MAX_KUBECONFIG_BYTES:
        raise refuse(f"larger than {MAX_KUBECONFIG_BYTES // (1024 * 1024)} MiB: not a kubeconfig")
    try:
        config = yaml.safe_load(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise refuse(f"not UTF-8 at byte {exc.start}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise refuse(f"not valid YAML{where}") from None
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise refuse(f"not valid YAML ({type(exc).__name__})") from None
    if config is None:
        raise refuse("empty")
    if not isinstance(config, dict):
        raise refuse("not a YAML mapping")
    current = config.get("current-context")
    if current is not None and not isinstance(current, str):
        raise refuse("current-context is not a string")
    names: list[tuple[str, str]] = []
    for key, body in _NAMED_LISTS:
        entries = config.get(key)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise refuse(f"{key} is not a list")
        seen: set[str] = set()
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise refuse(f"{key}[{index}] is not a mapping")
            name = entry.get("name")
            if not isinstance(name, str) or not name:
                raise refuse(f"{key}[{index}] has no name")
            if name in seen:
                raise refuse(
                    f"duplicate {body} name {_quoted(name)} in {key} (kubectl refuses it too)"
                )
            seen.add(name)
            names.append((key, name))
            if entry.get(body) is not None and not isinstance(entry[body], dict):
                raise refuse(f"{body} {_quoted(name)} is not a mapping")
    return names


def _quoted(name: str) -> str:
    """A name from the file, on one line and short."""
    return repr(name[:80] + ("..." if len(name) > 80 else ""))


def _from_kubeconfig(path: str, context: str | None) -> Configuration:
    check_kubeconfig(path)
    configuration = _configuration()
    where = f"context {context!r} of " if context else ""
    with _CAPTURES.loading() as failures:
        try:
            kube_config.load_kube_config(
                config_file=path,
                context=context,
                client_configuration=configuration,
                persist_config=False,
            )
        except ConfigException as exc:  # the client's own words: no file content in them
            raise ConfigError(f"cannot load {where}kubeconfig {path}: {_one_line(exc)}") from exc
        except Exception as exc:
            # Whatever else the client raises on a file it cannot read: a file gcjob cannot
            # use (exit 2), never a traceback. Only the type: its message may quote the file.
            raise ConfigError(
                f"cannot load {where}kubeconfig {path}: not a usable kubeconfig "
                f"({type(exc).__name__})"
            ) from exc
    if failures:
        # e.g. "exec: process returned 1. <the plugin's stderr>": the stderr is not shown,
        # it may hold what the plugin was handling.
        first = failures[0].split(". ", 1)[0]
        raise ConfigError(
            f"cannot load {where}kubeconfig {path}: its credential plugin failed "
            f"({_one_line(ValueError(first))})"
        )
    _trim_token(configuration)
    return configuration


def hub_client(
    kubeconfig: str | None,
    context: str | None,
    timeout: float | None = None,
    connections: int = 0,
) -> ApiClient:
    """`timeout`: most seconds to spend loading credentials (an exec plugin can hang).
    `connections`: requests the run may have in flight to the hub at once, each kept alive
    (the client's default keeps five a CPU it sees, and closes any more after each use)."""
    path = kubeconfig or os.environ.get("KUBECONFIG") or None
    if path:
        configuration = _bounded(lambda: _from_kubeconfig(path, context), timeout, path)
        return _client(_kept_alive(configuration, connections), "hub")
    if context:
        raise ConfigError("--hub-context needs --hub-kubeconfig or $KUBECONFIG")
    configuration = _configuration()
    try:
        kube_config.load_incluster_config(client_configuration=configuration)
    except ConfigException as exc:
        raise ConfigError(
            f"no hub configured: pass --hub-kubeconfig, set $KUBECONFIG, or run in a pod "
            f"({_one_line(exc)})"
        ) from exc
    return _client(_kept_alive(configuration, connections), "hub")


def _kept_alive(configuration: Configuration, connections: int) -> Configuration:
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize, connections)
    return configuration


# Even a run with almost no time left loads a plain kubeconfig: it takes milliseconds.
MIN_CREDENTIAL_SECONDS = 1.0


def _bounded(load: Callable[[], Configuration], timeout: float | None, path: str) -> Configuration:
    """Run `load` for at most `timeout` seconds. The client runs an exec plugin with no time
    limit; a plugin that hangs is left behind (a daemon thread) and the run ends."""
    if timeout is None:
        return load()
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = load()
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="gcjob-credentials", daemon=True)
    thread.start()
    timeout = max(timeout, MIN_CREDENTIAL_SECONDS)
    thread.join(timeout)
    if thread.is_alive():
        raise ConfigError(
            f"cannot load kubeconfig {path}: its credentials took longer than --timeout "
            f"({timeout:g}s) to load (a hanging credential plugin?)"
        )
    if "error" in outcome:
        raise outcome["error"]
    configuration: Configuration = outcome["value"]
    return configuration


class SharedPoolManager(urllib3.PoolManager):
    """One connection pool for every cluster reached through the template: they share the
    server, the CA and the credentials, and differ only in the path. A TLS connection is then
    made once and kept for the next cluster, not made and dropped per cluster (at 1,000
    clusters, most of an upstream read's time). Requests carry their own headers, so nothing
    of one cluster's request stays on the connection for the next.

    `clear` (a transport done with its cluster) keeps the connections: they are the other
    clusters' too, and at most `maxsize` of them stay idle until the run ends; so do the
    proxy managers made from it (`keeps_connections`, transport.Routes)."""

    keeps_connections = True

    def clear(self) -> None:
        pass


# Kept-alive connections of the shared pool: one for each reader thread at the default
# --upstream-concurrency (32) and well past it. Above this many threads, the extra ones make
# and drop a connection per request (what every cluster did before the pool was shared).
SHARED_POOL_CONNECTIONS = 64


def _share_pool(client: ApiClient, shared: SharedPoolManager | None) -> SharedPoolManager | None:
    """Points `client` at `shared`, made from `client`'s own settings when None. The client's
    own pool goes straight to its server (_client); a request through a proxy goes through
    the transport's proxy manager, made from the same settings (transport.Routes)."""
    own = client.rest_client.pool_manager
    if type(own) is not urllib3.PoolManager:
        return shared
    if shared is None:
        settings = {**own.connection_pool_kw, "maxsize": SHARED_POOL_CONNECTIONS}
        # The Project API may be another server than the template's: a pool for each.
        shared = SharedPoolManager(num_pools=4, **settings)
    client.rest_client.pool_manager = shared
    return shared


class UpstreamClient(NamedTuple):
    """An upstream cluster's API client and the server its requests go to."""

    client: ApiClient
    server: str


class UpstreamResolver:
    """Upstream cluster name -> API client, per `--upstream-kubeconfig` and the template.

    Every cluster reached through the template shares one client: they share the server, the
    CA and the credentials and differ only in the path, which each cluster's transport pins
    (`UpstreamClient.server`). A client of its own for each was about 3 KiB a cluster for
    the run (its configuration copied, its own pool manager made and dropped): 30 MiB at
    10,000 projects."""

    def __init__(self, kubeconfig: str | None, server_template: str | None) -> None:
        self.kubeconfig = kubeconfig
        self.server_template = server_template
        self._contexts: set[str] = set()
        self._template_base: Configuration | None = None
        self._template_client: ApiClient | None = None
        self._template_pool: SharedPoolManager | None = None  # made with the first client
        self._template_lock = threading.Lock()  # clusters are resolved from several threads
        if server_template is not None:
            if not kubeconfig:
                raise ConfigError("--upstream-server-template needs --upstream-kubeconfig")
            check_server_template(server_template)
        if kubeconfig:
            check_kubeconfig(kubeconfig)
            try:
                contexts, _ = kube_config.list_kube_config_contexts(config_file=kubeconfig)
            except Exception as exc:  # as in _from_kubeconfig: a file gcjob cannot use
                problem = (
                    _one_line(exc)
                    if isinstance(exc, ConfigException)
                    else f"not a usable kubeconfig ({type(exc).__name__})"
                )
                raise ConfigError(
                    f"cannot load upstream kubeconfig {kubeconfig}: {problem}"
                ) from exc
            self._contexts = {c["name"] for c in contexts or [] if isinstance(c, dict)}

    @property
    def configured(self) -> bool:
        return bool(self.kubeconfig)

    def describe(self, cluster: str) -> str:
        if cluster in self._contexts:
            return f"context {cluster!r}"
        if self.server_template:
            return self.server_url(cluster)
        return "none"

    def server_url(self, cluster: str) -> str:
        assert self.server_template is not None
        return self.server_template.replace("{cluster}", quote(cluster, safe=""))

    def is_project(self, cluster: str) -> bool:
        """Only a cluster reached through the template is a Milo project; a kubeconfig
        context (and `single`) never is."""
        return bool(self.server_template) and cluster not in self._contexts

    def project_api_client(self, url: str) -> UpstreamClient:
        """A client for Milo's Project API at `url`, with the template's credentials (the
        same identity that reads the projects' control planes) and its connection pool."""
        configuration = copy.copy(self._base())
        configuration.host = url
        client = _client(configuration, "the Project API")
        with self._template_lock:
            self._template_pool = _share_pool(client, self._template_pool)
        return UpstreamClient(client, url)

    def _base(self) -> Configuration:
        assert self.kubeconfig is not None
        with self._template_lock:  # its credentials are loaded once, not once per thread
            if self._template_base is None:
                self._template_base = _from_kubeconfig(self.kubeconfig, None)
            return self._template_base

    def _template(self) -> ApiClient:
        """The one client of every templated cluster (its host is never used: each cluster's
        transport sends to its own server)."""
        base = self._base()
        with self._template_lock:
            if self._template_client is None:
                client = _client(copy.copy(base), "upstream clusters")
                self._template_pool = _share_pool(client, self._template_pool)
                self._template_client = client
            return self._template_client

    def client_for(self, cluster: str) -> UpstreamClient:
        assert self.kubeconfig is not None
        if cluster in self._contexts:
            client = _client(_from_kubeconfig(self.kubeconfig, cluster), "upstream clusters")
            return UpstreamClient(client, str(client.configuration.host))
        if self.server_template:
            return UpstreamClient(self._template(), self.server_url(cluster))
        raise UnknownCluster(f"no context named {cluster!r} in {self.kubeconfig} and no template")


_HOST = re.compile(r"[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]")
# Milo serves each project's control plane below the project itself.
MILO_CONTROL_PLANE = "/apis/resourcemanager.miloapis.com/v1alpha1/projects/{cluster}/control-plane"


def project_api_from_template(template: str | None) -> str | None:
    """The Project API's URL when the template is Milo's control-plane path (the server
    before it), else None: a template of another shape names no Project API."""
    if template is None:
        return None
    base, found, rest = template.partition(MILO_CONTROL_PLANE)
    return base if found and rest in ("", "/") and base else None


def check_server_template(template: str) -> None:
    """Raises ConfigError unless the template is a URL that can only reach one host.

    `{cluster}` goes in the path only: in the host, a project named after another domain
    would receive the upstream credentials. `http://` would send the bearer token in
    cleartext: only to loopback. The message never echoes the template (it may hold userinfo).
    """
    flag = "--upstream-server-template"
    if "{cluster}" not in template:
        raise ConfigError(f"{flag} must contain {{cluster}} (in its path)")
    try:
        url = urlsplit(template)
        port = url.port
    except ValueError as exc:
        raise ConfigError(f"{flag} is not a valid URL: {_one_line(exc)}") from None
    if url.scheme not in ("https", "http"):
        raise ConfigError(f"{flag} must be an https:// URL")
    if "@" in url.netloc:
        raise ConfigError(f"{flag} must not carry credentials: they come from the kubeconfig")
    if "{cluster}" in url.netloc or "{cluster}" in url.query or "{cluster}" in url.fragment:
        raise ConfigError(f"{flag} may hold {{cluster}} in its path only, not in its host")
    if url.query or url.fragment:
        raise ConfigError(f"{flag} must not have a query or fragment")
    host = url.netloc.rsplit(":", 1)[0] if port is not None else url.netloc
    if not host or _HOST.fullmatch(host) is None:
        raise ConfigError(f"{flag} has no valid host name")
    if url.scheme == "http" and not is_loopback(url.hostname or ""):
        raise ConfigError(f"{flag} must be https:// (http:// sends the token in cleartext)")


def _one_line(exc: BaseException) -> str:
    return clip(redact(str(exc)), 240) or type(exc).__name__  # redacted before it is cut
