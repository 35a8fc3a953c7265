"""Which API server gcjob talks to, and with what credentials.

Hub: an explicit kubeconfig first, `$KUBECONFIG` next, in-cluster last. Upstream clusters:
a context named after the cluster, else the server template with the upstream kubeconfig's
current context's credentials.
"""

from __future__ import annotations

import copy
import os
from urllib.parse import quote

import yaml
from kubernetes import config as kube_config
from kubernetes.client import ApiClient, Configuration
from kubernetes.config.config_exception import ConfigException

from gcjob.kube.errors import ConfigError, UnknownCluster

# What a missing, unreadable or malformed kubeconfig raises from inside the client.
_UNLOADABLE = (ConfigException, OSError, ValueError, TypeError, KeyError, yaml.YAMLError)


def _client(configuration: Configuration) -> ApiClient:
    # gcjob retries in its own transport only: urllib3's retries would re-send a DELETE.
    configuration.retries = False
    return ApiClient(configuration=configuration)


def _from_kubeconfig(path: str, context: str | None) -> Configuration:
    configuration = Configuration()
    try:
        kube_config.load_kube_config(
            config_file=path,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except _UNLOADABLE as exc:
        where = f"context {context!r} of " if context else ""
        raise ConfigError(f"cannot load {where}kubeconfig {path}: {_one_line(exc)}") from exc
    return configuration


def hub_client(kubeconfig: str | None, context: str | None) -> ApiClient:
    path = kubeconfig or os.environ.get("KUBECONFIG") or None
    if path:
        return _client(_from_kubeconfig(path, context))
    if context:
        raise ConfigError("--hub-context needs --hub-kubeconfig or $KUBECONFIG")
    configuration = Configuration()
    try:
        kube_config.load_incluster_config(client_configuration=configuration)
    except ConfigException as exc:
        raise ConfigError(
            f"no hub configured: pass --hub-kubeconfig, set $KUBECONFIG, or run in a pod "
            f"({_one_line(exc)})"
        ) from exc
    return _client(configuration)


class UpstreamResolver:
    """Upstream cluster name -> API client, per `--upstream-kubeconfig` and the template."""

    def __init__(self, kubeconfig: str | None, server_template: str | None) -> None:
        self.kubeconfig = kubeconfig
        self.server_template = server_template
        self._contexts: set[str] = set()
        self._template_base: Configuration | None = None
        if server_template is not None:
            if not kubeconfig:
                raise ConfigError("--upstream-server-template needs --upstream-kubeconfig")
            if "{cluster}" not in server_template or not server_template.startswith(
                ("https://", "http://")
            ):
                raise ConfigError(
                    "--upstream-server-template must be an http(s) URL containing {cluster}"
                )
        if kubeconfig:
            try:
                contexts, _ = kube_config.list_kube_config_contexts(config_file=kubeconfig)
            except _UNLOADABLE as exc:
                raise ConfigError(
                    f"cannot load upstream kubeconfig {kubeconfig}: {_one_line(exc)}"
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

    def client_for(self, cluster: str) -> ApiClient:
        assert self.kubeconfig is not None
        if cluster in self._contexts:
            return _client(_from_kubeconfig(self.kubeconfig, cluster))
        if self.server_template:
            if self._template_base is None:
                self._template_base = _from_kubeconfig(self.kubeconfig, None)
            configuration = copy.copy(self._template_base)
            configuration.host = self.server_url(cluster)
            return _client(configuration)
        raise UnknownCluster(f"no context named {cluster!r} in {self.kubeconfig} and no template")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:240] or type(exc).__name__
