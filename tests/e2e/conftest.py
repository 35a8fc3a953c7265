"""The real CLI run in-process against the real API servers of tests/servers.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from click.testing import CliRunner

from gcjob.cli import cli
from tests import schemas
from tests.e2e.cluster import TestCluster
from tests.servers import UPSTREAM_CLUSTER

__all__ = ["UPSTREAM_CLUSTER", "Result", "run_gcjob"]


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
        schemas.REPORT.validate(record)
    return Result(int(result.return_value), records, result.stdout, result.stderr)


@pytest.fixture
def gcjob_hub_args(hub_kubeconfig: str, hub: TestCluster) -> list[str]:
    return ["--hub-kubeconfig", hub_kubeconfig, "--no-lock", "--min-age", "0s", "--grace", "0s"]
