"""End to end: proxies and the run's credentials (issue 46, finding 6).

A real HTTP proxy (testbed/forwardproxy.py: CONNECT tunnels, absolute-form forwarding, a log
of every request it was sent) stands where HTTPS_PROXY and HTTP_PROXY point. The hub and the
upstream are the real servers behind their fault proxies; the upstream is also served over
plain http:// on loopback (the templated clusters, as the docs allow) and at a name only the
proxy resolves (`upstream.gcjob.test`), which gcjob reaches through the proxy's CONNECT tunnel
or not at all.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.cluster import TestCluster
from testbed.endpoints import Endpoint
from testbed.faultproxy import Fault, FaultProxy
from testbed.forwardproxy import ForwardProxy
from testbed.objects import route, upstream_route
from testbed.report import run_gcjob, upstreams

# The client's proxy settings and credentials: once, on 1.36 (docs/testing.md).
pytestmark = pytest.mark.version_independent

NAME_ONLY_THE_PROXY_KNOWS = "upstream.gcjob.test"


@pytest.fixture
def plain_upstream(upstream_endpoint: Endpoint, tmp_path: Path) -> Iterator[FaultProxy]:
    """The upstream server over http:// on loopback, each templated cluster at /clusters/<name>."""
    proxy = FaultProxy(
        upstream_endpoint.proxy.target, strip_prefix=r"^/clusters/[^/]+", tls=False
    ).start(tmp_path)
    yield proxy
    proxy.stop()


@pytest.fixture
def named_upstream(upstream_endpoint: Endpoint, tmp_path: Path) -> Iterator[FaultProxy]:
    """The upstream server over https://, its certificate for a name only the proxy knows."""
    proxy = FaultProxy(upstream_endpoint.proxy.target, names=(NAME_ONLY_THE_PROXY_KNOWS,)).start(
        tmp_path
    )
    yield proxy
    proxy.stop()


@pytest.fixture
def forward_proxy() -> Iterator[ForwardProxy]:
    proxy = ForwardProxy(hosts={NAME_ONLY_THE_PROXY_KNOWS: "127.0.0.1"})
    yield proxy
    proxy.stop()


def upstream_kubeconfig_with(
    source: str, path: Path, clusters: dict[str, dict[str, Any]], token: str | None = None
) -> str:
    """`source`'s current credentials (or `token`) in a new file whose contexts are `clusters`
    (name -> the kubeconfig cluster entry), the first of them current."""
    config = yaml.safe_load(Path(source).read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    user = next(u for u in config["users"] if u["name"] == context["context"]["user"])
    if token is not None:
        user = {"name": user["name"], "user": {"token": token}}
    written = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": entry} for name, entry in clusters.items()],
        "users": [user],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": user["name"]}} for name in clusters
        ],
        "current-context": next(iter(clusters)),
    }
    path.write_text(yaml.safe_dump(written))
    return str(path)


def status(code: int, message: str) -> dict[str, Any]:
    """A Kubernetes Status answer saying `message`."""
    reason = {401: "Unauthorized", 403: "Forbidden"}[code]
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def proxy_env(proxy: ForwardProxy, hub_endpoint: Endpoint) -> dict[str, str]:
    """Both proxies set, the hub in NO_PROXY: the operator's setup of issue 46."""
    return {
        "HTTPS_PROXY": proxy.url,
        "HTTP_PROXY": proxy.url,
        "NO_PROXY": f"127.0.0.1:{hub_endpoint.proxy.port}",
    }


def test_a_token_never_reaches_a_proxy_in_cleartext(
    hub: TestCluster,
    upstream: TestCluster,
    hub_endpoint: Endpoint,
    upstream_endpoint: Endpoint,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
    plain_upstream: FaultProxy,
    named_upstream: FaultProxy,
    forward_proxy: ForwardProxy,
    tmp_path: Path,
) -> None:
    """HTTPS_PROXY set, the hub in NO_PROXY, an http:// loopback upstream template: every
    templated cluster's request went to the proxy as `GET http://...` with the bearer token
    (the client chose HTTPS_PROXY once, for the kubeconfig's https:// host). Chosen per URL,
    as Go does: loopback straight, the hub straight (NO_PROXY), an https:// server elsewhere
    through the proxy's CONNECT tunnel. The proxy never sees an Authorization header."""
    project = upstream.project("gw-live")
    upstream.create(upstream_route(project, "templated-live", ("gw-live",)))
    ns = hub.namespace()
    for name, cluster, parent in (
        ("templated-orphan", "proj-a", "gw-gone"),
        ("templated-live", "proj-a", "gw-live"),
        ("tunnelled-orphan", "via-proxy", "gw-gone"),
    ):
        hub.create(
            route(
                ns,
                name,
                cluster_label=f"cluster-{cluster}",
                upstream_namespace=project,
                parents=[{"name": parent}],
            )
        )
    kubeconfig = upstream_kubeconfig_with(
        upstream_kubeconfig,
        tmp_path / "upstreams",
        {
            # The current context: the template's credentials, its host an https:// one the
            # environment's HTTPS_PROXY applies to (Python's rules chose the proxy from it).
            "templated": {
                "server": upstream_endpoint.proxy.url,
                "certificate-authority": str(upstream_endpoint.proxy.ca_file),
            },
            "via-proxy": {
                "server": f"https://{NAME_ONLY_THE_PROXY_KNOWS}:{named_upstream.port}",
                "certificate-authority": str(named_upstream.ca_file),
            },
        },
    )
    plain_upstream.clear_requests()

    result = run_gcjob(
        *gcjob_hub_args,
        *("--upstream-kubeconfig", kubeconfig),
        *("--upstream-server-template", plain_upstream.url + "/clusters/{cluster}"),
        *("--sweep", "routes", "--namespace", ns, "--delete"),
        env=proxy_env(forward_proxy, hub_endpoint),
    )

    seen = forward_proxy.requests
    assert [r for r in seen if "authorization" in r.headers] == []
    # Only tunnels, only to the name only the proxy knows: nothing in cleartext, the hub and
    # the loopback upstream not at all.
    assert {(r.method, r.target) for r in seen} == {
        ("CONNECT", f"{NAME_ONLY_THE_PROXY_KNOWS}:{named_upstream.port}")
    }
    # The templated cluster was asked straight, on loopback, token and all, and answered.
    assert any(r.path.startswith("/clusters/proj-a/") for r in plain_upstream.requests)
    assert all("authorization" in r.headers for r in plain_upstream.requests)
    clusters = upstreams(result)
    assert clusters["proj-a"]["status"] == "ok"
    assert clusters["via-proxy"]["status"] == "ok"
    assert hub.gone("HTTPRoute", ns, "templated-orphan")
    assert hub.gone("HTTPRoute", ns, "tunnelled-orphan")
    assert hub.present("HTTPRoute", ns, "templated-live")
    assert result.exit_code == 0, result.stderr


