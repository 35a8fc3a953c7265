#!/usr/bin/env python3
"""Builds the test bed's servers: etcd, and kube-apiserver, kube-controller-manager and kubectl
of one Kubernetes version, from the Go modules in testbed/ (testbed/builds.py says how and where);
with 1.36, the version the Karmada hub runs on, karmada-controller-manager and karmada-webhook
too (testbed/karmada/); and, whatever the version, Helm 3 for the chart's tests (testbed/helm/).

    python3 tools/build_test_servers.py            # $GCJOB_KUBE_VERSION, else 1.36
    python3 tools/build_test_servers.py 1.31 1.36  # these versions
    python3 tools/build_test_servers.py all        # every version in testbed/kube/

Run it before pytest (the README's test command does), never inside: it takes a lock, so a
second caller waits and then finds the binaries built. Built binaries are cached outside the
clone, keyed on what they are built from: a second run, or a fresh clone of the same modules,
builds nothing. With KUBEBUILDER_ASSETS set the tests use the binaries there, and this builds
nothing.

Exit codes: 0 built, or already built (or KUBEBUILDER_ASSETS set); 1 a build failed (Go's
output above the last line); 2 bad usage (a version testbed/kube/ does not hold); 3 no Go
toolchain on PATH, or one older than a module needs; 4 the Go module proxy could not be
reached, or refused a module.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testbed import builds

PREFIX = "build-test-servers"


def say(line: str) -> None:
    print(f"{PREFIX}: {line}", flush=True)


def main(argv: list[str]) -> int:
    if any(a.startswith("-") for a in argv):
        print(__doc__, file=sys.stderr)
        return 0 if argv in (["-h"], ["--help"]) else 2
    given = os.environ.get("KUBEBUILDER_ASSETS")
    if given:
        say(f"KUBEBUILDER_ASSETS={given}: the tests use the servers there; nothing to build")
        return 0
    try:
        versions = builds.kube_versions() if argv == ["all"] else argv or [builds.kube_version()]
        modules = builds.modules_for(versions)
        with builds.locked(say):
            for module in modules:
                folder, seconds = builds.build(module, say)
                names = ", ".join(module.spec["binaries"])
                how = "cached" if seconds is None else f"built in {_minutes(seconds)}"
                say(f"{names} ({module.path.name}): {how}: {folder}")
    except builds.BuildError as error:
        print(f"{PREFIX}: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        return 130
    return 0


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
