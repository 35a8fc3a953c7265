"""`gcjob restore`: choosing what to put back, and its usage errors (gcjob/restore.py); each
object put back on the real server: tests/e2e/test_undo_e2e.py."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gcjob import undo
from gcjob.cli import cli, main
from gcjob.explain import parse_target
from gcjob.restore import select

AT = datetime(2026, 11, 24, 3, 15, tzinfo=UTC)
CONFIGMAP = undo.Where("", "v1", "configmaps", "ConfigMap", True)
CONNECTOR = undo.Where("networking.datumapis.com", "v1alpha1", "connectors", "Connector", True)


def obj(kind: str, name: str, uid: str, owners: list[dict[str, Any]] | None = None) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": "ns-1", "uid": uid, "resourceVersion": "1"}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": kind, "metadata": meta}


def record(*outcomes: str) -> list[undo.Recorded]:
    """A copy (owned by its anchor), then its anchor, then a third object; their outcomes."""
    anchor_ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "anchor-1", "uid": "a"}
    entries = [
        undo.delete_entry(
            "r",
            "copies",
            CONNECTOR,
            obj("Connector", "web", "c", [anchor_ref]),
            AT,
            sensitive=False,
            hub="hub-uid",
        ),
        undo.delete_entry(
            "r",
            "copies",
            CONFIGMAP,
            obj("ConfigMap", "anchor-1", "a"),
            AT,
            sensitive=False,
            hub="hub-uid",
        ),
        undo.delete_entry(
            "r",
            "companions",
            CONFIGMAP,
            obj("ConfigMap", "other", "o"),
            AT,
            sensitive=False,
            hub="hub-uid",
        ),
    ]
    lines = [undo.line(e) for e in entries]
    lines += [
        undo.line(undo.outcome_entry("r", uid, outcome, "", AT))
        for uid, outcome in zip("cao", outcomes, strict=False)
    ]
    return undo.read_record(lines)


def test_without_targets_every_deleted_object_owners_first() -> None:
    chosen = select(record("deleted", "deleted", "failed:delete-failed"), ())
    assert [r.name for r in chosen] == ["anchor-1", "web"]


def test_targets_choose_by_name_or_uid_and_each_must_name_one() -> None:
    """A target is named as explain names one (its parser), or by uid."""
    recorded = record("deleted", "deleted", "deleted")
    named = (parse_target("connector/ns-1/web"), "o")
    assert [r.name for r in select(recorded, named)] == ["other", "web"]
    for short in ("cm/ns-1/other", "ConfigMap/ns-1/other", "configmaps/ns-1/other"):
        assert [r.name for r in select(recorded, (parse_target(short),))] == ["other"]
    with pytest.raises(ValueError, match="ConfigMap/ns-1/nothing: no delete of it"):
        select(recorded, (parse_target("cm/ns-1/nothing"),))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "No such file"),
        (b"\xff\xfe\n", "not UTF-8"),
        (b'{"record": "summary"}\n', "not a gcjob deletion record"),
    ],
)
def test_a_record_that_cannot_be_read_is_exit_2_with_one_line(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "deletions.jsonl"
    if content is not None:
        path.write_bytes(content)
    result = CliRunner().invoke(cli, ["restore", str(path)], standalone_mode=False)
    assert result.return_value == 2
    assert result.stdout == ""
    assert message in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr


def test_a_line_longer_than_gcjob_writes_is_never_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(undo, "MAX_LINE", 1000)  # the real cap is 24 MiB: a smaller one, same code
    path = tmp_path / "deletions.jsonl"
    path.write_text("x" * 5000)  # no newline: /dev/zero would be the same, unbounded
    result = CliRunner().invoke(cli, ["restore", str(path)], standalone_mode=False)
    assert result.return_value == 2
    assert result.stderr.strip() == f"gcjob: error: {path}:1: a line longer than gcjob ever writes"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("bogus/ns-1/x", "target kind 'bogus' is not one of configmap (cm), secret"),
        ("cm/ns-1", "is not KIND/NAMESPACE/NAME"),
        ("cm/NS/x", "is not a namespace name"),
        (" ", "an empty target"),
    ],
)
def test_a_target_explain_would_not_take_is_exit_2_before_the_record_is_read(
    tmp_path: Path, target: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["restore", str(tmp_path / "absent.jsonl"), target])

    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and message in err, err
    assert "No such file" not in err  # the target is refused first


def test_restore_says_up_front_what_it_will_not_do_and_takes_explains_kinds() -> None:
    help_text = " ".join(CliRunner().invoke(cli, ["restore", "--help"]).stdout.split())
    assert "What it will not do: put back a Secret" in help_text
    assert "a ResourceBinding that binds one" in help_text
    assert "--output, --log-format [text|json]" in help_text
    explain_help = " ".join(CliRunner().invoke(cli, ["explain", "--help"]).stdout.split())
    for name in ("configmap (cm)", "resourcebinding (rb)", "httpproxy", "connector", "gateway"):
        assert name in help_text and name in explain_help
