#!/usr/bin/env python3
"""Pins the test bed's servers to a release: writes the Go module that builds it.

    python3 tools/pin_test_servers.py kube v1.36.3    # testbed/kube/v1.36/
    python3 tools/pin_test_servers.py etcd v3.6.16    # testbed/etcd/
    python3 tools/pin_test_servers.py karmada v1.16.0 # testbed/karmada/
    python3 tools/pin_test_servers.py helm v3.22.0    # testbed/helm/

kube: a module requiring k8s.io/kubernetes at that version, with what that version's own
go.mod says (generated from it, as projects that import k8s.io/kubernetes do): its `go` and
`godebug` lines, and its `replace` lines, each `k8s.io/X => ./staging/src/k8s.io/X` turned into
`k8s.io/X => k8s.io/X v0.<minor>.<patch>`, the staging module's published release. Then
`go mod tidy`, and a check that every module k8s.io/kubernetes requires is selected at the
version it requires (minimal version selection moved nothing). build.json: the binaries, the
build tags of Kubernetes' own release builds (hack/lib/golang.sh of that version), and the
version stamps its hack/lib/version.sh sets (gitVersion, gitMajor, gitMinor, buildDate: the
release's time as the module proxy has it; gitCommit empty, as the proxy does not say it).

etcd: a module of its own requiring go.etcd.io/etcd/server/v3 (its root package is etcd's
main), so that it moves nothing the API server links.

karmada: a module of its own requiring github.com/karmada-io/karmada (its go.mod has no
`replace`), building karmada-controller-manager and karmada-webhook, with its `go` and
`godebug` lines and the version stamps its hack/util.sh sets (gitVersion, gitCommit and
gitShortCommit from the proxy's record of the tag, gitTreeState clean, buildDate the release's
time); build.json also names what the test bed takes from the module besides the binaries
(its CRDs, its webhook configuration: `files`).

helm: a module of its own requiring helm.sh/helm/v3 (the chart's tests: charts/gcjob), with
the version stamps its Makefile sets (version, metadata empty as for a tag, gitTreeState clean,
and the Kubernetes version its lint and `--kube-version` default to, from the k8s.io/client-go
it requires); build.json's `files` also takes the PrometheusRule CRD from prometheus-operator's
module at the release the proxy serves (`version`: a module outside the build, downloaded by
itself).

Needs Go and the module proxy. Then `python3 tools/build_test_servers.py <minor>` builds it;
commit the folder (go.mod, go.sum, tools.go, build.json).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testbed.builds import ETCD_MODULE, HELM_MODULE, KARMADA_MODULE, KUBE_MODULES, build_env

KUBE_BINARIES = ("kube-apiserver", "kube-controller-manager", "kubectl")
VERSION_PACKAGES = ("k8s.io/client-go/pkg/version", "k8s.io/component-base/version")
ETCD_SERVER = "go.etcd.io/etcd/server/v3"
KARMADA = "github.com/karmada-io/karmada"
KARMADA_BINARIES = {
    "karmada-controller-manager": f"{KARMADA}/cmd/controller-manager",
    "karmada-webhook": f"{KARMADA}/cmd/webhook",
}
# What the Karmada hub fixture takes from the module besides its binaries (testbed/karmada.py).
KARMADA_FILES = {
    "crds": "charts/karmada/_crds/bases",
    "webhook-configuration.yaml": "artifacts/deploy/webhook-configuration.yaml",
}
HELM = "helm.sh/helm/v3"
PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator"
# The PrometheusRule CRD, for the chart's server-side dry run (tests/deploy/test_helm_chart.py).
PROMETHEUS_OPERATOR_FILES = {
    "prometheusrules-crd.yaml": "example/prometheus-operator-crd/"
    "monitoring.coreos.com_prometheusrules.yaml",
}
HEADER = "// Written by tools/pin_test_servers.py from {source}'s own go.mod; do not edit.\n"


def go(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["go", *args], cwd=cwd, env=build_env(), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"pin-test-servers: go {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def module_info(path: str, version: str) -> dict[str, Any]:
    info: dict[str, Any] = json.loads(go("mod", "download", "-json", f"{path}@{version}"))
    info.update(json.loads(go("list", "-m", "-json", f"{path}@{version}")))
    return info


def directives(go_mod: str) -> str:
    """The `go` line and any `godebug` lines or block, as written (without a comment after
    them: Karmada's `go 1.24.10 // keep in sync with .go-version`)."""
    found = re.findall(
        r"^(go \S+|godebug \([^)]*\)|godebug [^\n]+?)[ \t]*(?://[^\n]*)?$", go_mod, re.M
    )
    return "\n\n".join(found)


def kube(version: str) -> None:
    numbers = re.fullmatch(r"v1\.(\d+)\.(\d+)", version)
    if numbers is None:
        sys.exit(f"pin-test-servers: {version}: not a Kubernetes release (v1.<minor>.<patch>)")
    minor, patch = numbers[1], numbers[2]
    source = f"k8s.io/kubernetes {version}"
    info = module_info("k8s.io/kubernetes", version)
    go_mod = Path(info["GoMod"]).read_text("utf-8")
    replaces = []
    for line in re.findall(r"^\s*(\S+ => .+)$", go_mod, re.M):
        staged = re.fullmatch(r"(k8s\.io/\S+) => \./staging/src/\1", line)
        if staged is not None:
            replaces.append(f"{staged[1]} => {staged[1]} v0.{minor}.{patch}")
        elif "=> ./" in line or "=> ../" in line:
            sys.exit(f"pin-test-servers: {source}: a replace this cannot follow: {line}")
        else:
            replaces.append(line)
    folder = KUBE_MODULES / f"v1.{minor}"
    folder.mkdir(parents=True, exist_ok=True)

    def write_go_mod() -> None:
        (folder / "go.mod").write_text(
            HEADER.format(source=source)
            + f"module gcjob.test/kube/v1.{minor}\n\n{directives(go_mod)}\n\n"
            + f"require k8s.io/kubernetes {version}\n\nreplace (\n"
            + "".join(f"\t{r}\n" for r in replaces)
            + ")\n"
        )

    write_go_mod()
    tools_go(folder, [f"k8s.io/kubernetes/cmd/{b}" for b in KUBE_BINARIES])
    golang_sh = (Path(info["Dir"]) / "hack" / "lib" / "golang.sh").read_text("utf-8")
    tags = re.search(r'gotags="([^"$]*(?:\$\{grpcnotrace\})?)', golang_sh)
    if tags is None:
        sys.exit(f"pin-test-servers: {source}: no gotags= in hack/lib/golang.sh")
    stamps = {
        "gitVersion": version,
        "gitMajor": "1",
        "gitMinor": minor,
        "gitCommit": "",
        "buildDate": info["Time"],
    }
    write_build(
        folder,
        {b: f"k8s.io/kubernetes/cmd/{b}" for b in KUBE_BINARIES},
        tags[1].replace("${grpcnotrace}", ",grpcnotrace").strip(","),
        {f"{p}.{k}": v for p in VERSION_PACKAGES for k, v in stamps.items()},
    )
    refused = tidy(folder)
    if refused:
        # The proxy may not serve every staging module at every patch release: pin the
        # nearest served one of the same minor below it, and say so in go.mod.
        for module, wanted in refused.items():
            nearest = nearest_below(module, wanted)
            note = f"{module} {wanted}: not served by the module proxy"
            print(f"pin-test-servers: {note}; pinned to {nearest}", file=sys.stderr)
            replaces[:] = [
                f"{module} => {module} {nearest} // {wanted}: not served by the module proxy"
                if r == f"{module} => {module} {wanted}"
                else r
                for r in replaces
            ]
        write_go_mod()
        if tidy(folder):
            sys.exit(f"pin-test-servers: {source}: go mod tidy still fails")
    check_selection(folder, go_mod, source)
    print(f"pinned {folder.relative_to(KUBE_MODULES.parents[1])} to {source}")


def tidy(folder: Path) -> dict[str, str]:
    """`go mod tidy`; the k8s.io modules the proxy refused (module: version), if it failed
    only for those."""
    done = subprocess.run(
        ["go", "mod", "tidy"], cwd=folder, env=build_env(), capture_output=True, text=True
    )
    if done.returncode == 0:
        return {}
    refused = dict(
        re.findall(r"(k8s\.io/[^@\s]+)@(v0\.\d+\.\d+): reading \S+: (?:403|404|410)", done.stderr)
    )
    if not refused:
        sys.exit(f"pin-test-servers: go mod tidy: {done.stderr.strip()}")
    return refused


def nearest_below(module: str, wanted: str) -> str:
    """The newest release of `module` the proxy serves of `wanted`'s minor, below it."""
    minor, patch = wanted.rsplit(".", 1)
    served = go("list", "-m", "-versions", module).split()[1:]
    below = [v for v in served if v.startswith(minor + ".") and v.rsplit(".", 1)[1].isdigit()]
    below = [v for v in below if int(v.rsplit(".", 1)[1]) < int(patch)]
    if not below:
        sys.exit(f"pin-test-servers: {module} {wanted} is not served, nor any {minor}.x below")
    return max(below, key=lambda v: int(v.rsplit(".", 1)[1]))


def check_selection(folder: Path, go_mod: str, source: str) -> None:
    """Every module the release requires is built at the version it requires."""
    required = dict(re.findall(r"^\s+(\S+) (v\S+)(?: // indirect)?$", go_mod, re.M))
    selected = {}
    for line in go("list", "-m", "all", cwd=folder).splitlines():
        parts = line.split()
        if len(parts) >= 2:
            selected[parts[0]] = parts[-1] if "=>" in parts else parts[1]
    moved = [
        f"{m} {v} -> {selected[m]}"
        for m, v in sorted(required.items())
        if m in selected and not m.startswith("k8s.io/") and selected[m] != v
    ]
    if moved:
        sys.exit(f"pin-test-servers: {source}: selection moved: {'; '.join(moved)}")


def etcd(version: str) -> None:
    source = f"{ETCD_SERVER} {version}"
    info = module_info(ETCD_SERVER, version)
    go_mod = Path(info["GoMod"]).read_text("utf-8")
    folder = ETCD_MODULE
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "go.mod").write_text(
        HEADER.format(source=source)
        + f"module gcjob.test/etcd\n\n{directives(go_mod)}\n\nrequire {ETCD_SERVER} {version}\n"
    )
    tools_go(folder, [ETCD_SERVER])
    write_build(folder, {"etcd": ETCD_SERVER}, "", {})
    go("mod", "tidy", cwd=folder)
    check_selection(folder, go_mod, source)
    print(f"pinned {folder.relative_to(ETCD_MODULE.parents[1])} to {source}")


