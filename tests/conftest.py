"""Session-wide fixtures: the test bed's real API servers and real Pushgateway
(testbed/fixtures.py, testbed/prometheus.py: each started only when a test asks for one), and
the report schema's validator."""

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from jsonschema import Draft202012Validator

from testbed import schemas
from testbed.fixtures import (  # noqa: F401  # imported to register them as fixtures
    faults,
    gcjob_hub_args,
    hub,
    hub_collects_garbage,
    hub_controllers,
    hub_endpoint,
    hub_kubeconfig,
    routes_args,
    sweep,
    upstream,
    upstream_endpoint,
    upstream_faults,
    upstream_kubeconfig,
)
from testbed.paths import PROJECT_ROOT
from testbed.prometheus import (  # noqa: F401  # pushgateway*: imported to register them as fixtures
    PrometheusMissing,
    binary,
    pushgateway,
    pushgateway_server,
)
from testbed.servers import AssetsMissing, binaries, crds_dir
from testbed.workers import ServersOnceScheduling

# Generated (hypothesis) tests: a bounded number of examples in the README's test command and
# CI; GCJOB_HYPOTHESIS_PROFILE=long runs many more on demand. A test that is costlier per
# example (one that talks to a real server) scales this down rather than naming a number.
settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("GCJOB_HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config: pytest.Config) -> None:
    """A run of the whole suite, or of the end-to-end tests, with no API server (or Prometheus,
    promtool, Pushgateway) to start says so in one line and stops (exit 4), instead of the same
    error once a test. A run of single unit test files goes on: a test there that needs a
    server fails with that one line."""
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller has checked
    e2e = PROJECT_ROOT / "tests" / "e2e"
    targets = [Path(str(arg).split("::")[0]).resolve() for arg in config.args]
    if not any(t == PROJECT_ROOT / "tests" or t.is_relative_to(e2e) for t in targets):
        return
    try:
        binaries()
        crds_dir()
        binary("prometheus-pushgateway", "pushgateway")
        binary("prometheus")
        binary("promtool")
    except (AssetsMissing, PrometheusMissing) as missing:
        pytest.exit(f"gcjob tests: {missing}", returncode=pytest.ExitCode.USAGE_ERROR)


def pytest_report_header(config: pytest.Config) -> str:
    """Which servers this session runs on, first thing in its output."""
    try:
        found = binaries()
    except AssetsMissing as missing:
        return f"test servers: none ({missing})"
    manager = "with" if found.controller_manager else "WITHOUT"
    return f"test servers: {found.origin}; {manager} kube-controller-manager beside the hub"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> ServersOnceScheduling | None:
    """Under `-n` with xdist's default `--dist load`: a module with servers of its own runs
    whole on one worker (testbed/workers.py); another --dist is left as asked."""
    if config.getoption("dist") != "load":
        return None
    return ServersOnceScheduling(config, log)


@pytest.fixture
def validator() -> Draft202012Validator:
    """The report schema (gcjob/report/schema.json), compiled once."""
    return schemas.REPORT
