"""gcjob.kube.connect: which API server gcjob talks to, and with what credentials.

Kubeconfigs are written to tmp_path; their servers are http://127.0.0.1:1 and friends, and
nothing is contacted: building a client makes no request.
"""

from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path

import pytest
import urllib3
import yaml
from kubernetes.client import Configuration
from kubernetes.config import incluster_config

from gcjob import logs
from gcjob.budget import RunBudget
from gcjob.kube.connect import (
    SHARED_POOL_CONNECTIONS,
    SharedPoolManager,
    UpstreamResolver,
    hub_client,
)
from gcjob.kube.errors import ConfigError, ProxyRefused, UnknownCluster
from gcjob.kube.transport import RequestStats, Transport, routes_of
from gcjob.redact import redact

TEMPLATE = "https://api.example/apis/resourcemanager.miloapis.com/v1alpha1/projects/{cluster}/control-plane"


def one_user_kubeconfig(path: Path, user: dict[str, object]) -> Path:
    """A kubeconfig of one context, `hub`, whose user is `user`, written to `path`."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "hub", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "hub",
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _exec_user(script: str) -> dict[str, object]:
    """A user whose credentials come from `script`, run by this Python as an exec plugin."""
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": ["-c", script],
            "interactiveMode": "Never",
        }
    }


class KeptLines(logging.Handler):
    """Every line it is handed, as its message."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def kubeconfig(
    path: Path, contexts: dict[str, str], current: str | None = None, token: str = "tok"
) -> Path:
    """A kubeconfig with one context per name -> server, each with its own token user."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": f"c-{n}", "cluster": {"server": s}} for n, s in contexts.items()],
        "users": [{"name": f"u-{n}", "user": {"token": f"{token}-{n}"}} for n in contexts],
        "contexts": [
            {"name": n, "context": {"cluster": f"c-{n}", "user": f"u-{n}"}} for n in contexts
        ],
        "current-context": current if current is not None else next(iter(contexts)),
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No $KUBECONFIG, no in-cluster environment: each test states its own."""
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    # never read a real pod's service account, even when the tests run in one
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "no-token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(tmp_path / "no-ca.crt"))


@pytest.fixture
def in_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    token = tmp_path / "sa-token"
    token.write_text("in-cluster-token")
    ca = tmp_path / "sa-ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.3")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "1")


def _token(client: object) -> str:
    settings = client.configuration.auth_settings()  # type: ignore[attr-defined]
    return str(settings["BearerToken"]["value"])


# -- hub_client -----------------------------------------------------------------------------


def test_explicit_kubeconfig(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "hub.yaml", {"hub": "http://127.0.0.1:1"})
    client = hub_client(str(path), None)
    assert client.configuration.host == "http://127.0.0.1:1"
    assert _token(client) == "Bearer tok-hub"


def test_explicit_kubeconfig_wins_over_env_and_in_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_cluster: None
) -> None:
    explicit = kubeconfig(tmp_path / "hub.yaml", {"hub": "http://127.0.0.1:1"})
    env = kubeconfig(tmp_path / "env.yaml", {"env": "http://127.0.0.2:1"})
    monkeypatch.setenv("KUBECONFIG", str(env))
    client = hub_client(str(explicit), None)
    assert client.configuration.host == "http://127.0.0.1:1"


def test_env_kubeconfig_wins_over_in_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_cluster: None
) -> None:
    env = kubeconfig(tmp_path / "env.yaml", {"env": "http://127.0.0.2:1"})
    monkeypatch.setenv("KUBECONFIG", str(env))
    client = hub_client(None, None)
    assert client.configuration.host == "http://127.0.0.2:1"
    assert _token(client) == "Bearer tok-env"


