"""A griffe extension (mkdocs.yml: the python handler's ``extensions``) that keeps the layout of mlnb's
docstrings when they are rendered as Markdown.

mlnb's docstrings are written for a terminal (``help()``, an editor): formulas and small tables of
options aligned with spaces, and doctest examples. Markdown would join such lines into one
paragraph, and read ``>>>`` as three nested quotes. Before the numpy-style sections (``Parameters``
and the like, which the numpy parser reads itself), this fences

* every doctest example (``>>>`` lines, ``...`` continuations and the output up to a blank line) as
  a ``pycon`` block, and
* every paragraph laid out with spaces — two or more of its lines with a gap of two or more spaces
  between words, or lines indented deeper than the paragraph's first — as a ``text`` block,

and leaves every other paragraph to Markdown. The docstrings themselves are not changed.
"""

from __future__ import annotations

import re

import griffe

SECTION_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
ALIGNED_GAP = re.compile(r"\S {2,}\S")
FENCE = "```"


def _paragraphs(lines: list[str]):
    """(is_blank, lines) runs."""
    run: list[str] = []
    blank = None
    for line in lines:
        is_blank = not line.strip()
        if run and is_blank != blank:
            yield blank, run
            run = []
        run.append(line)
        blank = is_blank
    if run:
        yield blank, run


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _laid_out(paragraph: list[str]) -> bool:
    """True when the paragraph's line breaks and spaces carry meaning (a table, aligned formulas)."""
    if _indent(paragraph[0]) >= 4 or paragraph[0].lstrip().startswith((FENCE, "* ", "- ", "| ")):
        return False  # already code, a list or a table: Markdown keeps it
    aligned = sum(bool(ALIGNED_GAP.search(line.strip())) for line in paragraph)
    deeper = any(_indent(line) >= _indent(paragraph[0]) + 2 for line in paragraph[1:])
    return aligned >= 2 or (aligned >= 1 and len(paragraph) == 1) or deeper


def _fenced(paragraph: list[str], language: str) -> list[str]:
    indent = min(_indent(line) for line in paragraph if line.strip())
    return [f"{FENCE}{language}", *(line[indent:] for line in paragraph), FENCE]


def _doctests_fenced(paragraph: list[str]) -> list[str]:
    """The paragraph with each run from a ``>>>`` line to the paragraph's end fenced as ``pycon``."""
    for i, line in enumerate(paragraph):
        if line.lstrip().startswith(">>>"):
            head = paragraph[:i]
            return (head and _layout_one(head)) + _fenced(paragraph[i:], "pycon")
    return _layout_one(paragraph)


def _layout_one(paragraph: list[str]) -> list[str]:
    return _fenced(paragraph, "text") if _laid_out(paragraph) else paragraph


def markdown_layout(text: str) -> str:
    """The docstring ``text`` with its laid-out paragraphs and doctests fenced (see the module docstring)."""
    lines = text.splitlines()
    end = next((i - 1 for i in range(1, len(lines)) if SECTION_UNDERLINE.match(lines[i]) and lines[i - 1].strip()),
               len(lines))
    out: list[str] = []
    in_fence = False
    for blank, paragraph in _paragraphs(lines[:end]):
        if blank:
            out += paragraph
            continue
        if in_fence or any(line.lstrip().startswith(FENCE) for line in paragraph):
            in_fence ^= sum(line.lstrip().startswith(FENCE) for line in paragraph) % 2 == 1
            out += paragraph
            continue
        out += _doctests_fenced(paragraph)
    return "\n".join(out + lines[end:])


class DocstringLayout(griffe.Extension):
    """Applies :func:`markdown_layout` to every docstring griffe loads."""

    def on_instance(self, *, obj, **kwargs) -> None:  # noqa: ARG002  (griffe passes node, agent, ...)
        if obj.docstring is not None:
            obj.docstring.value = markdown_layout(obj.docstring.value)
