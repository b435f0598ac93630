"""Text from the data or the user, made safe for the pages the reports are read in.

``plain`` is for every Markdown writer (``report.md`` of run, compare, sweep, curve and bench): a
name there (a model's label, a category, a folder, a corpus, a config value) is read by many
Markdown viewers, and most of them pass raw HTML through. ``safe_href`` is for the links of the
HTML pages (``mlnb.report.html``), which a folder's name must not turn into a ``javascript:`` URL.
"""

from __future__ import annotations

from urllib.parse import quote

# HTML's characters as entities (every Markdown viewer decodes them, none runs them); Markdown's own
# characters backslash-escaped, so that a name never opens emphasis, code, a link, an image, a table
# cell or a heading
_MARKDOWN = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;",
                           **{c: "\\" + c for c in "\\`*_[]()#|!~"}})


def plain(text) -> str:
    """``text`` as literal Markdown on one line: line breaks and other control characters become
    spaces (a name never starts a line, a heading or a table row), runs of spaces one, HTML's
    ``& < >`` become entities and Markdown's characters are backslash-escaped."""
    words = "".join(c if c.isprintable() else " " for c in str(text)).split()
    return " ".join(words).translate(_MARKDOWN)


def safe_href(relative: str) -> str:
    """The href of a path relative to the page: ``./`` and each '/'-separated part percent-encoded, so
    that no part is read as a scheme (``javascript:x`` becomes ``./javascript%3Ax``), a host
    (``//host``, ``\\\\host``) or a query."""
    return "./" + "/".join(quote(part, safe="") for part in relative.split("/"))
