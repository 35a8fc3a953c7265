"""An in-process fake Kubernetes API server for end-to-end tests (see server.FakeKube)."""

from .resources import crd_paths, crds_dir
from .server import FakeKube, Fault, RecordedRequest

__all__ = ["FakeKube", "Fault", "RecordedRequest", "crd_paths", "crds_dir"]
