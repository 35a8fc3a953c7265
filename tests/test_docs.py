"""The README and docs/ stay what a newcomer can read in order (issue 21 item 6): a short README,
every relative link landing on a file and heading that exist, every page in the index, and the
README's commands the ones CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]

# A newcomer reads the README top to bottom in under ten minutes; the rest is in docs/.
README_MAX_BYTES = 15_000

LINK = re.compile(r"\[[^\]]*\]\(([^()\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def _prose(page: Path) -> str:
    """The page without its code: fenced blocks and inline code hold no links."""
    return INLINE_CODE.sub("", FENCE.sub("", page.read_text("utf-8")))


def _anchors(page: Path) -> set[str]:
    """The heading anchors GitHub gives the page: lowercased, punctuation dropped, spaces as
    hyphens, a repeated one numbered."""
    seen: dict[str, int] = {}
    for line in FENCE.sub("", page.read_text("utf-8")).splitlines():
        heading = re.match(r"#{1,6} (.+)", line)
        if heading is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        if count:
            seen[f"{slug}-{count}"] = 1
    return set(seen)


def _relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(_prose(page)) if not re.match(r"[a-z]+:", t)]


def test_the_readme_is_under_15_kb() -> None:
    size = len(README.read_bytes())
    assert size < README_MAX_BYTES, f"README.md is {size} bytes: move a topic to docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_and_heading(page: Path) -> None:
    for target in _relative_links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target}: no such file"
        if anchor:
            assert linked.suffix == ".md", f"{page.name}: {target}: an anchor into a non-page"
            assert anchor in _anchors(linked), f"{page.name}: {target}: no such heading"


def test_the_link_checker_sees_links_and_anchors() -> None:
    """The check above is not vacuous: it finds the README's links, and GitHub's anchors."""
    assert "docs/rules.md" in _relative_links(README)
    assert "docs/report.md#when-a-report-is-printed" in _relative_links(README)
    assert "why-a-lagging-cache-is-safe" in _anchors(DOCS / "operating.md")
    assert "what-gcjob-needs-rbac" in _anchors(DOCS / "operating.md")


def test_the_docs_index_lists_every_page_in_order() -> None:
    index = DOCS / "README.md"
    listed = re.findall(r"^\| (\d+) \| \[([^\]]+)\]\(([^)]+)\)", index.read_text("utf-8"), re.M)
    assert [int(number) for number, _, _ in listed] == list(range(1, len(listed) + 1))
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert sorted(target for _, _, target in listed) == sorted(pages)


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_every_page_opens_with_its_title_then_prose(page: Path) -> None:
    """Each page starts by saying what it is for: a title, then a sentence (not a table)."""
    text = re.sub(r"<!--.*?-->\n*", "", page.read_text("utf-8"), flags=re.S)
    title, _, rest = text.partition("\n\n")
    assert title.startswith("# ") and "\n" not in title
    assert re.match(r"[A-Za-z`]", rest), rest[:80]


def _ci_command(comment: str) -> str:
    """The command on the line after `comment` in .ci/run."""
    lines = (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
    return lines[lines.index(comment) + 1]


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    command = _ci_command("# The README's test command:")
    assert command.endswith(".venv/bin/pytest -q -n 4")
    assert f"```sh\n{command}\n```" in README.read_text("utf-8")


def test_the_readme_demo_command_is_the_one_ci_runs() -> None:
    command = _ci_command("# The README's demo command must keep working too.")
    demo = command.removesuffix(" >/dev/null")
    assert demo.startswith(".venv/bin/gcjob sweep --snapshot fixtures/demo")
    line = rf"^python3 -m venv \.venv && .* && {re.escape(demo)}$"
    assert re.search(line, README.read_text("utf-8"), re.M)


def test_the_repository_points_at_its_own_rules() -> None:
    """The rules live in docs/rules.md: no page sends a reader outside the repository."""
    for page in PAGES:
        assert "shared/domain.md" not in page.read_text("utf-8"), page.name
