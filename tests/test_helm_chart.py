"""charts/gcjob, rendered by a real Helm 3 (testbed/helm/, built with the test servers): it
lints, and every combination of values docs/install.md ("With Helm") documents renders the
objects `kubectl kustomize` renders of its twin, the kustomization of cronjobs/ it stands for
(the chart renders cronjobs/ itself, through its `cronjobs` link: templates/_kustomize.tpl).
Their server-side dry runs: tests/e2e/test_helm_chart_e2e.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import builds

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "gcjob"
CRONJOBS = ROOT / "cronjobs"
SETTINGS = {"image": "registry.example.com/gcjob:0.2.0", "lockNamespace": "gcjob-system"}


@dataclass(frozen=True)
class Combination:
    """Values of the chart, and the kustomization of cronjobs/ that renders the same objects:
    its `resources` and `components` (directories of cronjobs/), with a copy of
    cronjobs/settings and cronjobs/components/settings when the values set `image` and
    `lockNamespace`."""

    values: dict[str, Any]
    resources: tuple[str, ...]
    components: tuple[str, ...] = ()
    files: tuple[str, ...] = field(default=())  # files of cronjobs/, as they are

    @property
    def id(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.values.items()) or "defaults"

    @property
    def row(self) -> str:
        """Its row in docs/install.md's table: the values, then what renders the same."""
        values = [k if k in SETTINGS else f"{k}={_shown(v)}" for k, v in self.values.items()]
        twin = [*self.resources, *self.components, *self.files]
        twin += ["settings", "components/settings"] if "image" in self.values else []
        shown = " ".join(f"`{v}`" for v in values) or "(none)"
        return f"| {shown} | {', '.join(f'`{t}`' for t in twin)} |"


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


# docs/install.md, "With Helm": each row of its table is one of these.
COMBINATIONS = (
    Combination({}, ("overlays/dry-run",)),
    Combination({"mode": "enforce"}, ("overlays/enforce",)),
    Combination(
        {"mode": "enforce", "enforceCopies": True},
        ("overlays/enforce",),
        ("components/enforce-copies",),
    ),
    Combination({"mode": "sharded"}, ("overlays/sharded",)),
    Combination(
        {"mode": "enforce", "rollout": True, "storage": True},
        ("overlays/enforce", "rollout", "storage"),
    ),
    Combination({"mode": "enforce", "rollout": True, **SETTINGS}, ("overlays/enforce", "rollout")),
    Combination(
        {"routes": False, "rollout": True},
        ("overlays/dry-run", "rollout"),
        ("components/without-routes",),
    ),
    Combination(
        {"mode": "enforce", "secrets": False, "rollout": True},
        ("overlays/enforce", "rollout"),
        ("components/without-secrets",),
    ),
    Combination(
        {"prometheusRule": True}, ("overlays/dry-run",), files=("monitoring/prometheusrule.yaml",)
    ),
    Combination({"cluster": "hub"}, ("rbac/hub",)),
    Combination({"cluster": "hub", "mode": "sharded"}, ("rbac/hub-sharded",)),
    Combination(
        {"cluster": "hub", "mode": "sharded", "identity": "serviceaccount"},
        ("rbac/hub-sharded-serviceaccount",),
    ),
    Combination(
        {"cluster": "hub", "enforceCopies": True}, ("rbac/hub",), ("components/enforce-copies",)
    ),
    Combination({"cluster": "hub", "namespaces": True}, ("rbac/hub",), ("components/namespaces",)),
    Combination({"cluster": "hub", "secrets": False}, ("rbac/hub-without-secrets",)),
    Combination({"cluster": "hub", "identity": "serviceaccount"}, ("rbac/hub-serviceaccount",)),
    Combination(
        {"cluster": "hub", "identity": "serviceaccount", "secrets": False},
        ("rbac/hub-serviceaccount",),
        ("components/without-secrets",),
    ),
    Combination(
        {"cluster": "hub", "identity": "serviceaccount", "restore": True, **SETTINGS},
        ("rbac/hub-serviceaccount", "rbac/hub-restore"),
    ),
    Combination({"cluster": "upstream"}, ("rbac/upstream",)),
    Combination(
        {"cluster": "upstream", "identity": "serviceaccount"}, ("rbac/upstream-serviceaccount",)
    ),
    Combination({"cluster": "projects"}, ("rbac/projects",)),
    Combination(
        {"cluster": "projects", "identity": "serviceaccount"}, ("rbac/projects-serviceaccount",)
    ),
)


# The kustomizations of cronjobs/ no row stands for, and why: the chart renders each through
# the rows' (their resources and components), or leaves it to an overlay of the operator's.
NOT_A_ROW = {
    "base": "every overlays/ row stands on it",
    "components/record-deletions": "the enforce and sharded rows' component",
    "settings": "the rows with `image` and `lockNamespace`",
    "components/settings": "the rows with `image` and `lockNamespace`",
    "once": "a one-off run's arguments are a patch of the operator's (docs/operating.md)",
    "components/once": "the same",
    "restore": "its record and targets are a patch of the operator's (docs/undo.md)",
    "components/sharded-leases": "the rbac/hub-sharded rows' component",
    "monitoring": "the prometheusRule row loads its one file, monitoring/prometheusrule.yaml",
    "components/runbooks": "a kustomize replacement (the runbooks' page, docs/deploying.md), "
    "which the chart does not render: with the chart, patch runbook_url in your own copy",
}


