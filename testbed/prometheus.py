"""A real Pushgateway and Prometheus for the metrics and alert tests (fixtures, registered by
tests/conftest.py), started the way testbed/servers.py starts the API server: found on the
machine, each on a free loopback port in its own temporary directory, dying with the test
process.

Binaries: `$GCJOB_PROMETHEUS_BIN` (a folder holding `prometheus`, `promtool` and
`prometheus-pushgateway` or `pushgateway`), else the PATH: Debian's packages `prometheus` and
`prometheus-pushgateway` put them in /usr/bin.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from testbed.cluster import wait_for
from testbed.servers import die_with_parent, free_port

READY_TIMEOUT = 30.0
INSTALL_HINT = (
    "bash tools/install-test-packages (apt-get install prometheus prometheus-pushgateway)"
)
RULES = Path(__file__).resolve().parents[1] / "cronjobs" / "monitoring" / "gcjob-alerts.yaml"

Sample = tuple[str, tuple[tuple[str, str], ...]]  # a metric name and its sorted labels


class PrometheusMissing(Exception):
    """No Prometheus binary to run: said in one line, with how to get it."""


def binary(*names: str) -> str:
    """The first of `names` found in $GCJOB_PROMETHEUS_BIN, else on the PATH."""
    folder = os.environ.get("GCJOB_PROMETHEUS_BIN")
    for name in names:
        found = shutil.which(name, path=folder) if folder else shutil.which(name)
        if found:
            return found
    raise PrometheusMissing(
        f"no {names[0]} found for the metrics tests: `{INSTALL_HINT}` (Debian), or set "
        "GCJOB_PROMETHEUS_BIN to a folder holding prometheus, promtool and pushgateway"
    )


class Server:
    """One running binary on a free loopback port, in its own temporary directory."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.workdir = Path(tempfile.mkdtemp(prefix=f"gcjob-{name}-"))
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, argv: list[str], ready_path: str) -> None:
        try:
            self._start(argv, ready_path)
        except BaseException:
            self.stop()
            raise

    def _start(self, argv: list[str], ready_path: str) -> None:
        log = open(self.workdir / "log", "wb")  # noqa: SIM115  # closed by the child's exit
        self.process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.workdir,
            preexec_fn=die_with_parent,  # single-threaded at this point
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.log_tail()}")
            with contextlib.suppress(OSError):
                self.get(ready_path)
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name}: not ready after {READY_TIMEOUT:.0f}s: {self.log_tail()}")

    def get(self, path: str) -> bytes:
        with urllib.request.urlopen(self.url + path, timeout=5) as answer:
            return bytes(answer.read())

    def send(self, method: str, path: str) -> None:
        request = urllib.request.Request(self.url + path, method=method)
        with urllib.request.urlopen(request, timeout=5):
            pass

    def log_tail(self, lines: int = 15) -> str:
        path = self.workdir / "log"
        text = path.read_text(errors="replace").splitlines() if path.exists() else []
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


class Pushgateway(Server):
    """A real Pushgateway, keeping nothing on disk: it starts empty."""

    def __init__(self) -> None:
        program = binary("prometheus-pushgateway", "pushgateway")
        super().__init__("pushgateway")
        self.start(
            [
                program,
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--persistence.file=",  # Debian's default is a file shared by every Pushgateway
                "--web.enable-admin-api",
                "--log.level=warn",
            ],
            "/-/ready",
        )

    def wipe(self) -> None:
        """Every group deleted, as a fresh Pushgateway would be. It answers 202 and deletes
        in the background (its write queue): waited for, so no group outlives it."""
        self.send("PUT", "/api/v1/admin/wipe")
        wait_for(lambda: self.groups() == [], what="the Pushgateway to wipe its groups")

    def delete(self, path: str) -> None:
        """DELETE the group at `path` (`/metrics/job/...`): answered 202 and deleted in the
        background, so waited for until the Pushgateway holds one group fewer."""
        before = len(self.groups())
        self.send("DELETE", path)
        wait_for(lambda: len(self.groups()) < before, what=f"the Pushgateway to delete {path}")

    def samples(self) -> dict[Sample, float]:
        """What it holds, as Prometheus would scrape it (its own metrics left out)."""
        text = self.get("/metrics").decode()
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name.startswith("gcjob_")
        }

    def groups(self) -> list[dict[str, str]]:
        """The grouping key of each group it holds (`/api/v1/metrics`)."""
        answer = json.loads(self.get("/api/v1/metrics"))
        return [dict(group["labels"]) for group in answer["data"]]


class Prometheus(Server):
    """A real Prometheus scraping `pushgateway` every second, the alert rules loaded and
    evaluated every second."""

    def __init__(self, pushgateway: Pushgateway, rules: Path = RULES) -> None:
        program = binary("prometheus")
        super().__init__("prometheus")
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "scrape_configs": [
                {
                    "job_name": "pushgateway",
                    "honor_labels": True,  # the pushed job and grouping labels are kept
                    "static_configs": [{"targets": [f"127.0.0.1:{pushgateway.port}"]}],
                }
            ],
        }
        (self.workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.start(
            [
                program,
                f"--config.file={self.workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            "/-/ready",
        )

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        answer = json.loads(self.get(f"/api/v1/{path}{query}"))
        assert answer["status"] == "success", answer
        return answer["data"]

    def alerts(self) -> dict[str, str]:
        """Each active alert's name and state (`pending`, `firing`)."""
        return {
            alert["labels"]["alertname"]: alert["state"] for alert in self.api("alerts")["alerts"]
        }


def found(*names: str) -> str:
    """`binary`, or the test fails in one line saying how to get it."""
    try:
        return binary(*names)
    except PrometheusMissing as missing:
        pytest.fail(str(missing), pytrace=False)


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [found("promtool"), *args], capture_output=True, text=True, timeout=60, check=False
    )


def started(kind: type[Server], *args: Any) -> Iterator[Any]:
    try:
        server = kind(*args)
    except PrometheusMissing as missing:  # said once a test, in one line
        pytest.fail(str(missing), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pushgateway_server() -> Iterator[Pushgateway]:
    yield from started(Pushgateway)


@pytest.fixture
def pushgateway(pushgateway_server: Pushgateway) -> Pushgateway:
    """The session's Pushgateway, empty."""
    pushgateway_server.wipe()
    return pushgateway_server
