"""Start-up: the commands that only print (`--version`, `--help`, a bare `gcjob`) import only
what they print from. The kubernetes client package, the run's modules and everything they
bring cost most of a second (issue 24): they are imported by the commands that run, not by
importing gcjob.cli. Asserted on what is imported, in a fresh interpreter, never on time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"

# Run as `gcjob ARGS` would be (the console script calls gcjob.cli:main), then list the
# modules the interpreter loaded, whatever exit code main() ended with.
PROBE = """
import json, sys
sys.argv = ["gcjob", *json.loads(sys.argv[1])]
from gcjob.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""

# Packages only a run needs: the Kubernetes client and its HTTP, YAML and schema stack, and
# gcjob's own reading, judging and acting.
NOT_AT_START_UP = (
    "kubernetes",
    "urllib3",
    "requests",
    "yaml",
    "jsonschema",
    "gcjob.lifecycle",
    "gcjob.explain",
    "gcjob.sweeps",
    "gcjob.kube",
    "gcjob.run",
    "gcjob.report",
    "gcjob.publish",
    "gcjob.restore",
)


def loaded_by(*args: str) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    last = done.stdout.strip().splitlines()[-1]
    probe = json.loads(last)
    return probe["code"], set(probe["modules"])


def heavy(modules: set[str]) -> list[str]:
    return sorted(
        m for m in modules if any(m == p or m.startswith(p + ".") for p in NOT_AT_START_UP)
    )


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("--version",), 0),
        (("--help",), 0),
        (("sweep", "--help"), 0),
        (("explain", "--help"), 0),
        (("restore", "--help"), 0),
        ((), 2),  # bare `gcjob`: its help, exit 2 (docs/operating.md)
    ],
)
def test_printing_commands_import_no_client(args: tuple[str, ...], code: int) -> None:
    exit_code, modules = loaded_by(*args)
    assert exit_code == code
    assert "gcjob.cli" in modules  # the probe ran the real entry point
    assert heavy(modules) == []


def test_a_sweep_does_import_what_it_runs_on() -> None:
    """The other side: the probe sees a run's imports, so an empty list above means
    something (a demo sweep imports the run and its client)."""
    exit_code, modules = loaded_by("sweep", "--snapshot", str(DEMO), "--log-format", "text")
    assert exit_code == 0
    assert {"gcjob.lifecycle", "gcjob.sweeps", "kubernetes"} <= modules


# What the kubernetes package's __init__ imports and a run never uses (gcjob/kube/__init__.py).
NOT_IN_A_RUN = (
    "kubernetes.dynamic",
    "kubernetes.watch",
    "kubernetes.stream",
    "kubernetes.leaderelection",
    "kubernetes.informer",
    "kubernetes_validate",
    "jsonschema",
    "websocket",
)


def test_a_run_imports_the_client_and_the_kubeconfig_loader_not_the_rest_of_the_package() -> None:
    exit_code, modules = loaded_by(
        "sweep", "--hub-kubeconfig", "/nonexistent/kubeconfig", "--sweep", "companions"
    )
    assert exit_code == 2  # the kubeconfig is refused after the client was imported
    assert {"kubernetes.client.api_client", "kubernetes.config.kube_config"} <= modules
    assert sorted(m for m in NOT_IN_A_RUN if m in modules) == []


# `gcjob sweep` as the console script runs it, noting what was imported when each signal
# handler was set.
SIGNALS_PROBE = """
import json, signal, sys
sys.argv = ["gcjob", *json.loads(sys.argv[1])]
seen = []
real = signal.signal
def spy(signum, handler):
    seen.append([signal.Signals(signum).name, "gcjob.lifecycle" in sys.modules])
    return real(signum, handler)
signal.signal = spy
from gcjob.cli import main
try:
    main()
except SystemExit:
    pass
print("\\n" + json.dumps(seen))
"""


def test_a_sweep_stops_on_sigterm_before_it_imports_the_run() -> None:
    """A SIGTERM while the run's modules load (most of a second; more on a loaded node) must
    stop the run with its report, not kill the process before any handler is set (-15)."""
    done = subprocess.run(
        [sys.executable, "-c", SIGNALS_PROBE, json.dumps(["sweep", "--snapshot", str(DEMO)])],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert ["SIGTERM", False] in seen and ["SIGINT", False] in seen
    assert [name for name, _ in seen] == ["SIGTERM", "SIGINT"]  # set once, not again later
