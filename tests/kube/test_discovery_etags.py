"""Discovery documents shared by verified ETag within one run (issue 50 item 2): the pure parts.
A document is kept only under the ETag that is its own SHA-512 as kube-apiserver makes it; a
304 stands only for the document of the ETag it was asked with. The real servers' own answers
and a run across two upstreams: tests/e2e/test_discovery_sharing_e2e.py."""

from __future__ import annotations

import hashlib
import json
import threading

from hypothesis import given
from hypothesis import strategies as st

from gcjob.kube.discovery import SharedDocuments, verified_etag

PREFIX = b'{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2",'
KEY = ("/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")


def served(items: list[object]) -> tuple[bytes, str]:
    """A body and the ETag kube-apiserver sends with it: the SHA-512 of the JSON without its
    type (k8s.io/apiserver etag.go calculateETag), the body that JSON typed, with a newline."""
    untyped = json.dumps({"metadata": {}, "items": items}, separators=(",", ":")).encode()
    body = PREFIX + untyped[1:] + b"\n"
    return body, '"' + hashlib.sha512(untyped).hexdigest().upper() + '"'


ITEMS = st.lists(st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3), max_size=4)


@given(ITEMS)
def test_the_servers_own_etag_is_verified(items: list[object]) -> None:
    body, etag = served(items)
    assert verified_etag(etag, body) == etag


@given(ITEMS, st.binary(min_size=1, max_size=16), st.integers(min_value=0))
def test_any_other_body_under_that_etag_is_not(items: list[object], junk: bytes, at: int) -> None:
    body, etag = served(items)
    i = at % (len(body) + 1)
    other = body[:i] + junk + body[i:]
    assert verified_etag(etag, other) is None
    assert verified_etag(etag, body[:-1]) is None  # no newline: another body
    assert verified_etag(etag, body + b"\n") is None


@given(ITEMS)
def test_weak_missing_lowercase_or_plain_sha_etags_are_not(items: list[object]) -> None:
    body, etag = served(items)
    assert verified_etag(None, body) is None
    assert verified_etag("W/" + etag, body) is None
    assert verified_etag(etag.lower(), body) is None
    assert verified_etag(etag.strip('"'), body) is None
    # The SHA-512 of the body as sent is not how the server makes it: not verified either,
    # so two forms can never name two bodies with one ETag.
    assert verified_etag('"' + hashlib.sha512(body).hexdigest().upper() + '"', body) is None


@given(st.binary(max_size=200), st.text(max_size=140))
def test_nothing_but_the_servers_form_is_verified(body: bytes, etag: str) -> None:
    verified = verified_etag(etag, body)
    if verified is not None:
        untyped = b"{" + body[len(PREFIX) : -1]
        assert body.startswith(PREFIX)
        assert verified == '"' + hashlib.sha512(untyped).hexdigest().upper() + '"'


# Any text a header can carry (urllib3 decodes it as latin-1), at exactly the length of the
# server's ETag: compare_digest raised TypeError on non-ASCII and ended the run (the audit).
HEADER_TEXT = st.text(st.characters(max_codepoint=0xFF), min_size=128, max_size=128)


@given(HEADER_TEXT)
def test_a_hostile_etag_of_any_header_text_verifies_nothing_and_raises_nothing(text: str) -> None:
    body, etag = served([])
    hostile = f'"{text}"'
    assert verified_etag(hostile, body) in (None, etag)
    documents = SharedDocuments()
    for cluster in ("a", "b"):
        documents.keep(KEY, etag, body, cluster)
    assert documents.not_modified(KEY, etag, hostile) in (None, body)
    assert documents.not_modified(KEY, hostile, etag) is None  # never offered: not ours


