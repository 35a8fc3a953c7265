"""Fixtures for end-to-end runs of the real CLI over real HTTP.

By default each session starts two loopback API servers (tests/fakekube): a hub serving
the Karmada, compute and Gateway API CRDs, and an upstream serving Gateway API. With
GCJOB_E2E_HUB_KUBECONFIG (and GCJOB_E2E_UPSTREAM_KUBECONFIG for routes) the same tests
run against real clusters instead; see the README.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from gcjob.cli import cli
from tests.e2e.cluster import TestCluster
from tests.fakekube import FakeKube
from tests.fakekube.resources import crds_dir

UPSTREAM_CLUSTER = "e2e-upstream"  # the context name gcjob resolves route labels to
SCHEMA = json.loads((Path(__file__).parents[2] / "gcjob/report/schema.json").read_text())
HUB_CRDS = (
    "karmada-work.karmada.io_resourcebindings.yaml",
    "datum-compute.datumapis.com_workloaddeployments.yaml",
    "gwapi-v1.6.1-gateway.networking.k8s.io_httproutes.yaml",
    "gwapi-v1.6.1-gateway.networking.k8s.io_gateways.yaml",
)
UPSTREAM_CRDS = (
    "gwapi-v1.6.1-gateway.networking.k8s.io_gateways.yaml",
    "gwapi-v1.6.1-gateway.networking.k8s.io_httproutes.yaml",
)


@pytest.fixture(scope="session")
def hub_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeKube | None]:
    if os.environ.get("GCJOB_E2E_HUB_KUBECONFIG"):
        yield None
        return
    with FakeKube(crd_paths=[crds_dir() / name for name in HUB_CRDS]) as kube:
        yield kube


@pytest.fixture(scope="session")
def upstream_server() -> Iterator[FakeKube | None]:
    if os.environ.get("GCJOB_E2E_UPSTREAM_KUBECONFIG"):
        yield None
        return
    with FakeKube(crd_paths=[crds_dir() / name for name in UPSTREAM_CRDS]) as kube:
        yield kube


@pytest.fixture(scope="session")
def hub_kubeconfig(hub_server: FakeKube | None, tmp_path_factory: pytest.TempPathFactory) -> str:
    if hub_server is None:
        return os.environ["GCJOB_E2E_HUB_KUBECONFIG"]
    return hub_server.write_kubeconfig(str(tmp_path_factory.mktemp("hub") / "kubeconfig"), "hub")


@pytest.fixture(scope="session")
def upstream_kubeconfig(
    upstream_server: FakeKube | None, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """A kubeconfig whose context is named UPSTREAM_CLUSTER: a real one is copied with its
    current context renamed, so route labels can name it."""
    path = tmp_path_factory.mktemp("upstream") / "kubeconfig"
    if upstream_server is not None:
        return upstream_server.write_kubeconfig(str(path), UPSTREAM_CLUSTER)
    origin = Path(os.environ["GCJOB_E2E_UPSTREAM_KUBECONFIG"])
    source = yaml.safe_load(origin.read_text())
    absolute_file_paths(source, origin.resolve().parent)
    current = os.environ.get("GCJOB_E2E_UPSTREAM_CONTEXT") or source["current-context"]
    context = next(c for c in source["contexts"] if c["name"] == current)
    context["name"] = UPSTREAM_CLUSTER
    source["contexts"] = [context]
    source["current-context"] = UPSTREAM_CLUSTER
    path.write_text(yaml.safe_dump(source))
    return str(path)


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


@pytest.fixture
def hub(hub_server: FakeKube | None, hub_kubeconfig: str) -> Iterator[TestCluster]:
    context = None if hub_server else os.environ.get("GCJOB_E2E_HUB_CONTEXT")
    cluster = TestCluster(hub_kubeconfig, context, real=hub_server is None)
    yield cluster
    cluster.cleanup()


@pytest.fixture
def upstream(upstream_server: FakeKube | None, upstream_kubeconfig: str) -> Iterator[TestCluster]:
    cluster = TestCluster(upstream_kubeconfig, UPSTREAM_CLUSTER, real=upstream_server is None)
    yield cluster
    cluster.cleanup()


@dataclass
class Result:
    exit_code: int
    records: list[dict[str, Any]]
    stdout: str
    stderr: str

    @property
    def items(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["record"] == "item"]

    @property
    def summary(self) -> dict[str, Any]:
        summaries = [r for r in self.records if r["record"] == "summary"]
        assert len(summaries) == 1, self.stdout
        assert self.records[-1] is summaries[0], "the summary comes last"
        return summaries[0]

    def item(self, kind: str, name: str) -> dict[str, Any] | None:
        found = [r for r in self.items if r["kind"] == kind and r["name"] == name]
        assert len(found) <= 1, f"{kind} {name} reported {len(found)} times"
        return found[0] if found else None

    def outcome(self, kind: str, name: str) -> tuple[str, str] | None:
        found = self.item(kind, name)
        return None if found is None else (found["action"], found["reason"])


def run_gcjob(*args: str, env: dict[str, str] | None = None) -> Result:
    """The real CLI, in-process; every stdout line must be a schema-valid JSON record."""
    runner = CliRunner()
    result = runner.invoke(cli, ["sweep", *args], env=env, standalone_mode=False)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    records = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    for record in records:
        jsonschema.validate(record, SCHEMA)
    return Result(int(result.return_value), records, result.stdout, result.stderr)


@pytest.fixture
def gcjob_hub_args(hub_kubeconfig: str, hub: TestCluster) -> list[str]:
    args = ["--hub-kubeconfig", hub_kubeconfig, "--no-lock", "--min-age", "0s"]
    if hub.context:
        args += ["--hub-context", hub.context]
    return args