def karmada(version: str) -> None:
    source = f"{KARMADA} {version}"
    info = module_info(KARMADA, version)
    go_mod = Path(info["GoMod"]).read_text("utf-8")
    if re.search(r"^replace\b", go_mod, re.M):
        sys.exit(f"pin-test-servers: {source}: its go.mod replaces modules; follow them first")
    commit: str = (info.get("Origin") or {}).get("Hash", "")
    folder = KARMADA_MODULE
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "go.mod").write_text(
        HEADER.format(source=source)
        + f"module gcjob.test/karmada\n\n{directives(go_mod)}\n\nrequire {KARMADA} {version}\n"
    )
    tools_go(folder, list(KARMADA_BINARIES.values()))
    stamps = {
        "gitVersion": version,
        "gitCommit": commit,
        "gitShortCommit": commit[:7],
        "gitTreeState": "clean",
        "buildDate": info["Time"],
    }
    write_build(
        folder,
        KARMADA_BINARIES,
        "",
        {f"{KARMADA}/pkg/version.{k}": v for k, v in stamps.items()},
        {"module": KARMADA, "paths": KARMADA_FILES},
    )
    go("mod", "tidy", cwd=folder)
    check_selection(folder, go_mod, source)
    print(f"pinned {folder.relative_to(KARMADA_MODULE.parents[1])} to {source}")


