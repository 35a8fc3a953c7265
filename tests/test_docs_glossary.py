"""The glossary (docs/glossary.md) is in alphabetical order, as it says, and complete: every
term the docs define is one of its entries.

How a term is told apart: the glossary defines a term by an entry, a paragraph that opens with
the term in bold and a full stop, `**Term.**` or `**Term (another name).**`, and names a
narrower term in bold inside an entry (`**backlog**` in the drain cap's). Every other page sets
the terms it leans on in italics (`*hub*`: docs/rules.md says so), and keeps italics for that
alone (emphasis is bold), so every word in italics in the README or docs/ must be a glossary
term, its plural, or one of its other names."""

from __future__ import annotations

import re

from tests.test_docs import DOCS, PAGES, _prose

GLOSSARY = DOCS / "glossary.md"
ENTRY = re.compile(r"^\*\*(?P<term>[^*\n]+?)\.\*\*", re.M)
BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
ITALIC = re.compile(
    r"(?<![\w*\\])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])"
    r"|(?<![\w\\])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?!\w)"
)


def _entries() -> list[str]:
    """The glossary's terms, in the page's order, as written (the bold part of each entry)."""
    return ENTRY.findall(GLOSSARY.read_text("utf-8"))


def _sort_key(term: str) -> str:
    """Alphabetical as a reader reads it: case, backticks and other punctuation aside."""
    return re.sub(r"[^a-z0-9 ]", "", term.lower())


def _names(term: str) -> set[str]:
    """An entry's names: `Cell (member cluster)` is both `cell` and `member cluster`; a name in
    backticks (`--grace`) is a flag, not a word."""
    names = {term.split(" (")[0]}
    names.update(n.strip() for n in re.findall(r"\(([^)]*)\)", term))
    return {re.sub(r"`", "", n).strip().lower() for n in names if not n.startswith("`")}


def _glossary_words() -> set[str]:
    words: set[str] = set()
    for term in _entries():
        words |= _names(term)
    # Narrower terms, in bold inside an entry (the entries' own bold openings are terms above).
    body = ENTRY.sub("", GLOSSARY.read_text("utf-8"))
    words |= {b.lower() for b in BOLD.findall(body)}
    return words


def _italics() -> list[tuple[str, str]]:
    """Each word or phrase set in italics outside code, on every page, with its page."""
    found = []
    for page in PAGES:
        text = BOLD.sub("", _prose(page))
        for match in ITALIC.finditer(text):
            found.append((page.name, match[1] or match[2]))
    return found


def test_the_glossary_is_alphabetical() -> None:
    entries = _entries()
    assert len(entries) > 30, "the entries are not found: has their form changed?"
    keys = [_sort_key(term) for term in entries]
    out_of_place = [entries[i] for i in range(1, len(keys)) if keys[i] < keys[i - 1]]
    assert not out_of_place, f"out of alphabetical order: {out_of_place}"


def test_every_term_in_italics_is_in_the_glossary() -> None:
    words = _glossary_words()
    missing = [
        (page, term)
        for page, term in _italics()
        if term.lower() not in words and term.lower().removesuffix("s") not in words
    ]
    assert not missing, f"words in italics, not in docs/glossary.md: {missing}"


def test_the_checks_see_the_terms() -> None:
    """Not vacuous: the entries, their other names and the italics of docs/rules.md are seen."""
    words = _glossary_words()
    assert {"cell", "member cluster", "drain cap", "backlog", "grace", "hub"} <= words
    assert ("rules.md", "hub") in _italics()
    assert _sort_key("`city-*` policies") < _sort_key("Cluster name")


def test_the_glossary_names_every_sweep() -> None:
    from gcjob.model import Sweep

    [entry] = [p for p in GLOSSARY.read_text("utf-8").split("\n\n") if p.startswith("**Sweep.**")]
    assert all(f"`{sweep.value}`" in entry for sweep in Sweep), entry
