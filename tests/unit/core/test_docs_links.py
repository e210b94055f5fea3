"""Every link in README.md and the documents under docs/ leads to a file of this repository: a relative link
that does not resolve, or one that leaves the repository (a path out of it, an absolute path, a URL), fails.

Links are Markdown's inline links and images, `[text](target)` and `![alt](target)`, outside code (fenced
blocks and inline code spans are skipped: a URL or path shown as an example is not a link)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.helpers.paths import REPO

pytestmark = pytest.mark.unit

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]

#: `[text](target)` or `![alt](target)`, the target up to a space (a title may follow) or the closing paren
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+).*?\1")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every link outside code."""
    found: list[tuple[int, str]] = []
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        found += [(number, match.group(1)) for match in LINK.finditer(CODE_SPAN.sub("", line))]
    return found


def problem(document: Path, target: str) -> str | None:
    """Why `target`, linked from `document`, is not a file of the repository (None: it is)."""
    if SCHEME.match(target) or target.startswith("//"):
        return "leaves the repository (a URL)"
    path_part = unquote(target.split("#", 1)[0])
    if not path_part:
        return None  # a link to a heading of the same document
    if path_part.startswith("/"):
        return "an absolute path"
    resolved = (document.parent / path_part).resolve()
    if not resolved.is_relative_to(REPO):
        return "leaves the repository"
    if not resolved.exists():
        return "no such file"
    return None


def test_the_link_finder_sees_links_and_skips_code() -> None:
    text = "\n".join(
        [
            'See [a](docs/a.md), ![b](b.png), [c](c.md#part) and [d](d.md "a title").',
            "`[not](inline.md)` and [e](e.md)",
            "```",
            "[not](fenced.md)",
            "```",
        ]
    )
    assert links(text) == [(1, "docs/a.md"), (1, "b.png"), (1, "c.md#part"), (1, "d.md"), (2, "e.md")]


def test_the_checker_refuses_what_is_not_a_file_of_the_repository() -> None:
    readme = REPO / "README.md"
    assert problem(readme, "docs/architecture.md") is None
    assert problem(readme, "docs/architecture.md#the-spine") is None
    assert problem(readme, "#status") is None
    assert problem(readme, "docs/no-such-page.md") == "no such file"
    assert problem(readme, "../outside.md") == "leaves the repository"
    assert problem(readme, "/etc/passwd") == "an absolute path"
    assert problem(readme, "https://example.com/guide") == "leaves the repository (a URL)"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_link_leads_to_a_file_of_the_repository(document: Path) -> None:
    bad = [
        f"{document.relative_to(REPO)}:{number}: {target}: {why}"
        for number, target in links(document.read_text(encoding="utf-8"))
        if (why := problem(document, target)) is not None
    ]
    assert bad == []
