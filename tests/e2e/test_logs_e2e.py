"""End to end: the operational log of a real run on the real hub (issue 7 item 5).

gcjob runs as a child process here, as a CronJob runs it: in-process, pytest would catch
urllib3's warnings before they reach stderr.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testbed.cluster import TestCluster
from testbed.endpoints import kubeconfig_copy
from testbed.objects import companion

# gcjob's own log line, not the server's: once, on 1.36 (docs/testing.md).
pytestmark = pytest.mark.version_independent

RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def insecure(cluster: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in cluster.items() if not k.startswith("certificate-authority")}
    return kept | {"insecure-skip-tls-verify": True}


def test_an_insecure_kubeconfig_is_warned_about_once_in_gcjobs_own_log_line(
    hub: TestCluster, hub_kubeconfig: str, tmp_path: Path
) -> None:
    ns = hub.namespace()
    for i in range(3):
        hub.create(companion("ConfigMap", ns, f"cm-{i}", [f"{ns}/gone-{i}"]))
    config = kubeconfig_copy(hub_kubeconfig, tmp_path / "kc", cluster=insecure)
    args = ["--hub-kubeconfig", config, "--no-lock", "--min-age", "0s", "--namespace", ns]
    done = subprocess.run(
        [sys.executable, "-m", "gcjob", "sweep", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["api_requests"]["total"] >= 3  # several requests, one warning

    stderr = done.stderr.splitlines()
    tls_lines = [line for line in stderr if re.search("TLS|InsecureRequest|Unverified", line)]
    assert len(tls_lines) == 1, done.stderr
    warning = json.loads(tls_lines[0])
    assert warning["level"] == "WARNING"
    assert "TLS verification is off for the hub" in warning["message"]
    # every log line joins the report by run_id and carries an RFC 3339 UTC time
    for line in stderr:
        logged = json.loads(line)
        assert logged["run_id"] == summary["run_id"], line
        assert RFC3339_UTC.fullmatch(logged["time"]), line
