"""Session-wide fixtures: the real API servers (started only when a test asks for one), and
the report schema's validator."""

import pytest
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


@pytest.fixture
def validator() -> Draft202012Validator:
    """The report schema (gcjob/report/schema.json), compiled once."""
    return schemas.REPORT