def helm_binary() -> str:
    folder = builds.built(builds.HELM)
    assert folder is not None, (
        "no Helm built for testbed/helm/: run `python3 tools/build_test_servers.py` first"
    )
    return str(folder / "helm")


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HELM_CACHE_HOME": "/nonexistent", "HELM_CONFIG_HOME": "/nonexistent"}
    return subprocess.run(
        [helm_binary(), *args], capture_output=True, text=True, check=False, timeout=60, env=env
    )


def values_args(values: dict[str, Any]) -> list[str]:
    return [a for k, v in values.items() for a in ("--set-json", f"{k}={json.dumps(v)}")]


def chart_render(values: dict[str, Any]) -> str:
    done = helm("template", "gcjob", str(CHART), *values_args(values))
    assert done.returncode == 0, done.stderr
    return done.stdout


def kustomize_render(combination: Combination, work: Path) -> str:
    """What `kubectl kustomize` renders of the combination's twin, written in `work`."""
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl renders cronjobs/ (kubectl kustomize)"
    up = os.path.relpath(CRONJOBS, work)
    resources = [f"{up}/{r}" for r in combination.resources]
    components = [f"{up}/{c}" for c in combination.components]
    if "image" in combination.values:
        shutil.copytree(CRONJOBS / "settings", work / "settings")
        settings = work / "settings" / "settings.yaml"
        loaded = yaml.safe_load(settings.read_text())
        loaded["data"] = {k: combination.values[k] for k in SETTINGS}
        settings.write_text(yaml.safe_dump(loaded))
        resources.append("settings")
        components.append(f"{up}/components/settings")
    (work / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": resources, "components": components})
    )
    done = subprocess.run(
        [kubectl, "kustomize", str(work)], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + "".join(f"\n---\n{(CRONJOBS / f).read_text()}" for f in combination.files)


def objects(rendered: str) -> list[str]:
    """Each object as canonical JSON, sorted: the same objects in any order compare equal."""
    return sorted(json.dumps(d, sort_keys=True) for d in yaml.safe_load_all(rendered) if d)


def test_the_chart_lints_clean() -> None:
    done = helm("lint", "--strict", str(CHART))

    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_the_chart_renders_cronjobs_itself_through_its_link() -> None:
    link = CHART / "cronjobs"

    assert link.is_symlink() and link.resolve() == CRONJOBS


@pytest.mark.parametrize("combination", COMBINATIONS, ids=lambda c: c.id)
def test_each_documented_combination_renders_what_its_kustomize_twin_renders(
    combination: Combination, tmp_path: Path
) -> None:
    chart = objects(chart_render(combination.values))
    twin = objects(kustomize_render(combination, tmp_path))

    assert chart == twin
    assert chart  # never two empty renders


def test_every_kustomization_of_cronjobs_is_a_rows_twin_or_said_why_not() -> None:
    """A kustomization added to cronjobs/ (another RBAC variant, a component) fails this until
    the chart renders it under some values, with a row, or NOT_A_ROW says why not."""
    found = {str(k.parent.relative_to(CRONJOBS)) for k in CRONJOBS.rglob("kustomization.yaml")}
    twins = {d for c in COMBINATIONS for d in (*c.resources, *c.components)}

    assert found - twins == set(NOT_A_ROW)


def test_the_install_page_documents_exactly_the_tested_combinations() -> None:
    page = (ROOT / "docs" / "install.md").read_text()
    section = page.split("\n## With Helm\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][2:]

    assert rows == [c.row for c in COMBINATIONS]


def test_the_documented_values_file_renders_each_cluster_with_its_settings(
    tmp_path: Path,
) -> None:
    page = (ROOT / "docs" / "install.md").read_text().split("\n## With Helm\n", 1)[1]
    documented = page.split("cat > my-gcjob/values.yaml <<'EOF'\n", 1)[1].split("\nEOF\n")[0]
    values = yaml.safe_load(documented)
    (tmp_path / "values.yaml").write_text(documented)
    shipped = yaml.safe_load((CHART / "values.yaml").read_text())

    assert set(values) <= set(shipped)  # Helm would take a misspelt key without a word
    for cluster in ("hub", "upstream", "management"):
        done = helm(
            "template",
            "gcjob",
            str(CHART),
            "-f",
            str(tmp_path / "values.yaml"),
            "--set",
            f"cluster={cluster}",
        )
        assert done.returncode == 0, done.stderr
        rendered = list(yaml.safe_load_all(done.stdout))
        assert rendered
        if cluster == "hub":
            lease = [o for o in rendered if o["kind"] == "Role"]
            assert [o["metadata"]["namespace"] for o in lease] == [values["lockNamespace"]]
        if cluster == "management":
            assert values["image"] in done.stdout
            assert f"--lock-namespace={values['lockNamespace']}" in done.stdout


def test_a_value_outside_its_choices_fails_the_render() -> None:
    wrong = helm("template", "gcjob", str(CHART), "--set", "cluster=managment")
    both = helm("template", "gcjob", str(CHART), "--set", "routes=false", "--set", "secrets=false")

    assert wrong.returncode != 0 and "none of management, hub, upstream, projects" in wrong.stderr
    assert both.returncode != 0 and "not with routes: false" in both.stderr
