"""End to end: bad and hostile input against the real hub (issue 12 A, F, 10).

Each test writes its own copy of the hub kubeconfig when it needs other credentials.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gcjob.cli import main
from testbed.cluster import TestCluster
from testbed.endpoints import UPSTREAM_CLUSTER, kubeconfig_copy
from testbed.faultproxy import Fault, FaultProxy
from testbed.objects import binding, companion, route
from testbed.report import HubSweep, Result, run_gcjob
from testbed.servers import ADMIN_TOKEN


def assert_config_error(result: Result, *secrets: str) -> str:
    """Exit 2, one line on stderr, the summary on stdout, and no secret anywhere."""
    assert result.exit_code == 2, (result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("gcjob: error:")]
    assert len(errors) == 1, result.stderr
    assert "ERROR:root" not in result.stderr and "Traceback" not in result.stderr
    summary = result.summary
    assert summary["exit_code"] == 2
    assert "\n" not in summary["exit_reason"]
    for secret in secrets:
        assert secret not in result.stdout and secret not in result.stderr
    return errors[0]


def test_a_wrong_token_is_a_configuration_error(
    hub: TestCluster, hub_kubeconfig: str, tmp_path: Path
) -> None:
    ns = hub.namespace()
    config = kubeconfig_copy(hub_kubeconfig, tmp_path / "kc", user={"token": "wrong-s3cr3t"})
    result = run_gcjob(
        "--hub-kubeconfig", config, "--namespace", ns, "--min-age", "0s", "--grace", "0s"
    )
    line = assert_config_error(result, "wrong-s3cr3t")
    assert "refuses the credentials" in line


def test_a_token_ending_in_a_newline_works_and_is_never_printed(
    hub: TestCluster, hub_kubeconfig: str, tmp_path: Path
) -> None:
    ns = hub.namespace()
    token_file = tmp_path / "token"

    def with_token_file(user: dict[str, Any]) -> dict[str, Any]:
        token_file.write_text(str(user.get("token") or ADMIN_TOKEN) + "\n", encoding="utf-8")
        return {k: v for k, v in user.items() if k != "token"} | {"tokenFile": str(token_file)}

    config = kubeconfig_copy(hub_kubeconfig, tmp_path / "kc", user=with_token_file)
    result = run_gcjob(
        "--hub-kubeconfig", config, "--namespace", ns, "--min-age", "0s", "--grace", "0s"
    )
    assert result.exit_code == 0, (result.stdout, result.stderr)
    token = token_file.read_text(encoding="utf-8").strip()
    assert token not in result.stdout and token not in result.stderr


def test_an_unverifiable_hub_is_a_configuration_error(
    hub: TestCluster, hub_kubeconfig: str, tmp_path: Path
) -> None:
    ns = hub.namespace()

    def untrusted(cluster: dict[str, Any]) -> dict[str, Any]:
        # no CA: the test server's certificate is not in the system trust store
        return {k: v for k, v in cluster.items() if not k.startswith("certificate-authority")}

    config = kubeconfig_copy(hub_kubeconfig, tmp_path / "kc", cluster=untrusted)
    result = run_gcjob("--hub-kubeconfig", config, "--namespace", ns, "--timeout", "30s")
    line = assert_config_error(result)
    assert "cannot be verified (TLS)" in line


def test_userinfo_in_the_server_url_is_never_printed(
    hub: TestCluster, hub_kubeconfig: str, tmp_path: Path
) -> None:
    ns = hub.namespace()

    def with_userinfo(cluster: dict[str, Any]) -> dict[str, Any]:
        server = str(cluster["server"]).replace("https://", "https://admin:hunter2@", 1)
        return cluster | {"server": server}

    config = kubeconfig_copy(hub_kubeconfig, tmp_path / "kc", cluster=with_userinfo)
    result = run_gcjob("--hub-kubeconfig", config, "--namespace", ns, "--timeout", "30s")
    assert "hunter2" not in result.stdout and "hunter2" not in result.stderr
    assert result.summary["hub"].startswith("https://***@")


def test_an_html_login_page_is_a_configuration_error(
    hub: TestCluster, faults: FaultProxy, sweep: HubSweep
) -> None:
    ns = hub.namespace()
    page = "<html><body><form>Sign in: password</form></body></html>"
    faults.add_fault(Fault(path=r"^/apis/work\.karmada\.io/v1alpha2$", status=200, body=page))
    result = sweep(ns)
    line = assert_config_error(result, "Sign in")
    assert "does not answer as a Kubernetes API server" in line


def test_a_binding_is_never_deleted_by_its_name_alone(hub: TestCluster, sweep: HubSweep) -> None:
    """issue 12 F: `foo-secret` binds Deployment `important`; no Secret `foo` exists."""
    ns = hub.namespace()
    hub.create(binding(ns, "foo-secret", kind="Deployment", target="important"))
    hub.create(binding(ns, "bar-secret", kind="Secret", target="bar"))  # a true orphan
    result = sweep(ns, "--sweep", "bindings", "--delete")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.outcome("ResourceBinding", "foo-secret") == ("skipped", "resource-mismatch")
    assert result.outcome("ResourceBinding", "bar-secret") == ("deleted", "orphaned")
    assert hub.present("ResourceBinding", ns, "foo-secret")
    assert hub.gone("ResourceBinding", ns, "bar-secret")


def test_an_upstream_kubeconfig_with_a_context_named_twice_is_refused(
    hub: TestCluster,
    upstream: TestCluster,
    hub_kubeconfig: str,
    upstream_kubeconfig: str,
    gcjob_hub_args: list[str],
    tmp_path: Path,
) -> None:
    """Issue 20 item 1: the first of two contexts named after the upstream cluster points at
    another API server (the hub: it serves Gateways, not this one). The client would take it
    and find the Gateway "gone"; gcjob refuses the file, and the live route stays."""
    project = upstream.project("gw-live")
    ns = hub.namespace()
    hub.create(
        route(
            ns,
            "live",
            cluster_label=f"cluster-{UPSTREAM_CLUSTER}",
            upstream_namespace=project,
            parents=[{"name": "gw-live"}],
        )
    )
    real = yaml.safe_load(Path(upstream_kubeconfig).read_text(encoding="utf-8"))
    other = yaml.safe_load(Path(hub_kubeconfig).read_text(encoding="utf-8"))
    twice = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [*other["clusters"], *real["clusters"]],
        "users": [*other["users"], *real["users"]],
        "contexts": [
            {**other["contexts"][0], "name": UPSTREAM_CLUSTER},  # first: the wrong server
            *[c for c in real["contexts"] if c["name"] == UPSTREAM_CLUSTER],
        ],
        "current-context": UPSTREAM_CLUSTER,
    }
    for listed in ("clusters", "users"):  # only the context name is doubled
        assert len({e["name"] for e in twice[listed]}) == len(twice[listed])
    path = tmp_path / "upstreams.yaml"
    path.write_text(yaml.safe_dump(twice), encoding="utf-8")

    result = run_gcjob(
        *gcjob_hub_args,
        "--upstream-kubeconfig",
        str(path),
        "--sweep",
        "routes",
        "--namespace",
        ns,
        "--delete",
    )

    # Refused before anything is read: exit 2, one line, nothing reported or deleted.
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert str(path) in result.stderr
    assert f"duplicate context name {UPSTREAM_CLUSTER!r}" in result.stderr
    assert result.records == []
    assert hub.present("HTTPRoute", ns, "live")


def test_a_namespace_missing_on_the_hub_is_warned_about_and_a_contradiction_refused(
    hub: TestCluster,
    gcjob_hub_args: list[str],
    faults: FaultProxy,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 20 item 17, via the CLI on the real hub: a typo'd --namespace used to sweep
    nothing and say nothing; the same namespace included and excluded likewise."""
    ns = hub.namespace()
    hub.create(companion("ConfigMap", ns, "orphan", ["default/gone"]))
    missing = f"{ns}-typo"

    result = run_gcjob(
        *gcjob_hub_args, "--sweep", "companions", "--namespace", ns, "--namespace", missing
    )

    assert result.exit_code == 0, result.stderr
    assert result.summary["namespaces"]["not_found"] == [missing]
    assert f"--namespace {missing}: no such namespace on the hub" in result.stderr
    assert result.outcome("ConfigMap", "orphan") is not None  # the real one was swept

    # the check failing is a warning too, never a failure of the run
    faults.add_fault(
        Fault(method="GET", path=rf"^/api/v1/namespaces/{missing}$", status=500, times=None)
    )
    failed = run_gcjob(
        *gcjob_hub_args, "--sweep", "companions", "--namespace", ns, "--namespace", missing
    )
    assert failed.exit_code == 0, failed.stderr
    assert failed.summary["namespaces"]["unchecked"] == [missing]
    assert "not_found" not in failed.summary["namespaces"]
    assert f"--namespace {missing}: could not check that it exists" in failed.stderr

    # the entry point, as the CronJob runs it: exit 2, one line, nothing read or deleted
    with pytest.raises(SystemExit) as refused:
        main(["sweep", *gcjob_hub_args, "--delete", "--namespace", ns, "--exclude-namespace", ns])
    assert refused.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{ns} is both included and excluded" in err[0]
    assert hub.present("ConfigMap", ns, "orphan")  # the runs above were dry runs
