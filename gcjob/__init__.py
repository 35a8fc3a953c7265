"""gcjob: deletes what multi-cluster controllers leave behind on a Karmada hub."""

# The one place the version is written: pyproject.toml reads it from here (setuptools
# `dynamic`), and a run does not import importlib.metadata (tens of ms) to find it again.
__version__ = "0.1.0"
