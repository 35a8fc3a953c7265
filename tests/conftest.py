"""Session-wide fixtures: the real API servers (started only when a test asks for one)."""

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
