"""gcjob.settings: parse_duration (the --min-age and --timeout values), and Settings that refuse
what the command line refuses."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.flags import bounded
from gcjob.settings import BOUNDS, Settings, SettingsError, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("5m", 300),
        ("1h", 3600),
        ("1h30m", 5400),
        ("1h30m15s", 5415),
        ("2m30s", 150),
        ("90", 90),
        ("0", 0),
        ("0s", 0),
        ("1.5", 1.5),
        (" 5m ", 300),
        ("0.001", 0.001),
        ("1.5m", 90),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "5x",
        "-1",
        "-5m",
        "m",
        "h",
        "s",
        "5m1h",
        "1 h",
        "five",
        "nan",
        "1d",
        "inf",
        "1e20",
        "1_000",
        "1_0m",
        "1e-300",
        "1e2",
        "+5",
        "0.0000001",
        ".5",
        "5.",
        "٣٠٠",
        "\uff11\uff10m",  # full-width digits
        "1.5e1s",
    ],
)
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@given(st.text(max_size=12))
def test_any_text_is_a_duration_of_ascii_digits_or_refused(text: str) -> None:
    """Generated: whatever an operator or a GCJOB_* variable holds, the answer is a duration
    in range written in ASCII digits and h/m/s, or a ValueError; a nonzero text is never 0."""
    try:
        duration = parse_duration(text)
    except ValueError:
        return
    assert text.strip().isascii()
    assert timedelta(0) <= duration <= timedelta(days=366)
    if any(c in "123456789" for c in text):
        assert duration > timedelta(0)


# -- Settings check themselves -------------------------------------------------------------
# What tests, benches and the lifecycle build is held to what the command line accepts.

DEFAULTS = Settings()
LATER = datetime(2026, 11, 20, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("given", "field", "problem"),
    [
        ({"namespaces": ("kube-system",)}, "namespaces", "reserved"),
        ({"namespaces": ("",)}, "namespaces", "an empty namespace"),
        ({"exclude_namespaces": ("Not_A_Name",)}, "exclude_namespaces", "not a namespace"),
        ({"namespaces": ("a",), "exclude_namespaces": ("a",)}, "namespaces", "both"),
        ({"lock_namespace": "karmada-system"}, "lock_namespace", "reserved"),
        ({"lock_name": "No Name"}, "lock_name", "Lease name"),
        ({"drop_copy_kinds": ("Pod",)}, "drop_copy_kinds", "not a kind"),
        ({"notify_webhook": "ftp://example.com/x"}, "notify_webhook", ""),
        ({"project_api": "not a url"}, "project_api", ""),
        ({"page_size": 0}, "page_size", "range"),
        ({"upstream_concurrency": 257}, "upstream_concurrency", "range"),
        ({"max_delete_percent": float("nan")}, "max_delete_percent", "range"),
        ({"write_qps": -1.0}, "write_qps", "range"),
        ({"connect_timeout": timedelta(0)}, "connect_timeout", "more than 0s"),
        ({"grace": timedelta(days=400)}, "grace", "1 year"),
        ({"min_age": timedelta(microseconds=10)}, "min_age", "millisecond"),
        ({"hub_kubeconfig": "  "}, "hub_kubeconfig", "is empty"),
        ({"sweeps": ()}, "sweeps", "sweep"),
        ({"log_format": "xml"}, "log_format", "xml"),
        ({"list_from": "etcd"}, "list_from", "etcd"),  # the command line maps the old name
        ({"now": datetime(2026, 11, 20, 12)}, "now", "zone"),
        ({"ignored_variables": ("GCJOB_MIN_AGE",)}, "ignored_variables", "GCJOB_MIN_AGE"),
        ({"delete": True, "snapshot": "demo"}, None, "--snapshot is a dry run"),
        ({"delete": True, "now": LATER}, None, "--now cannot be combined with --delete"),
        ({"drain": True}, None, "--drain needs --delete"),
        ({"snapshot": "demo", "hub_context": "hub"}, None, "--snapshot replaces the hub"),
        ({"snapshot": "demo", "upstream_kubeconfig": "u.yaml"}, None, "DIR/upstream"),
    ],
)
def test_settings_refuse_what_the_command_line_refuses(
    given: dict[str, Any], field: str | None, problem: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        Settings(**given)
    assert refused.value.field == field
    assert problem in str(refused.value)


def test_a_good_deleting_run_is_accepted_and_replace_is_checked_too() -> None:
    settings = Settings(delete=True, namespaces=("ns-a",), drain=True, lock_namespace="ops")
    assert settings.delete and settings.drain
    with pytest.raises(SettingsError):
        dataclasses.replace(settings, now=LATER)


def test_every_duration_is_a_timedelta() -> None:
    """One unit: no float of seconds among the settings; the three floats are a rate and two %."""
    floats = [
        f.name for f in dataclasses.fields(Settings) if type(getattr(DEFAULTS, f.name)) is float
    ]
    assert floats == ["max_delete_percent", "drain_pace", "write_qps"]
    durations = [f.name for f in dataclasses.fields(Settings) if f.type == "timedelta"]
    assert {"connect_timeout", "read_timeout", "list_timeout", "grace", "timeout"} <= set(durations)
    assert all(isinstance(getattr(DEFAULTS, name), timedelta) for name in durations)


@given(field=st.sampled_from(sorted(BOUNDS)), number=st.integers(-3, 20_000) | st.floats())
def test_a_number_the_flag_refuses_settings_refuse(field: str, number: float) -> None:
    """Generated: the flag's type and Settings take their bounds from one table, and agree on
    every number (nan and inf included)."""
    if isinstance(number, float) and not isinstance(getattr(DEFAULTS, field), float):
        number = int(number) if math.isfinite(number) else 0
    try:
        bounded(field).convert(str(number), None, None)
        flag_takes = True
    except click.BadParameter:
        flag_takes = False
    try:
        Settings(**{field: number})
        settings_take = True
    except SettingsError:
        settings_take = False
    assert flag_takes == settings_take, (field, number)
