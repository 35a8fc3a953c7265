"""The Karmada hub's fixtures (testbed/fixtures.py, testbed/karmada.py): its tests run here,
apart from tests/e2e, so that the 1.31 pass of CI (`pytest tests/e2e`) does not run them."""

from testbed.fixtures import (  # noqa: F401  # imported to register them as fixtures
    karmada,
    karmada_endpoint,
)
