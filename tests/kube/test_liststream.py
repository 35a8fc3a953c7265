"""ListStream: a list answer decoded item by item, whatever the chunk boundaries."""

from __future__ import annotations

import gc
import json
import weakref
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gcjob.kube.liststream import ListStream, ValueTooLarge
from gcjob.kube.transport import NestedTooDeeply


def _item(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"cm-{i}", "annotations": {"a": 'é"\\,]}' * (i % 3)}}}


LIST = {
    "kind": "PartialObjectMetadataList",
    "apiVersion": "meta.k8s.io/v1",
    "metadata": {"resourceVersion": "42", "continue": "tok"},
    "items": [_item(i) for i in range(7)] + [12, None, "x"],
}


def _decode(body: bytes, chunk: int, **kwargs: Any) -> tuple[list[Any], dict[str, Any]]:
    items: list[Any] = []
    stream = ListStream(items.append, **kwargs)
    for start in range(0, len(body), chunk):
        stream.feed(body[start : start + chunk])
    return items, stream.end()


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 100_000])
@pytest.mark.parametrize("indent", [None, 2])
def test_items_arrive_whole_whatever_the_chunks(chunk: int, indent: int | None) -> None:
    body = json.dumps(LIST, indent=indent, ensure_ascii=False).encode()
    items, head = _decode(body, chunk)
    assert items == LIST["items"]
    assert head == {k: v for k, v in LIST.items() if k != "items"}


def test_each_item_goes_out_as_soon_as_its_bytes_are_in() -> None:
    seen: list[Any] = []
    stream = ListStream(seen.append)
    stream.feed(b'{"kind":"List","items":[{"a":1},{"b":')
    assert seen == [{"a": 1}]
    stream.feed(b"2}")  # complete, but a following byte is needed to know it ended
    stream.feed(b"]}")
    assert seen == [{"a": 1}, {"b": 2}]
    assert stream.end() == {"kind": "List"}


def test_a_number_cut_by_a_chunk_is_not_taken_early() -> None:
    items, _ = _decode(b'{"items":[12345]}', 3)
    assert items == [12345]


def test_metadata_after_the_items_is_read_too() -> None:
    items, head = _decode(b'{"items":[{"a":1}],"metadata":{"continue":"c"}}', 5)
    assert items == [{"a": 1}]
    assert head["metadata"]["continue"] == "c"


@pytest.mark.parametrize("body", [b'{"items":null}', b'{"items": []}', b'{ "items" : [ ] }'])
def test_an_empty_list_is_empty(body: bytes) -> None:
    assert _decode(body, 4) == ([], {})


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"kind":"List"}', "list without items"),
        (b'{"items":{}}', "items is not a list"),
        (b'{"items":"x"}', "items is not a list"),
        (b'{"items":nul}', "malformed"),
        (b'[{"a":1}]', "expected '{'"),
        (b'{"items":[{"a":1}{"b":2}]}', "between items"),
        (b'{"items":[{"a":1},]}', "malformed"),
        (b'{"items":[{"a":1}]', "ends inside"),
        (b'{"items":[{"a":1', "malformed"),
        (b'{"items":[]} x', "text after"),
        (b'{"items":[]}{}', "text after"),
        (b"", "ends inside"),
        (b'{"items":["\xff"]}', "utf-8"),
    ],
)
def test_malformed_answers_are_value_errors(body: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=f"(?i){problem}"):
        _decode(body, 3)


def test_an_item_nested_too_deeply_is_refused_with_bounded_memory() -> None:
    """2 MB of `[` decode to a NestedTooDeeply, not a crash and not a tree of 2M lists."""
    deep = b"[" * 2_000_000 + b"]" * 2_000_000
    with pytest.raises(NestedTooDeeply):
        _decode(b'{"items":[{"a":1},' + deep + b"]}", 65536)


def test_items_before_a_too_deep_one_were_taken() -> None:
    items: list[Any] = []
    stream = ListStream(items.append)
    with pytest.raises(NestedTooDeeply):
        stream.feed(b'{"items":[{"a":1},' + b"[" * 5000 + b"]" * 5000 + b"]}")
    assert items == [{"a": 1}]