def test_a_proxy_for_an_http_server_with_a_token_is_refused_not_sent(
    hub: TestCluster,
    upstream: TestCluster,
    hub_endpoint: Endpoint,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
    plain_upstream: FaultProxy,
    forward_proxy: ForwardProxy,
    tmp_path: Path,
) -> None:
    """A kubeconfig context whose `proxy-url` would carry an http:// server's requests: the
    proxy reads every byte of them, token included. Not sent: that cluster is unavailable,
    saying why in one line, its route kept; the proxy hears nothing."""
    project = upstream.project()
    ns = hub.namespace()
    hub.create(
        route(
            ns,
            "behind-a-proxy",
            cluster_label="cluster-plain-proxied",
            upstream_namespace=project,
            parents=[{"name": "gw-gone"}],
        )
    )
    kubeconfig = upstream_kubeconfig_with(
        upstream_kubeconfig,
        tmp_path / "upstreams",
        {"plain-proxied": {"server": plain_upstream.url, "proxy-url": forward_proxy.url}},
    )
    plain_upstream.clear_requests()

    result = run_gcjob(
        *gcjob_hub_args,
        *("--upstream-kubeconfig", kubeconfig),
        *("--sweep", "routes", "--namespace", ns, "--delete"),
        env=proxy_env(forward_proxy, hub_endpoint),
    )

    assert forward_proxy.requests == []
    assert plain_upstream.requests == []
    cluster = upstreams(result)["plain-proxied"]
    assert cluster["status"] == "unavailable"
    assert "cleartext" in cluster["detail"]
    assert f"127.0.0.1:{forward_proxy.port}" in cluster["detail"]
    assert result.outcome("HTTPRoute", "behind-a-proxy") == ("skipped", "upstream-unavailable")
    assert hub.present("HTTPRoute", ns, "behind-a-proxy")
    assert result.exit_code == 1


def test_a_server_echoing_the_bare_token_never_puts_it_in_the_report_or_logs(
    hub: TestCluster,
    upstream: TestCluster,
    faults: FaultProxy,
    gcjob_hub_args: list[str],
    hub_kubeconfig: str,
    upstream_kubeconfig: str,
    upstream_faults: FaultProxy,
    tmp_path: Path,
) -> None:
    """An upstream that answers every request 403 quoting the bare token ("token X may not
    ..."), and a hub that answers 401 quoting its own: the patterns (`Bearer X`) miss a bare
    token; the run's credentials are redacted by value, in the report lines, the report
    file, the upstream records and stderr."""
    project = upstream.project()  # before the upstream answers 403 to everything
    token = f"echoed-{uuid.uuid4().hex}"
    said = f"token {token} may not list gateways here"
    upstream_faults.add_fault(Fault(status=403, body=status(403, said), times=None))
    ns = hub.namespace()
    hub.create(
        route(
            ns,
            "asked-upstream",
            cluster_label="cluster-echoing",
            upstream_namespace=project,
            parents=[{"name": "gw-gone"}],
        )
    )
    kubeconfig = upstream_kubeconfig_with(
        upstream_kubeconfig,
        tmp_path / "upstreams",
        {
            "echoing": {
                "server": upstream_faults.url,
                "certificate-authority": str(upstream_faults.ca_file),
            }
        },
        token=token,
    )
    report = tmp_path / "report.json"

    result = run_gcjob(
        *gcjob_hub_args,
        *("--upstream-kubeconfig", kubeconfig, "--sweep", "routes", "--namespace", ns),
        *("--report-file", str(report), "--log-format", "json"),
    )

    written = report.read_text()
    assert "may not list gateways here" in upstreams(result)["echoing"]["detail"]  # it said it
    for output in (result.stdout, result.stderr, written):
        assert token not in output
    assert "token *** may not list gateways here" in result.stdout
    assert result.outcome("HTTPRoute", "asked-upstream") == ("skipped", "upstream-unavailable")

    # The hub's own token, echoed in its refusal: exit 2 on stderr, without it.
    hub_token = yaml.safe_load(Path(hub_kubeconfig).read_text())["users"][0]["user"]["token"]
    faults.add_fault(Fault(status=401, body=status(401, f"token {hub_token} has expired")))
    refused = run_gcjob(*gcjob_hub_args, "--namespace", ns)

    assert refused.exit_code == 2
    assert "has expired" in refused.stderr
    assert hub_token not in refused.stderr + refused.stdout