def test_a_document_is_offered_once_two_clusters_sent_it_and_a_304_gives_it_back() -> None:
    body, etag = served([{"metadata": {"name": "gateway.networking.k8s.io"}}])
    documents = SharedDocuments()
    assert documents.offer(KEY) is None
    documents.keep(KEY, etag, body, "one")
    documents.asked(KEY)
    assert documents.offer(KEY) is None  # one cluster's surface is never named to another
    documents.keep(KEY, etag, body, "one")  # the same cluster again is not a second
    documents.asked(KEY)
    assert documents.offer(KEY) is None
    documents.keep(KEY, etag, body, "two")
    documents.asked(KEY)
    assert documents.offer(KEY) == etag
    assert documents.not_modified(KEY, etag, etag) == body


def test_a_forged_etag_keeps_nothing_and_a_304_for_it_gives_nothing() -> None:
    body, etag = served([{"metadata": {"name": "gateway.networking.k8s.io"}}])
    forged, _ = served([{"metadata": {"name": "evil.example"}}])
    documents = SharedDocuments()
    for cluster in ("hostile-1", "hostile-2", "hostile-3"):
        documents.offer(KEY)
        documents.keep(KEY, etag, forged, cluster)  # another's ETag on its own body
        documents.asked(KEY)
    assert documents.offer(KEY) is None
    documents.asked(KEY)
    assert documents.not_modified(KEY, etag, etag) is None
    for cluster in ("a", "b"):
        documents.keep(KEY, etag, body, cluster)
    assert documents.not_modified(KEY, etag, etag) == body


def test_a_304_not_asked_for_or_naming_another_etag_gives_nothing() -> None:
    body, etag = served([])
    other, other_etag = served([{"metadata": {"name": "x"}}])
    documents = SharedDocuments()
    for cluster in ("a", "b"):
        documents.keep(KEY, etag, body, cluster)
        documents.keep(KEY, other_etag, other, cluster)
    assert documents.not_modified(KEY, None, etag) is None  # asked with no ETag
    assert documents.not_modified(KEY, etag, None) is None  # the 304 names none
    assert documents.not_modified(KEY, etag, other_etag) is None  # names another
    assert documents.not_modified(KEY, etag, etag) == body
    assert documents.not_modified(("/api", KEY[1]), etag, etag) is None  # another request


def test_kept_documents_are_bounded_and_a_shared_one_stays() -> None:
    body, etag = served([])
    documents = SharedDocuments()
    for cluster in ("a", "b"):
        documents.keep(KEY, etag, body, cluster)
    for i in range(5 * SharedDocuments.MAX_KEPT):
        hostile, hostile_etag = served([{"metadata": {"name": f"g{i}"}}])
        documents.keep(KEY, hostile_etag, hostile, f"hostile-{i}")
    assert len(documents._kept[KEY]) == SharedDocuments.MAX_KEPT
    assert documents.offer(KEY) == etag
    assert documents.not_modified(KEY, etag, etag) == body


def test_until_one_is_offered_two_ask_whole_and_the_rest_wait_a_bounded_time() -> None:
    now = [0.0]
    documents = SharedDocuments(clock=lambda: now[0])
    assert documents.offer(KEY) is None
    assert documents.offer(KEY) is None
    got: list[str | None] = []
    waiting = threading.Thread(target=lambda: got.append(documents.offer(KEY)))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive()  # two in flight: the third waits for them
    body, etag = served([])
    documents.keep(KEY, etag, body, "a")
    documents.asked(KEY)
    documents.keep(KEY, etag, body, "b")
    documents.asked(KEY)
    waiting.join(5)
    assert got == [etag]
    # A first server that never answers holds the others no longer than FIRST_WAIT.
    silent = SharedDocuments(clock=lambda: now[0])
    silent.offer(KEY), silent.offer(KEY)
    late: list[str | None] = []
    third = threading.Thread(target=lambda: late.append(silent.offer(KEY)))
    third.start()
    third.join(0.2)
    now[0] += SharedDocuments.FIRST_WAIT + 0.1
    with silent._changed:
        silent._changed.notify_all()
    third.join(5)
    assert late == [None]
