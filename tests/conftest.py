"""Session-wide fixtures: the real API servers (started only when a test asks for one), and
the report schema's validator."""

import os

import pytest
from hypothesis import HealthCheck, settings
from jsonschema import Draft202012Validator

from tests import schemas
from tests.servers import (  # noqa: F401  # imported to register them as fixtures
    faults,
    hub,
    hub_endpoint,
    hub_kubeconfig,
    upstream,
    upstream_endpoint,
    upstream_faults,
    upstream_kubeconfig,
)

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


@pytest.fixture
def validator() -> Draft202012Validator:
    """The report schema (gcjob/report/schema.json), compiled once."""
    return schemas.REPORT
