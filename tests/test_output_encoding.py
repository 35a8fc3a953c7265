"""Issue 20 item 16: the report (stdout, --report-file) and the logs (stderr) are UTF-8
whatever the locale says: an ASCII locale must not turn one annotation into an exit 70."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
REFERRER = "p/wéb-日本"
ENVIRONMENTS = {
    "PYTHONIOENCODING=ascii": {"PYTHONIOENCODING": "ascii"},
    "LC_ALL=POSIX PYTHONUTF8=0": {"LC_ALL": "POSIX", "LANG": "POSIX", "PYTHONUTF8": "0"},
}


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo hub, one companion's referrers naming `p/wéb-日本`."""
    directory = tmp_path_factory.mktemp("encoding") / "snap"
    shutil.copytree(DEMO, directory)
    path = directory / "hub" / "configmaps.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    annotations = document["items"][0]["metadata"]["annotations"]
    annotations["compute.datumapis.com/referenced-by"] = json.dumps([REFERRER], ensure_ascii=False)
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    return directory


def _gcjob(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_ALL", "LC_CTYPE")}
    env.pop("PYTHONIOENCODING", None)
    env.update(environment)
    return subprocess.run(
        [sys.executable, "-m", "gcjob", *args], env=env, capture_output=True, timeout=120
    )


@pytest.mark.parametrize("environment", ENVIRONMENTS.values(), ids=ENVIRONMENTS.keys())
@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_non_ascii_annotation_under_an_ascii_locale(
    snapshot: Path, tmp_path: Path, environment: dict[str, str], log_format: str
) -> None:
    report_file = tmp_path / "report.json"
    args = ["sweep", "--snapshot", str(snapshot), "--grace", "0", "--log-format", log_format]
    done = _gcjob(environment, *args, "--report-file", str(report_file))
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    stdout = done.stdout.decode("utf-8")  # strict: every byte is UTF-8
    assert REFERRER in stdout
    assert "internal-error" not in stdout
    report = json.loads(report_file.read_text(encoding="utf-8"))
    assert report["summary"]["exit_code"] == 0
    [item] = [i for i in report["items"] if i["name"] == "orphan-app-config"]
    assert REFERRER in item["detail"]


@pytest.mark.parametrize("environment", ENVIRONMENTS.values(), ids=ENVIRONMENTS.keys())
def test_stderr_and_explain_are_utf8_too(
    snapshot: Path, tmp_path: Path, environment: dict[str, str]
) -> None:
    missing = tmp_path / "日本.kubeconfig"
    done = _gcjob(environment, "sweep", "--hub-kubeconfig", str(missing))
    assert done.returncode == 2
    [line] = done.stderr.decode("utf-8").splitlines()  # strict: every byte is UTF-8
    # Under LC_ALL=POSIX Python reads the argument's bytes as undecodable: they come back
    # escaped (still UTF-8 output), never as a UnicodeEncodeError.
    assert "日本.kubeconfig" in line or "\\udce6\\udc97\\udca5" in line, line
    namespace = "ns-c7e2a9d4-1b3f-4e8a-a6d2-5f9b0c1e3a7d"
    target = f"cm/{namespace}/orphan-app-config"
    for output in ("text", "json"):
        done = _gcjob(
            environment, "explain", target, "--snapshot", str(snapshot), "--output", output
        )
        assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
        text = done.stdout.decode("utf-8")
        assert REFERRER in (
            text if output == "text" else json.dumps(json.loads(text), ensure_ascii=False)
        )
