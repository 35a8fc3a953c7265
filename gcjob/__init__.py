"""gcjob: deletes what multi-cluster controllers leave behind on a Karmada hub."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gcjob")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
