"""gcjob.report.bounds: every stdout record is one line of at most MAX_RECORD_BYTES, cut
fields are named in `truncated`, and a record is shortened, never split."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from jsonschema import Draft202012Validator

from gcjob.model import PROJECT_COUNT_STATES, Action, Outcome, Sweep
from gcjob.report.bounds import (
    ELLIPSIS,
    LIST_ITEMS,
    MAX_RECORD_BYTES,
    NAME_CHARS,
    TEXT_CHARS,
    capped,
    json_line,
    line_bytes,
)
from gcjob.report.records import item_record, upstream_record
from testbed.model import NOW, ref

RUN_ID = "8d2c1f0e-3b4a-4c5d-9e6f-0a1b2c3d4e5f"
EMITTED = NOW + timedelta(seconds=1)


def item(**fields: Any) -> dict[str, Any]:
    outcome = Outcome(
        Sweep.COMPANIONS,
        ref("ConfigMap", fields.pop("name", "app-config")),
        Action.SKIPPED,
        fields.pop("reason", "referrer-live"),
        fields.pop("detail", "WorkloadDeployment web exists"),
        **fields,
    )
    return item_record(outcome, RUN_ID, NOW, True, EMITTED)


def keys(count: int, length: int = 40) -> tuple[str, ...]:
    return tuple(f"ns-{i:05d}/" + "w" * (length - 9) for i in range(count))


def test_the_limit_is_16_kib() -> None:
    # containerd and CRI-O split lines longer than max_container_log_line_size (16384)
    assert MAX_RECORD_BYTES == 16384


def test_a_record_exactly_at_the_limit_is_whole_and_one_byte_more_is_shortened(
    validator: Draft202012Validator,
) -> None:
    # Every echoed field near its cap, and a detail sized so that the line, newline
    # included, is exactly MAX_RECORD_BYTES.
    def base(gateway_chars: int) -> dict[str, Any]:
        return item(
            name="\x01" * NAME_CHARS,  # 6 bytes each as JSON (\u0001)
            cluster="c" * NAME_CHARS,
            referrers=keys(LIST_ITEMS, NAME_CHARS),
            gateways=keys(LIST_ITEMS, gateway_chars),
            detail="",
        )

    def room(record: dict[str, Any]) -> int:
        return MAX_RECORD_BYTES - line_bytes(json_line(record))

    chars = next(c for c in range(NAME_CHARS, 10, -1) if 0 < room(base(c)) <= TEXT_CHARS)
    at_limit = dict(base(chars), detail="d" * room(base(chars)))
    line = json_line(at_limit)
    assert line_bytes(line) == MAX_RECORD_BYTES
    assert json.loads(line) == at_limit  # whole: nothing cut, no `truncated`
    validator.validate(json.loads(line))

    over = dict(at_limit, detail=at_limit["detail"] + "d")
    line = json_line(over)
    assert line_bytes(line) <= MAX_RECORD_BYTES
    shortened = json.loads(line)
    validator.validate(shortened)
    # the least-needed field goes, whole, and is named; the rest is untouched
    assert shortened == {
        **{k: v for k, v in over.items() if k != "referrers"},
        "truncated": {"referrers": LIST_ITEMS},
    }


def test_fields_are_dropped_least_needed_first_and_required_ones_emptied(
    validator: Draft202012Validator,
) -> None:
    record = item(referrers=keys(20), gateways=keys(20), detail="x" * 900)
    without_referrers = {k: v for k, v in record.items() if k != "referrers"}
    without_both = {k: v for k, v in without_referrers.items() if k != "gateways"}
    expected = [
        {**without_referrers, "truncated": {"referrers": 20}},
        {**without_both, "truncated": {"referrers": 20, "gateways": 20}},
        {
            **without_both,
            "detail": "",
            "truncated": {"referrers": 20, "gateways": 20, "detail": 900},
        },
    ]
    for shorter in expected:
        limit = line_bytes(json.dumps(shorter, ensure_ascii=False))
        line = json_line(record, limit)
        assert line_bytes(line) <= limit
        assert json.loads(line) == shorter
        validator.validate(shorter)


def test_last_resort_cuts_every_string_but_keeps_the_envelope(
    validator: Draft202012Validator,
) -> None:
    record = item(name="n" * 300, detail="")
    line = json_line(record, 500)
    assert line_bytes(line) <= 500
    shortened = json.loads(line)
    validator.validate(shortened)
    for key in ("record", "run_id", "time", "version", "sweep", "action", "reason"):
        assert shortened[key] == record[key]
    assert shortened["name"] == "n" * 63 + ELLIPSIS
    assert shortened["truncated"] == {"name": 300}


def test_each_echoed_field_has_its_own_cap() -> None:
    hostile = item(
        name="n" * 1000,
        detail="no WorkloadDeployment named " + ", ".join(["w"] * 50_000),
        referrers=keys(10_000),
        cluster="c" * 5000,
    )
    out = capped(hostile)
    assert len(out["name"]) == NAME_CHARS and out["name"].endswith(ELLIPSIS)
    assert len(out["detail"]) == TEXT_CHARS
    assert len(out["referrers"]) == LIST_ITEMS
    assert out["referrers"] == list(keys(LIST_ITEMS))
    assert len(out["cluster"]) == NAME_CHARS
    assert out["truncated"] == {
        "name": 1000,
        "detail": len(hostile["detail"]),
        "referrers": 10_000,
        "cluster": 5000,
    }
    assert hostile["referrers"] == list(keys(10_000))  # the record itself is left whole


def test_a_cut_list_item_is_named_by_its_index() -> None:
    out = capped(item(gateways=("ns/" + "g" * 1000, "ns/short")))
    assert out["gateways"][1] == "ns/short"
    assert len(out["gateways"][0]) == NAME_CHARS
    assert out["truncated"] == {"gateways.0": 1003}


def test_upstream_record_caps(validator: Draft202012Validator) -> None:
    state = {
        "status": "unavailable",
        "detail": "HTTP 500: " + "m" * 100_000,
        "server": "https://up.example/" + "p" * 5000,
        "routes": 3,
        "gateways_found": 0,
    }
    record = upstream_record("proj-a", state, 4, RUN_ID, EMITTED)
    line = json_line(record)
    assert line_bytes(line) <= MAX_RECORD_BYTES
    out = json.loads(line)
    validator.validate(out)
    assert out["truncated"] == {"detail": len(state["detail"]), "server": len(state["server"])}
    assert out["api_requests"] == 4


def test_summary_caps_namespaces_and_messages(validator: Draft202012Validator) -> None:
    summary: dict[str, Any] = {
        "record": "summary",
        "run_id": RUN_ID,
        "time": "2026-07-01T12:00:01.000Z",
        "version": "1.0.0",
        "hub": "https://hub.example",
        "dry_run": True,
        "started": "2026-07-01T12:00:00Z",
        "finished": "2026-07-01T12:00:01Z",
        "decided_at": "2026-07-01T12:00:00Z",
        "min_age_seconds": 300,
        "grace_seconds": 600,
        "namespaces": {"included": [f"ns-{i}" for i in range(5000)], "excluded": []},
        "sweeps": {
            "routes": {"status": "incomplete", "detail": "e" * 20_000, "scanned": 0, "in_scope": 0}
        },
        "counts": {},
        "marks": {},
        "would_delete": {},
        "would_delete_if_enforced": {},
        "writes": {"counted": 0, "max": 1000},
        "totals": {"deleted": 0},
        "upstream_counts": {"ok": 1000},
        "projects": dict.fromkeys(PROJECT_COUNT_STATES, 0),
        "api_requests": {"total": 2001, "by_target": {"hub": 1, "upstream": 2000}},
        "exit_code": 3,
        "exit_reason": "x" * 50_000,
    }
    line = json_line(summary)
    assert line_bytes(line) <= MAX_RECORD_BYTES
    out = json.loads(line)
    validator.validate(out)
    assert out["truncated"] == {
        "exit_reason": 50_000,
        "sweeps.routes.detail": 20_000,
        "namespaces.included": 5000,
    }
    assert out["namespaces"]["included"] == [f"ns-{i}" for i in range(LIST_ITEMS)]
    assert (out["exit_code"], out["upstream_counts"], out["totals"]) == (
        3,
        {"ok": 1000},
        {"deleted": 0},
    )


def test_control_and_invisible_characters_are_escaped_in_json_lines() -> None:
    hostile = "evil\n\x1b]0;pwned\x07\x1b[32m\x9b31m\u202egnp.exe\u2028\u2066\ud800"
    line = json_line(item(name=hostile, detail=hostile))
    assert "\n" not in line
    for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\u2028", "\u2066", "\ud800"):
        assert raw not in line
    out = json.loads(line)
    assert out["name"] == hostile  # escaped as JSON, the value itself is unchanged
    assert line.encode("utf-8")  # a lone surrogate would not encode if left raw
