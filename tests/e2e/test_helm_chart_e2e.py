"""charts/gcjob on a real API server: every combination docs/install.md ("With Helm")
documents (tests/test_helm_chart.py holds each equal to its kustomize twin) passes a
server-side dry-run apply on the test hub, the PrometheusRule against prometheus-operator's
own CRD (taken from its release by testbed/helm/build.json)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator

import pytest
import yaml

from testbed import builds
from testbed.cluster import TestCluster, wait_for
from testbed.endpoints import Endpoint
from tests.test_helm_chart import COMBINATIONS, Combination, chart_render

CRD = "prometheusrules.monitoring.coreos.com"


def kubectl(
    cluster: TestCluster | Endpoint, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    found = shutil.which("kubectl")
    assert found, "kubectl applies the chart's render"
    command = [found, "--kubeconfig", cluster.kubeconfig]
    command += ["--context", cluster.context] if cluster.context else []
    return subprocess.run(
        [*command, *args], input=stdin, capture_output=True, text=True, check=False, timeout=120
    )


@pytest.fixture(scope="module")
def prometheus_crd(hub_endpoint: Endpoint) -> Iterator[None]:
    """prometheus-operator's CRD, on the session's hub for this module's tests, then gone."""
    hub = hub_endpoint
    folder = builds.built(builds.HELM)
    assert folder is not None, "run `python3 tools/build_test_servers.py` first"
    crd = (folder / "prometheusrules-crd.yaml").read_text()
    done = kubectl(hub, "apply", "--server-side", "-f", "-", stdin=crd)
    assert done.returncode == 0, done.stderr
    served = "/apis/monitoring.coreos.com/v1/prometheusrules"
    wait_for(lambda: kubectl(hub, "get", "--raw", served).returncode == 0, 60, f"{CRD} served")
    yield
    kubectl(hub, "delete", "crd", CRD, "--wait=false")


@pytest.mark.parametrize("combination", COMBINATIONS, ids=lambda c: c.id)
def test_each_documented_combination_passes_a_server_side_dry_run(
    hub: TestCluster, prometheus_crd: None, combination: Combination
) -> None:
    namespace = hub.namespace("gcjob-helm")
    values = dict(combination.values)
    if "lockNamespace" in values:
        values["lockNamespace"] = namespace
    rendered = chart_render(values)
    kinds = [doc["kind"] for doc in yaml.safe_load_all(rendered) if doc]

    # The management cluster's objects name no namespace (`-n` places them); the RBAC's name
    # the lock namespace, `default` unless set.
    management = values.get("cluster", "management") == "management"
    into = namespace if management or "lockNamespace" in values else "default"
    done = kubectl(hub, "apply", "--dry-run=server", "-n", into, "-f", "-", stdin=rendered)

    assert done.returncode == 0, done.stderr
    assert kinds and done.stdout.count("(server dry run)") == len(kinds), done.stdout
    if combination.values.get("prometheusRule"):
        assert "prometheusrule.monitoring.coreos.com/gcjob created (server dry run)" in done.stdout
    listed = kubectl(hub, "get", "cronjobs,jobs,serviceaccounts", "-n", namespace, "-o", "name")
    assert listed.returncode == 0 and "gcjob" not in listed.stdout  # nothing was created