@pytest.mark.parametrize("where", ["kubeconfig", "in-cluster"])
def test_the_hub_keeps_a_connection_alive_for_each_request_a_run_has_in_flight(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    """A pool smaller than the requests in flight closes a connection after each use (and
    opens a new one, TLS and all, for the next)."""
    if where == "in-cluster":
        request.getfixturevalue("in_cluster")
        path = None
    else:
        path = str(kubeconfig(tmp_path / "hub.yaml", {"hub": "http://127.0.0.1:1"}))
    client = hub_client(path, None, None, 64)
    assert client.rest_client.pool_manager.connection_pool_kw["maxsize"] == 64
    default = Configuration().connection_pool_maxsize
    assert hub_client(path, None, None, 1).configuration.connection_pool_maxsize == default


def test_in_cluster_last(in_cluster: None) -> None:
    client = hub_client(None, None)
    assert client.configuration.host == "https://127.0.0.3:1"
    assert _token(client).lower() == "bearer in-cluster-token"
    assert client.configuration.retries is False


def test_empty_kubeconfig_env_is_unset(monkeypatch: pytest.MonkeyPatch, in_cluster: None) -> None:
    monkeypatch.setenv("KUBECONFIG", "")
    assert hub_client(None, None).configuration.host == "https://127.0.0.3:1"


def test_nothing_configured_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as raised:
        hub_client(None, None)
    message = str(raised.value)
    assert message
    assert "\n" not in message
    assert "--hub-kubeconfig" in message


def test_in_cluster_env_without_service_account_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.3")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "1")
    with pytest.raises(ConfigError) as raised:
        hub_client(None, None)
    assert "\n" not in str(raised.value)


def test_hub_context_selects_the_context(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path / "hub.yaml",
        {"mgmt": "http://127.0.0.1:1", "hub": "http://127.0.0.2:1"},
        current="mgmt",
    )
    assert hub_client(str(path), None).configuration.host == "http://127.0.0.1:1"
    client = hub_client(str(path), "hub")
    assert client.configuration.host == "http://127.0.0.2:1"
    assert _token(client) == "Bearer tok-hub"


def test_hub_context_applies_to_env_kubeconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = kubeconfig(
        tmp_path / "env.yaml", {"mgmt": "http://127.0.0.1:1", "hub": "http://127.0.0.2:1"}
    )
    monkeypatch.setenv("KUBECONFIG", str(path))
    assert hub_client(None, "hub").configuration.host == "http://127.0.0.2:1"


def test_bad_hub_context_is_a_config_error(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "hub.yaml", {"hub": "http://127.0.0.1:1"})
    with pytest.raises(ConfigError) as raised:
        hub_client(str(path), "no-such-context")
    assert "no-such-context" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_hub_context_without_kubeconfig_is_a_config_error(in_cluster: None) -> None:
    # never silently fall back to the pod's own credentials when a context was asked for
    with pytest.raises(ConfigError):
        hub_client(None, "hub")


@pytest.mark.parametrize(
    "content",
    [None, "", "not: [a kubeconfig", "apiVersion: v1\nkind: Config\ncontexts: []\n"],
)
def test_unusable_kubeconfig_is_a_config_error(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "hub.yaml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError) as raised:
        hub_client(str(path), None)
    assert "\n" not in str(raised.value)


def test_hub_client_does_not_retry_itself(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "hub.yaml", {"hub": "http://127.0.0.1:1"})
    assert hub_client(str(path), None).configuration.retries is False


# -- UpstreamResolver -----------------------------------------------------------------------


@pytest.fixture
def upstreams(tmp_path: Path) -> Path:
    return kubeconfig(
        tmp_path / "upstreams.yaml",
        {
            "milo": "http://127.0.0.1:1",
            "single": "http://127.0.0.2:1",
            "org/proj": "http://127.0.0.4:1",
        },
        current="milo",
    )


def test_context_names_are_cluster_names(upstreams: Path) -> None:
    resolver = UpstreamResolver(str(upstreams), None)
    assert resolver.configured
    client, server = resolver.client_for("single")
    assert server == client.configuration.host == "http://127.0.0.2:1"
    assert _token(client) == "Bearer tok-single"
    assert client.configuration.retries is False
    assert resolver.client_for("org/proj").server == "http://127.0.0.4:1"
    assert resolver.describe("single") == "context 'single'"


def test_unknown_cluster_without_template(upstreams: Path) -> None:
    resolver = UpstreamResolver(str(upstreams), None)
    assert resolver.describe("proj-unknown") == "none"
    with pytest.raises(UnknownCluster):
        resolver.client_for("proj-unknown")


def test_template_substitutes_and_percent_encodes(upstreams: Path) -> None:
    resolver = UpstreamResolver(str(upstreams), TEMPLATE)
    client, server = resolver.client_for("proj-beta/sub")
    expected = (
        "https://api.example/apis/resourcemanager.miloapis.com/v1alpha1/projects/"
        "proj-beta%2Fsub/control-plane"
    )
    assert server == expected
    assert resolver.server_url("proj-beta/sub") == expected
    assert resolver.describe("proj-beta/sub") == expected
    # the credentials of the kubeconfig's current context
    assert _token(client) == "Bearer tok-milo"
    assert client.configuration.retries is False


def test_template_org_proj(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "milo.yaml", {"milo": "http://127.0.0.1:1"})
    resolver = UpstreamResolver(str(path), "http://127.0.0.1:1/projects/{cluster}/cp")
    assert resolver.server_url("org/proj") == "http://127.0.0.1:1/projects/org%2Fproj/cp"
    assert resolver.client_for("org/proj").server == "http://127.0.0.1:1/projects/org%2Fproj/cp"


def test_template_encodes_every_reserved_character(upstreams: Path) -> None:
    resolver = UpstreamResolver(str(upstreams), TEMPLATE)
    url = resolver.server_url("a b?c#d/../e")
    assert "projects/a%20b%3Fc%23d%2F..%2Fe/control-plane" in url


def test_context_wins_over_template(upstreams: Path) -> None:
    resolver = UpstreamResolver(str(upstreams), TEMPLATE)
    assert resolver.client_for("single").server == "http://127.0.0.2:1"
    assert resolver.client_for("org/proj").server == "http://127.0.0.4:1"
    assert resolver.describe("single") == "context 'single'"


def test_template_clusters_share_one_client_and_each_has_its_own_server(
    upstreams: Path,
) -> None:
    """One client (credentials, pool) for every templated cluster: only the server differs,
    and each cluster's transport sends there, whatever the shared client's own host."""
    resolver = UpstreamResolver(str(upstreams), TEMPLATE)
    first = resolver.client_for("proj-a")
    second = resolver.client_for("proj-b")
    assert first.client is second.client
    assert "projects/proj-a/" in first.server
    assert "projects/proj-b/" in second.server
    transport = Transport(
        second.client,
        "upstream/proj-b",
        stats=RequestStats(),
        budget=RunBudget(None),
        server=second.server,
    )
    assert transport.server == second.server


def test_template_clients_share_one_connection_pool(upstreams: Path) -> None:
    """One TLS connection serves cluster after cluster (they differ only in the path): a
    transport done with its cluster (`clear`) leaves the pool to the others."""
    resolver = UpstreamResolver(str(upstreams), TEMPLATE)
    first = resolver.client_for("proj-a").client
    project_api = resolver.project_api_client("https://api.example")
    assert project_api.server == "https://api.example"
    shared = first.rest_client.pool_manager
    assert isinstance(shared, SharedPoolManager)
    assert project_api.client.rest_client.pool_manager is shared
    assert shared.connection_pool_kw["maxsize"] == SHARED_POOL_CONNECTIONS
    assert shared.connection_pool_kw["retries"].total is False  # gcjob's transport retries
    pool = shared.connection_from_url("https://api.example/")
    first.rest_client.pool_manager.clear()
    assert shared.connection_from_url("https://api.example/") is pool


def test_a_context_named_cluster_keeps_its_own_pool(upstreams: Path) -> None:
    resolver = UpstreamResolver(str(upstreams), TEMPLATE)
    own = resolver.client_for("single").client.rest_client.pool_manager
    assert not isinstance(own, SharedPoolManager)
    assert own is not resolver.client_for("proj-a").client.rest_client.pool_manager
    own.connection_from_url("http://127.0.0.2:1/")
    own.clear()  # closes its idle connections, as before
    assert len(own.pools) == 0


def test_a_kubeconfig_proxy_url_is_the_transports_route_for_every_url(tmp_path: Path) -> None:
    """The client's own pool goes straight to the server; the kubeconfig's proxy-url is the
    route the transport takes for every URL of it (kubectl's use), the templated clusters'
    URLs and the Project API's included, with the pool's TLS settings."""
    path = kubeconfig(tmp_path / "proxied.yaml", {"milo": "https://api.example"})
    config = yaml.safe_load(path.read_text())
    config["clusters"][0]["cluster"]["proxy-url"] = "http://127.0.0.5:3128"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    resolver = UpstreamResolver(str(path), TEMPLATE)
    template = resolver.client_for("proj-a")
    project_api = resolver.project_api_client("https://api.example")
    for upstream in (template, project_api):
        assert isinstance(upstream.client.rest_client.pool_manager, SharedPoolManager)
        proxied = routes_of(upstream.client).manager(upstream.server, True)
        assert isinstance(proxied, urllib3.ProxyManager)
        assert proxied.proxy is not None and proxied.proxy.url == "http://127.0.0.5:3128"
        kept = proxied.connection_pool_kw
        assert kept["retries"].total is False  # gcjob's transport retries
        assert kept["maxsize"] == SHARED_POOL_CONNECTIONS


def test_the_environment_proxy_is_not_the_clients_choice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46: the client chose HTTPS_PROXY once, for the kubeconfig's https:// host, and
    the templated clusters' http:// loopback requests went through it, token and all. Now no
    client reads the environment: each request's route is chosen for its own URL."""
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.5:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.5:3128")
    path = kubeconfig(tmp_path / "upstream.yaml", {"milo": "https://milo.example"})
    resolver = UpstreamResolver(str(path), "http://127.0.0.1:8001/clusters/{cluster}")
    upstream = resolver.client_for("proj-a")
    assert type(upstream.client.rest_client.pool_manager) is SharedPoolManager
    routes = routes_of(upstream.client)
    assert routes.manager(upstream.server, True) is upstream.client.rest_client.pool_manager
    assert isinstance(routes.manager("https://milo.example", True), urllib3.ProxyManager)


@pytest.mark.parametrize(
    "template",
    [
        "https://api.example/projects/control-plane",  # no {cluster}
        "ftp://api.example/projects/{cluster}",
        "api.example/projects/{cluster}",
        "{cluster}",
        "",
    ],
)
def test_template_validation(upstreams: Path, template: str) -> None:
    with pytest.raises(ConfigError) as raised:
        UpstreamResolver(str(upstreams), template)
    assert "\n" not in str(raised.value)


def test_template_needs_a_kubeconfig() -> None:
    with pytest.raises(ConfigError, match="--upstream-kubeconfig"):
        UpstreamResolver(None, TEMPLATE)


def test_unreadable_upstream_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        UpstreamResolver(str(tmp_path / "missing.yaml"), None)
    broken = tmp_path / "broken.yaml"
    broken.write_text("contexts: [\n")
    with pytest.raises(ConfigError):
        UpstreamResolver(str(broken), None)


def test_not_configured() -> None:
    resolver = UpstreamResolver(None, None)
    assert not resolver.configured


# -- hostile input (issue 12 A, E, 9) -------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("https://{cluster}:16443/x", "path only"),
        ("https://{cluster}.api.example/x", "path only"),
        ("https://api.example/x?project={cluster}", "path only"),
        ("https://api.example/x#{cluster}", "path only"),
        ("http://api.example/projects/{cluster}", "cleartext"),
        ("http://10.0.0.1/projects/{cluster}", "cleartext"),
        ("https://exa mple:99999/{cluster}", "not a valid URL"),
        ("https://exa mple/{cluster}", "no valid host"),
        ("https:///projects/{cluster}", "no valid host"),
        ("https://user:hunter2@api.example/projects/{cluster}", "credentials"),
    ],
)
def test_a_template_that_could_send_credentials_elsewhere_is_refused(
    upstreams: Path, template: str, why: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        UpstreamResolver(str(upstreams), template)
    message = str(raised.value)
    assert why in message
    assert "hunter2" not in message and "\n" not in message


@pytest.mark.parametrize(
    "template",
    [
        "http://127.0.0.1:8001/projects/{cluster}",
        "http://localhost/projects/{cluster}",
        "http://[::1]:8001/projects/{cluster}",
        "https://[2001:db8::1]:6443/projects/{cluster}",
        TEMPLATE,
    ],
)
def test_https_and_loopback_http_templates_are_accepted(upstreams: Path, template: str) -> None:
    resolver = UpstreamResolver(str(upstreams), template)
    assert resolver.server_url("a/b") == template.replace("{cluster}", "a%2Fb")


@pytest.mark.parametrize("ending", ["\n", "\r\n", "  \n\n", "\t"])
@pytest.mark.parametrize("source", ["token", "tokenFile"])
def test_a_token_is_trimmed_as_kubectl_does(tmp_path: Path, ending: str, source: str) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cr3t" + ending)
    user = {"token": "s3cr3t" + ending} if source == "token" else {"tokenFile": str(token_file)}
    path = one_user_kubeconfig(tmp_path / "kubeconfig", user)
    client = hub_client(str(path), None)
    # auth_settings() runs the client's refresh hook, which re-applies the kubeconfig's token
    assert _token(client) == "Bearer s3cr3t"
    assert _token(client) == "Bearer s3cr3t"


@pytest.mark.parametrize(
    "script",
    [
        "import sys; sys.stderr.write('s3cr3t-in-stderr'); sys.exit(3)",  # fails
        "print('not json')",  # answers garbage
        "print('{}')",  # answers no ExecCredential
    ],
)
def test_a_failing_credential_plugin_is_a_config_error_not_anonymous(
    tmp_path: Path, script: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 12 item 5: the client would log `ERROR:root:` and go on as system:anonymous."""

    exec_user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": ["-c", script],
            "interactiveMode": "Never",
        }
    }
    path = one_user_kubeconfig(tmp_path / "kubeconfig", exec_user)
    with pytest.raises(ConfigError, match="credential plugin failed") as raised:
        hub_client(str(path), None)
    assert "s3cr3t" not in str(raised.value) and "\n" not in str(raised.value)
    captured = capsys.readouterr()
    assert "ERROR:root" not in captured.err and "s3cr3t" not in captured.err


def test_a_hanging_credential_plugin_is_bounded_by_the_run(tmp_path: Path) -> None:
    """issue 12 item 6: the client waits for an exec plugin with no time limit."""
    import time

    hang = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": ["-c", "import time; time.sleep(4)"],
            "interactiveMode": "Never",
        }
    }
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": hang}],
        "contexts": [{"name": "hub", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "hub",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    import threading

    root = logging.getLogger()
    before = list(root.handlers)
    started = time.monotonic()
    with pytest.raises(ConfigError, match="took longer than --timeout"):
        hub_client(str(path), None, timeout=1.0)
    assert time.monotonic() - started < 3.0
    # The load left behind ends with its plugin; then the root has its handlers back.
    for thread in threading.enumerate():
        if thread.name == "gcjob-credentials":
            thread.join(10)
    assert root.handlers == before


def test_a_plain_kubeconfig_loads_within_a_bound(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"hub": "https://127.0.0.1:1"})
    assert _token(hub_client(str(path), None, timeout=0.0)) == "Bearer tok-hub"


def test_an_insecure_kubeconfig_is_said_once_per_target_as_gcjobs_own_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = kubeconfig(tmp_path / "kc", {"hub": "https://127.0.0.1:1", "p1": "https://127.0.0.2:1"})
    config = yaml.safe_load(path.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["insecure-skip-tls-verify"] = True
    path.write_text(yaml.safe_dump(config))
    logs.setup("text", "run-1")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            assert not hub_client(str(path), None).configuration.verify_ssl
        resolver = UpstreamResolver(str(path), TEMPLATE)
        for cluster in ("p1", "p2", "p3"):
            resolver.client_for(cluster)
        warnings.warn("one request", urllib3.exceptions.InsecureRequestWarning, stacklevel=1)
    assert capsys.readouterr().err.splitlines() == [
        "gcjob: WARNING: TLS verification is off for the hub (insecure-skip-tls-verify in the "
        "kubeconfig): the server's identity is not checked",
        "gcjob: WARNING: TLS verification is off for the upstream clusters "
        "(insecure-skip-tls-verify in the kubeconfig): the server's identity is not checked",
    ]
    assert not [w for w in caught if w.category is urllib3.exceptions.InsecureRequestWarning]


def test_a_plugin_failure_is_its_loads_alone_and_another_threads_log_lines_go_on(
    tmp_path: Path,
) -> None:
    """While a kubeconfig loads, another thread logs (a load a bound gave up on, failing
    later, once took a plain kubeconfig's load down with its "credential plugin failed"): its
    lines are not this load's failure, and they reach the root logger's handlers."""
    import threading

    slow_ok = _exec_user(
        "import json, time; time.sleep(0.5); print(json.dumps({'apiVersion': "
        "'client.authentication.k8s.io/v1', 'kind': 'ExecCredential', "
        "'status': {'token': 'tok'}}))"
    )
    good = one_user_kubeconfig(tmp_path / "good", slow_ok)

    root = logging.getLogger()
    kept = KeptLines()
    root.addHandler(kept)
    loading = threading.Event()
    done = threading.Event()

    def other() -> None:
        loading.wait()
        n = 0
        while not done.is_set():
            logging.error("exec: process returned 1. from another thread %d", n)
            n += 1
            done.wait(0.01)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        loading.set()
        client = hub_client(str(good), None)  # its plugin takes 0.5 s: the other thread logs
    finally:
        done.set()
        thread.join()
        root.removeHandler(kept)
    assert _token(client) == "Bearer tok"
    assert len(kept.lines) > 5 and all("from another thread" in line for line in kept.lines)


def test_two_contexts_loading_at_once_each_keep_their_own_plugin_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two upstream contexts' credentials load at once (each cluster's first reader loads its
    own). Context a's plugin answers after 0.5 s; b's load starts 0.2 s in and its plugin
    fails after 1.5 s, after a's load ended: b's failure is still a ConfigError (never
    anonymous), its stderr reaches no output, the root logger's handlers are left as they
    were, and a's thread's later lines are not swallowed. (Each load once put its own handler
    in and the saved list back: ending out of order, b went anonymous and basicConfig printed
    its stderr. Found by an audit.)"""
    import threading
    import time

    ok_after = (
        "import json, time; time.sleep(0.5); print(json.dumps({'apiVersion': "
        "'client.authentication.k8s.io/v1', 'kind': 'ExecCredential', "
        "'status': {'token': 'tok'}}))"
    )
    fail_after = "import sys, time; time.sleep(1.5); sys.stderr.write('s3cr3t'); sys.exit(3)"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "ca", "cluster": {"server": "https://127.0.0.1:1"}},
            {"name": "cb", "cluster": {"server": "https://127.0.0.2:1"}},
        ],
        "users": [
            {"name": "ua", "user": _exec_user(ok_after)},
            {"name": "ub", "user": _exec_user(fail_after)},
        ],
        "contexts": [
            {"name": "a", "context": {"cluster": "ca", "user": "ua"}},
            {"name": "b", "context": {"cluster": "cb", "user": "ub"}},
        ],
        "current-context": "a",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    resolver = UpstreamResolver(str(path), None)

    root = logging.getLogger()
    before = list(root.handlers)
    kept = KeptLines()
    root.handlers = [kept]
    outcome: dict[str, object] = {}
    both_loaded = threading.Event()

    def load(cluster: str) -> None:
        try:
            outcome[cluster] = resolver.client_for(cluster)
        except ConfigError as exc:
            outcome[cluster] = exc
        if cluster == "a":  # a reader thread goes on reading, and logging, after its load
            both_loaded.wait(10)
            logging.getLogger("urllib3.connectionpool").warning("a later line of a's thread")

    first = threading.Thread(target=load, args=("a",))
    first.start()
    time.sleep(0.2)
    second = threading.Thread(target=load, args=("b",))
    second.start()
    second.join()
    both_loaded.set()
    first.join()
    after = list(root.handlers)
    root.handlers = before
    err = capsys.readouterr().err
    assert isinstance(outcome["b"], ConfigError)
    assert "credential plugin failed" in str(outcome["b"]) and "s3cr3t" not in str(outcome["b"])
    assert not isinstance(outcome["a"], ConfigError)
    assert not [line for line in kept.lines if "s3cr3t" in line] and "s3cr3t" not in err
    assert after == [kept]
    assert "a later line of a's thread" in kept.lines


@pytest.mark.parametrize(
    ("proxy_url", "refused"),
    [("socks5://127.0.0.5:1080", "socks5://"), ("http://user:pr0xy-pw@127.0.0.5:3128", None)],
)
def test_a_proxy_is_used_as_given_or_refused_never_gone_around(
    tmp_path: Path, proxy_url: str, refused: str | None
) -> None:
    """A proxy gcjob cannot use (SOCKS) refuses the request: never straight to the server,
    which the proxy may be there to prevent. A proxy's userinfo is its Proxy-Authorization,
    and its password is a secret of the run's."""
    path = kubeconfig(tmp_path / "proxied.yaml", {"hub": "https://hub.example"})
    config = yaml.safe_load(path.read_text())
    config["clusters"][0]["cluster"]["proxy-url"] = proxy_url
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    client = hub_client(str(path), None)
    routes = routes_of(client)
    if refused is not None:
        with pytest.raises(ProxyRefused, match=refused):
            routes.manager("https://hub.example", True)
        return
    manager = routes.manager("https://hub.example", True)
    assert isinstance(manager, urllib3.ProxyManager)
    assert manager.proxy is not None and manager.proxy.auth is None
    expected = urllib3.make_headers(proxy_basic_auth="user:pr0xy-pw")
    assert manager.proxy_headers == expected
    assert redact("proxy said pr0xy-pw") == "proxy said ***"