def test_one_value_over_the_limit_is_refused_before_it_is_decoded() -> None:
    huge = b'{"items":[{"a":"' + b"x" * 5000
    stream = ListStream(lambda item: None, max_value_chars=4096)
    with pytest.raises(ValueTooLarge):
        for start in range(0, len(huge), 512):
            stream.feed(huge[start : start + 512])


def test_many_values_each_under_the_limit_are_fine() -> None:
    body = json.dumps({"items": [{"a": "x" * 1000} for _ in range(50)]}).encode()
    items, _ = _decode(body, 512, max_value_chars=4096)
    assert len(items) == 50


def test_a_value_spanning_many_chunks_is_decoded_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failed try is repeated with each chunk while the value is under 64 KiB, then only
    once the text doubled: never one decode of a huge value per chunk."""
    from gcjob.kube import liststream

    calls = 0
    decode = liststream._DECODE

    def counting(text: str, start: int) -> tuple[Any, int]:
        nonlocal calls
        calls += 1
        return decode(text, start)

    monkeypatch.setattr(liststream, "_DECODE", counting)
    body = json.dumps({"items": [{"a": "x" * 1_000_000}]}).encode()
    items, _ = _decode(body, 1024)
    assert len(items) == 1
    assert calls < 80  # ~1000 chunks went in: 64 tries up to 64 KiB, then 64K->128K->...->1M


def test_a_value_under_the_limit_is_not_refused_for_the_values_after_it() -> None:
    """issue 20 item 7: with an upstream's 1 MiB limit, an item of 600 KiB followed by
    others was refused once the buffer past its start (it and the next) grew over the
    limit before the value was tried again."""
    body = json.dumps({"items": [{"a": "x" * 600_000}, {"a": "y" * 600_000}]}).encode()
    items, _ = _decode(body, 64 * 1024, max_value_chars=1024 * 1024)
    assert [len(i["a"]) for i in items] == [600_000, 600_000]


@given(
    sizes=st.lists(st.integers(0, 6000), min_size=1, max_size=8),
    chunk=st.integers(1, 9000),
    limit=st.integers(64, 5000),
)
def test_values_over_the_limit_and_only_they_are_refused(
    sizes: list[int], chunk: int, limit: int
) -> None:
    values = [{"a": "x" * size} for size in sizes]
    body = json.dumps({"items": values}).encode()
    fits = [len(json.dumps(v)) <= limit for v in values]
    items: list[Any] = []
    stream = ListStream(items.append, max_value_chars=limit)
    try:
        for start in range(0, len(body), chunk):
            stream.feed(body[start : start + chunk])
        stream.end()
    except ValueTooLarge:
        assert not all(fits)
        assert items == values[: fits.index(False)]  # every value before the first too large
    else:
        assert all(fits) and items == values


@given(chunk=st.integers(min_value=1, max_value=400))
def test_each_top_level_field_is_handed_on_as_soon_as_it_is_decoded(chunk: int) -> None:
    """The continue token is known before any item is (what lets the next page be asked for
    while this one is decoded); `end()` still says what the answer ended with."""
    body = json.dumps(LIST).encode()
    seen: list[tuple[str, Any, int]] = []
    items: list[Any] = []
    stream = ListStream(
        items.append, on_field=lambda key, value: seen.append((key, value, len(items)))
    )
    for start in range(0, len(body), chunk):
        stream.feed(body[start : start + chunk])
    head = stream.end()

    assert [(key, before) for key, _, before in seen] == [
        ("kind", 0),
        ("apiVersion", 0),
        ("metadata", 0),
    ]
    assert seen[2][1] == {"resourceVersion": "42", "continue": "tok"}
    assert head == {key: value for key, value, _ in seen}
    assert items == LIST["items"]


def test_a_stream_is_freed_by_its_last_reference_not_by_the_cyclic_collector() -> None:
    """A stream holds what it feeds (a scan's sink): were the stream in a cycle, the sink
    would outlive the list until the collector ran."""

    class Sink:
        def __init__(self) -> None:
            self.items: list[Any] = []

    gc.collect()
    gc.disable()
    try:
        sink = Sink()
        stream = ListStream(sink.items.append)
        stream.feed(json.dumps(LIST).encode())
        stream.end()
        left, freed = weakref.ref(sink), weakref.ref(stream)
        del sink, stream
        assert left() is None and freed() is None
    finally:
        gc.enable()
