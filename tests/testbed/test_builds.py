"""The test bed's server builds (testbed/builds.py, tools/build_test_servers.py): one module per
Kubernetes version stamped with its own release, a cache key that changes with what the
binaries are built from, and one line with a documented exit code when a build cannot start."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testbed import builds
from testbed.karmada import karmada_files
from testbed.paths import PROJECT_ROOT
from testbed.servers import AssetsMissing, binaries, kubectl

SCRIPT = PROJECT_ROOT / "tools" / "build_test_servers.py"
VERSIONS = builds.kube_versions()


def run_script(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "KUBEBUILDER_ASSETS"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_versions_production_runs_are_there() -> None:
    """1.31 (the oldest Karmada 1.15 runs), 1.34 (where gcjob's reads change), 1.36 (the
    newest Karmada's), and the default among them."""
    assert {"1.31", "1.34", "1.36"} <= set(VERSIONS)
    assert builds.DEFAULT_KUBE_VERSION in VERSIONS


@pytest.mark.parametrize("version", VERSIONS)
def test_each_module_is_stamped_with_the_release_it_requires(version: str) -> None:
    module = builds.kube_module(version)
    release = module.required("k8s.io/kubernetes")
    assert release.startswith(f"v{version}.")
    stamps = module.spec["stamps"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert stamps[f"{package}.gitVersion"] == release
        assert stamps[f"{package}.gitMajor"] == "1"
        assert stamps[f"{package}.gitMinor"] == version.split(".")[1]
    assert f"-X k8s.io/component-base/version.gitVersion={release}" in module.ldflags()
    assert set(module.spec["binaries"]) == {"kube-apiserver", "kube-controller-manager", "kubectl"}


def test_the_tests_kubectl_is_the_release_built_beside_the_servers() -> None:
    """issue 51 item 14: nothing taken from the machine's PATH; the release's own kubectl."""
    if os.environ.get("KUBEBUILDER_ASSETS"):
        pytest.skip("KUBEBUILDER_ASSETS: its kubectl, not one built here")
    found = kubectl()
    module = builds.kube_module()
    assert found.parent == builds.built(module)
    done = subprocess.run(
        [str(found), "version", "--client", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    said = json.loads(done.stdout)["clientVersion"]["gitVersion"]
    assert said == module.required("k8s.io/kubernetes")


@pytest.mark.parametrize("version", VERSIONS)
def test_each_module_pins_the_staging_modules_to_its_release(version: str) -> None:
    """Every k8s.io staging module is replaced by its release of the same minor (the patch
    may be lower only where go.mod says the proxy does not serve it)."""
    module = builds.kube_module(version)
    patch = module.required("k8s.io/kubernetes").split(".")[2]
    replaces = [line.strip() for line in module.go_mod().splitlines() if " => " in line]
    assert len(replaces) > 20
    for line in replaces:
        name, _, target = line.partition(" => ")
        assert target.startswith(f"{name} v0.{version.split('.')[1]}."), line
        if not target.endswith(f".{patch}"):
            assert line.endswith("not served by the module proxy"), line


def test_the_key_changes_with_what_the_binaries_are_built_from(tmp_path: Path) -> None:
    copy = tmp_path / "v1.36"
    shutil.copytree(builds.kube_module("1.36").path, copy)
    module = builds.Module(copy)
    first = builds.key(module)
    assert builds.key(module) == first
    spec = module.spec
    spec["stamps"]["k8s.io/component-base/version.gitVersion"] = "v1.36.99"
    (copy / "build.json").write_text(json.dumps(spec))
    stamped = builds.key(module)
    assert stamped != first
    (copy / "go.sum").write_text((copy / "go.sum").read_text() + "\n")
    assert builds.key(module) not in (first, stamped)


def test_the_cache_is_outside_the_clone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert builds.cache_root() == tmp_path / "gcjob" / "test-servers"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert builds.cache_root() == Path.home() / ".cache" / "gcjob" / "test-servers"
    folder = builds.build_dir(builds.ETCD)
    assert not folder.is_relative_to(PROJECT_ROOT)
    assert folder.name == f"etcd-{builds.key(builds.ETCD)}"


def test_an_unknown_version_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = run_script("1.99", XDG_CACHE_HOME=str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"build-test-servers: error: no Kubernetes 1.99 in testbed/kube: "
        f"{', '.join(VERSIONS)} are there (GCJOB_KUBE_VERSION)"
    ]


def test_no_go_is_one_line_and_exit_3(tmp_path: Path) -> None:
    done = run_script(XDG_CACHE_HOME=str(tmp_path), PATH=str(tmp_path))
    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert line.startswith("build-test-servers: error: no `go` on PATH")


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go (the build needs it)")
def test_no_module_proxy_is_one_line_and_exit_4(tmp_path: Path) -> None:
    """A fresh module cache and no proxy: nothing to build from."""
    done = run_script(
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        GOMODCACHE=str(tmp_path / "mod"),
        GOPROXY="off",
    )
    assert done.returncode == 4, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("build-test-servers: error: cannot download the Go modules of ")
    assert "GOPROXY=off" in line


def test_brought_binaries_build_nothing(tmp_path: Path) -> None:
    done = run_script(KUBEBUILDER_ASSETS=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "c"))
    assert done.returncode == 0
    assert "nothing to build" in done.stdout
    assert not (tmp_path / "c").exists()


def test_a_built_version_is_found_not_built_again() -> None:
    """What the README's test command ran before pytest: the second run builds nothing."""
    module = builds.kube_module()
    if builds.built(module) is None or builds.built(builds.ETCD) is None:
        pytest.skip(f"Kubernetes {builds.kube_version()} is not built here (KUBEBUILDER_ASSETS)")
    modules = builds.modules_for([builds.kube_version()])
    if any(builds.built(m) is None for m in modules):
        pytest.skip(f"the servers of {builds.kube_version()} are not all built here")
    done = run_script(builds.kube_version())
    assert done.returncode == 0, done.stderr
    said = [line.split(": ")[2] for line in done.stdout.splitlines()]
    assert said == ["cached"] * len(modules)


def test_karmada_is_built_with_the_version_its_hub_runs_on() -> None:
    """The README's test command (no version: 1.36) builds karmada-controller-manager and
    karmada-webhook too, of the one release the module proxy serves, stamped with it, with
    the CRDs and webhook configuration the Karmada hub applies; the other versions' builds
    do not."""
    assert builds.KARMADA_KUBE_VERSION == builds.DEFAULT_KUBE_VERSION
    assert builds.modules_for([builds.KARMADA_KUBE_VERSION])[-1] == builds.KARMADA
    assert builds.KARMADA not in builds.modules_for(["1.31", "1.34"])
    release = builds.KARMADA.required("github.com/karmada-io/karmada")
    assert release == "v1.16.0"
    spec = builds.KARMADA.spec
    assert set(spec["binaries"]) == {"karmada-controller-manager", "karmada-webhook"}
    assert spec["stamps"]["github.com/karmada-io/karmada/pkg/version.gitVersion"] == release
    assert set(spec["files"]["paths"]) == {"crds", "webhook-configuration.yaml"}
    assert builds.KARMADA.label == "karmada"
    assert builds.KARMADA.go_directive == "1.24.10"  # Karmada's own, without its comment


def test_helm_is_built_whatever_the_version_with_the_prometheusrule_crd() -> None:
    """The README's test command builds Helm 3 for the chart's tests (charts/gcjob), whatever
    the servers' version, stamped with its release and the Kubernetes version of the
    client-go it links, and takes the PrometheusRule CRD from a release of
    prometheus-operator's module (outside the build: `version`, part of the key)."""
    for versions in (["1.36"], ["1.31"], ["1.31", "1.34"]):
        assert builds.modules_for(versions).count(builds.HELM) == 1
    release = builds.HELM.required("helm.sh/helm/v3")
    assert release.startswith("v3.")
    spec = builds.HELM.spec
    assert spec["binaries"] == {"helm": "helm.sh/helm/v3/cmd/helm"}
    assert spec["stamps"]["helm.sh/helm/v3/internal/version.version"] == release
    minor = builds.HELM.required("k8s.io/client-go").split(".")[1]
    assert spec["stamps"]["helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor"] == minor
    files = spec["files"]
    assert files["module"] == "github.com/prometheus-operator/prometheus-operator"
    assert files["version"].startswith("v0.")
    assert set(files["paths"]) == {"prometheusrules-crd.yaml"}
    assert builds.HELM.label == "helm"


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go (the build needs it)")
def test_karmada_not_built_says_how_to_build_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(AssetsMissing, match=r"run `python3 tools/build_test_servers.py 1.36`"):
        karmada_files()


def test_brought_binaries_win(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("kube-apiserver", "etcd"):
        (tmp_path / name).touch()
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path))
    found = binaries()
    assert (found.apiserver, found.etcd) == (tmp_path / "kube-apiserver", tmp_path / "etcd")
    assert found.controller_manager is None  # the hub then runs no controllers
    (tmp_path / "kube-controller-manager").touch()
    assert binaries().controller_manager == tmp_path / "kube-controller-manager"
    (tmp_path / "etcd").unlink()
    with pytest.raises(AssetsMissing, match="holds no kube-apiserver and etcd"):
        binaries()


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go (the build needs it)")
def test_a_version_not_built_says_how_to_build_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("GCJOB_KUBE_VERSION", "1.31")
    with pytest.raises(AssetsMissing, match=r"run `python3 tools/build_test_servers.py 1.31`"):
        binaries()
    monkeypatch.setenv("GCJOB_KUBE_VERSION", "1.99")
    with pytest.raises(AssetsMissing, match=r"no Kubernetes 1\.99"):
        binaries()