def helm(version: str) -> None:
    source = f"{HELM} {version}"
    info = module_info(HELM, version)
    go_mod = Path(info["GoMod"]).read_text("utf-8")
    if re.search(r"^replace\b", go_mod, re.M):
        sys.exit(f"pin-test-servers: {source}: its go.mod replaces modules; follow them first")
    client = re.search(r"^\s+k8s\.io/client-go v0\.(\d+)\.", go_mod, re.M)
    if client is None:
        sys.exit(f"pin-test-servers: {source} requires no k8s.io/client-go v0.x")
    served = go("list", "-m", "-versions", PROMETHEUS_OPERATOR).split()[1:]
    if not served:
        sys.exit(f"pin-test-servers: the proxy serves no {PROMETHEUS_OPERATOR}")
    crds = max(served, key=lambda v: tuple(int(n) for n in re.findall(r"\d+", v)[:3]))
    folder = HELM_MODULE
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "go.mod").write_text(
        HEADER.format(source=source)
        + f"module gcjob.test/helm\n\n{directives(go_mod)}\n\nrequire {HELM} {version}\n"
    )
    tools_go(folder, [f"{HELM}/cmd/helm"])
    stamps = {
        "internal/version.version": version,
        "internal/version.metadata": "",
        "internal/version.gitTreeState": "clean",
        "pkg/lint/rules.k8sVersionMajor": "1",
        "pkg/lint/rules.k8sVersionMinor": client[1],
        "pkg/chartutil.k8sVersionMajor": "1",
        "pkg/chartutil.k8sVersionMinor": client[1],
    }
    write_build(
        folder,
        {"helm": f"{HELM}/cmd/helm"},
        "",
        {f"{HELM}/{k}": v for k, v in stamps.items() if v},
        {"module": PROMETHEUS_OPERATOR, "version": crds, "paths": PROMETHEUS_OPERATOR_FILES},
    )
    go("mod", "tidy", cwd=folder)
    check_selection(folder, go_mod, source)
    print(f"pinned {folder.relative_to(HELM_MODULE.parents[1])} to {source} ({crds}'s CRD)")


def tools_go(folder: Path, packages: list[str]) -> None:
    """Keeps the binaries' packages in the module graph for `go mod tidy` (a `tool` directive
    would need go 1.24 in go.mod, above what older releases ask for)."""
    imports = "".join(f'\t_ "{p}"\n' for p in packages)
    (folder / "tools.go").write_text(
        "//go:build tools\n\n// The binaries this module builds (tools/build_test_servers.py).\n"
        f"package tools\n\nimport (\n{imports})\n"
    )


def write_build(
    folder: Path,
    binaries: dict[str, str],
    tags: str,
    stamps: dict[str, str],
    files: dict[str, object] | None = None,
) -> None:
    spec: dict[str, object] = {"binaries": binaries, "tags": tags, "stamps": stamps}
    if files:
        spec["files"] = files
    (folder / "build.json").write_text(json.dumps(spec, indent=2) + "\n")


def main(argv: list[str]) -> None:
    pinners = {"kube": kube, "etcd": etcd, "karmada": karmada, "helm": helm}
    if len(argv) != 2 or argv[0] not in pinners:
        sys.exit(__doc__.split("\n\n")[1])
    pinners[argv[0]](argv[1])


if __name__ == "__main__":
    main(sys.argv[1:])
