"""Discovery shared across upstream clusters within one run (issue 50 item 2), on real servers:
the clusters of one surface ask with `If-None-Match` and the server's `304 Not Modified` stands
for the document kept; a cluster serving another surface gets its own answer; a 304 that
answers no ETag asked with is refused. The pure parts: tests/kube/test_discovery_etags.py."""

from __future__ import annotations

import hashlib
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gcjob.kube.discovery import verified_etag
from gcjob.kube.requests import AGGREGATED_DISCOVERY
from testbed.cluster import TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER
from testbed.faultproxy import Fault, FaultProxy, RecordedRequest, Target
from testbed.objects import route
from testbed.report import run_gcjob, upstreams
from testbed.servers import ADMIN_TOKEN, ApiServer, running

SAME = [f"same-{i}" for i in range(6)]  # contexts naming the session's upstream
OTHER = "other-surface"  # a server that serves no Gateway API


@pytest.fixture(scope="module")
def other_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ApiServer, FaultProxy]]:
    with running("other-surface", ()) as server:
        proxy = FaultProxy(Target(server.url, server.ssl_context())).start(
            tmp_path_factory.mktemp("other-proxy")
        )
        yield server, proxy
        proxy.stop()


def kubeconfig(source: str, other: FaultProxy, path: Path) -> str:
    """`source` with contexts SAME naming its upstream, and OTHER naming `other`."""
    config = yaml.safe_load(Path(source).read_text())
    base = next(c for c in config["contexts"] if c["name"] == UPSTREAM_CLUSTER)
    for name in SAME:
        config["contexts"].append({"name": name, "context": dict(base["context"])})
    config["clusters"].append(
        {
            "name": OTHER,
            "cluster": {"server": other.url, "certificate-authority": str(other.ca_file)},
        }
    )
    config["users"].append({"name": OTHER, "user": {"token": ADMIN_TOKEN}})
    config["contexts"].append({"name": OTHER, "context": {"cluster": OTHER, "user": OTHER}})
    path.write_text(yaml.safe_dump(config))
    return str(path)


def discovery_asked(proxy: FaultProxy) -> list[RecordedRequest]:
    return [r for r in proxy.requests if r.path == "/apis"]


def orphan_routes(hub: TestCluster, upstream: TestCluster) -> str:
    ns = hub.namespace()
    for context in (*SAME, OTHER):
        project = upstream.project() if context != OTHER else "nowhere"
        hub.create(
            route(
                ns,
                context,
                cluster_label=f"cluster-{context}",
                upstream_namespace=project,
                parents=[{"name": "gw-gone"}],
            )
        )
    return ns


def test_real_servers_etag_is_verified_and_answers_304(
    other_server: tuple[ApiServer, FaultProxy], upstream_faults: FaultProxy
) -> None:
    """kube-apiserver's ETag on the aggregated `/apis` gcjob asks for (its Accept) is the
    SHA-512 verified_etag checks, and `If-None-Match` with it is answered 304 with no body."""
    server, _ = other_server
    asked = urllib.request.Request(
        server.url + "/apis",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Accept": AGGREGATED_DISCOVERY},
    )
    with urllib.request.urlopen(asked, context=server.ssl_context()) as answer:
        body, etag = answer.read(), answer.headers.get("ETag")
    assert etag is not None and verified_etag(etag, body) == etag
    assert etag != '"' + hashlib.sha512(body).hexdigest().upper() + '"'  # not of the body as sent
    asked.add_header("If-None-Match", etag)
    with pytest.raises(urllib.error.HTTPError) as not_modified:
        urllib.request.urlopen(asked, context=server.ssl_context())
    assert not_modified.value.code == 304
    assert not_modified.value.read() == b""
    assert not_modified.value.headers.get("ETag") == etag


def test_one_surface_shares_its_document_and_another_gets_its_own(
    hub: TestCluster,
    upstream: TestCluster,
    upstream_faults: FaultProxy,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
    other_server: tuple[ApiServer, FaultProxy],
    tmp_path: Path,
) -> None:
    _, other = other_server
    other.clear_requests()
    ns = orphan_routes(hub, upstream)
    config = kubeconfig(upstream_kubeconfig, other, tmp_path / "upstreams.yaml")

    result = run_gcjob(
        *gcjob_hub_args, "--upstream-kubeconfig", config, "--sweep", "routes", "--namespace", ns
    )

    # Judged on each cluster's own surface: the Gateways gone where they are served; the
    # cluster serving no Gateway API not read as if it served its neighbours'.
    for context in SAME:
        assert result.outcome("HTTPRoute", context) == ("would-delete", "upstream-gateways-gone")
    assert result.outcome("HTTPRoute", OTHER) == ("skipped", "upstream-unavailable")
    assert upstreams(result)[OTHER]["status"] == "unavailable"
    same = discovery_asked(upstream_faults)
    assert len(same) == len(SAME)
    whole = [r for r in same if r.status == 200]
    not_modified = [r for r in same if r.status == 304]
    # Two clusters send it before it is named to a third; at most one more before that.
    assert len(whole) <= 3, [(r.status, r.headers.get("if-none-match")) for r in same]
    assert len(not_modified) == len(SAME) - len(whole)
    etag = next(r.headers.get("if-none-match") for r in not_modified)
    assert all(r.response_body == b"" for r in not_modified)
    assert verified_etag(etag, whole[0].response_body) == etag
    # The other surface's server, if asked with that ETag, answered its own document.
    (theirs,) = discovery_asked(other)
    assert theirs.status == 200 and b"gateway.networking.k8s.io" not in theirs.response_body
    assert result.exit_code == 1, result.stderr  # one cluster unavailable


def test_a_304_to_no_etag_asked_with_is_refused(
    hub: TestCluster,
    upstream: TestCluster,
    upstream_faults: FaultProxy,
    gcjob_hub_args: list[str],
    upstream_kubeconfig: str,
    other_server: tuple[ApiServer, FaultProxy],
    tmp_path: Path,
) -> None:
    """A hostile cluster answering 304 with an ETag it was not asked with (here the real
    surface's, made weak: whatever it was offered, not that) gets no document: unavailable,
    and its neighbours are judged as ever."""
    _, other = other_server
    ns = orphan_routes(hub, upstream)
    config = kubeconfig(upstream_kubeconfig, other, tmp_path / "upstreams.yaml")
    real = urllib.request.urlopen(
        urllib.request.Request(
            upstream_faults.url + "/apis",
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Accept": AGGREGATED_DISCOVERY},
        ),
        context=ssl.create_default_context(cafile=str(upstream_faults.ca_file)),
    )
    etag = real.headers.get("ETag")
    upstream_faults.clear_requests()
    other.add_fault(
        Fault(path="^/apis$", status=304, body="", headers={"ETag": "W/" + etag}, times=None)
    )
    try:
        result = run_gcjob(
            *gcjob_hub_args,
            *("--upstream-kubeconfig", config, "--sweep", "routes", "--namespace", ns),
        )
    finally:
        other.clear_faults()

    assert result.outcome("HTTPRoute", OTHER) == ("skipped", "upstream-unavailable")
    assert upstreams(result)[OTHER]["status"] == "unavailable"
    for context in SAME:
        assert result.outcome("HTTPRoute", context) == ("would-delete", "upstream-gateways-gone")
