"""The image's inputs: requirements.lock pins what pyproject.toml asks for, every pin with its
hashes, and nothing else; the Dockerfile installs that lock by hash and gcjob itself without
resolving anything. (.ci/image runs the Dockerfile's steps twice and compares what they
installed.) And the shell completion docs/operating.md documents works in a real bash."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
# What pip-compile writes for a requirement of gcjob's own: a runtime dependency, or the build
# backend (pyproject's build-system.requires).
OWN = ("gcjob (pyproject.toml)", "gcjob (pyproject.toml::build-system.requires)")


def locked() -> dict[str, tuple[str, list[str], list[str]]]:
    """name -> (version, its hashes, what it is there for: the lock's `# via` lines)."""
    pins: dict[str, tuple[str, list[str], list[str]]] = {}
    blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text(encoding="utf-8"))
    for block in blocks:
        pin = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", block)
        if pin is None:
            continue
        name, version = canonicalize_name(pin.group(1)), pin.group(2)
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", block)
        # `# via X`, or `# via` then one `#   X` line each
        via = re.search(r"^\s*# via(?: (\S.*))?$\n?((?:\s*#   \S.*\n?)*)", block, re.M)
        reasons = []
        if via:
            reasons = [via.group(1)] if via.group(1) else re.findall(r"#   (\S.*)", via.group(2))
        assert name not in pins, f"{name} pinned twice"
        pins[name] = (version, hashes, reasons)
    return pins


def own_requirements() -> list[Requirement]:
    return [
        Requirement(r)
        for r in [*PYPROJECT["project"]["dependencies"], *PYPROJECT["build-system"]["requires"]]
    ]


def test_every_runtime_dependency_and_the_build_backend_is_pinned_within_pyproject() -> None:
    pins = locked()
    assert len(pins) > len(own_requirements())  # their own dependencies too
    for requirement in own_requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in requirements.lock: regenerate it"
        version = pins[name][0]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{name}=={version} is outside pyproject's {requirement.specifier}: regenerate"
        )


def test_every_pin_has_hashes_and_is_there_for_gcjob() -> None:
    """No stray pin: each is one of gcjob's own requirements, or there for a pinned package
    that is (the `# via` chain ends at gcjob)."""
    pins = locked()
    for name, (version, hashes, reasons) in pins.items():
        assert hashes, f"{name}=={version} has no hash"
        assert reasons, f"{name}=={version} says nothing of why it is there"
    own = {canonicalize_name(r.name) for r in own_requirements()}
    reached = set(own)
    while True:
        more = {
            name
            for name, (_, _, reasons) in pins.items()
            if name not in reached
            and any(canonicalize_name(r.split()[0]) in reached for r in reasons if r not in OWN)
        }
        if not more:
            break
        reached |= more
    assert set(pins) - reached == set(), "pinned for nothing gcjob needs"
    for name in own:
        assert any(r in OWN for r in pins[name][2]), f"{name}: not said to be gcjob's own"


def test_the_dockerfile_installs_the_lock_by_hash_and_gcjob_without_resolving() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    runs = [" ".join(r.split()) for r in re.findall(r"^RUN (.*?)(?<!\\)$", dockerfile, re.M | re.S)]
    installs = [
        step.strip()
        for run in runs
        for step in run.replace("\\ ", "").split("&&")
        if "pip install" in step
    ]
    assert installs == [
        "/opt/gcjob/bin/pip install --no-compile --require-hashes -r requirements.lock",
        "/opt/gcjob/bin/pip install --no-compile --no-deps --no-build-isolation .",
    ]
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert "!requirements.lock" in ignored  # in the build context
    assert "COPY requirements.lock ./" in dockerfile


BASH = shutil.which("bash")
GCJOB = Path(sys.executable).parent / "gcjob"  # the console script, as a shell runs it


def completions(line: str) -> list[str]:
    """What bash completes for `line` (the cursor at its end), with the script gcjob prints
    for `_GCJOB_COMPLETE=bash_source`, sourced as docs/operating.md says."""
    assert BASH is not None
    script = f"""
eval "$(_GCJOB_COMPLETE=bash_source gcjob)"
COMP_WORDS=({line})
[[ "{line}" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
_gcjob_completion gcjob
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    done = subprocess.run(
        [BASH, "-c", script],
        env={"PATH": f"{GCJOB.parent}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completes_commands_and_flags_from_the_script_gcjob_prints() -> None:
    assert GCJOB.is_file(), "gcjob installed beside this Python (pip install -e .)"
    source = subprocess.run(
        [str(GCJOB)],
        env={"_GCJOB_COMPLETE": "bash_source", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "complete -o nosort -F _gcjob_completion gcjob" in source
    assert completions("gcjob sw") == ["sweep"]
    assert set(completions("gcjob ")) >= {"sweep", "explain", "restore"}
    assert completions("gcjob sweep --max-del") == ["--max-deletions", "--max-delete-percent"]
    # explain's and restore's TARGET: its KIND/ (issue 51 item 11), every name they take.
    assert completions("gcjob explain httproutes") == ["httproutes/"]
    assert "cm/" in completions("gcjob explain c")
    assert "resourcebinding/" in completions("gcjob restore rec.jsonl resourceb")
