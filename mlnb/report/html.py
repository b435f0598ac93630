"""report.html of a results folder and index.html of a results root: pages that open offline.

``report.html`` is the folder's ``report.md`` as one self-contained page: every plot it shows is
embedded as a base64 PNG (``data:image/png;base64,...``), the style is inline, and it names no
URL outside the folder, so it opens from a copied folder, an e-mail attachment or a machine with
no network; its only links are relative ones to the folder's own files (config.toml,
metrics.csv, ...). ``index.html`` of a results root links every run's report (``mlnb.report.runs``
finds them) with the table ``mlnb runs`` prints.

The Markdown read is the subset ``mlnb.report.markdown`` writes: ``#`` headings, paragraphs,
``-`` lists, pipe tables, ``![name](plots/x.png)`` images, ``[text](file)`` links, ``**bold**``,
``*italic*``, `` `code` `` and backslash escapes. Every piece of text is HTML-escaped: category
names and labels come from the data and the config.
"""

from __future__ import annotations

import base64
import html
import os
import re
import tempfile
import warnings
from pathlib import Path

from mlnb.errors import MlnbWarning
from mlnb.report.runs import RunEntry, find_runs, headline_text

REPORT_HTML = "report.html"
INDEX_HTML = "index.html"
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 72rem; margin: 2rem auto;
       padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { border-bottom: 2px solid #ddd; padding-bottom: .3rem; }
h2 { border-bottom: 1px solid #eee; padding-bottom: .2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .9rem; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: right; }
th { background: #f4f4f4; }
td:first-child, th:first-child, .text { text-align: left; }
code { background: #f4f4f4; padding: 0 .2rem; border-radius: 3px; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #666; font-size: .85rem; }
.missing { color: #a00; }
"""

_INLINE = re.compile(r"\\(.)|`([^`]*)`|\*\*(.+?)\*\*|\*([^*\s][^*]*)\*|\[([^\]]*)\]\(([^)\s]+)\)")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_HEADING = re.compile(r"(#{1,6}) +(.*)")
_TABLE_RULE = re.compile(r"\|(\s*:?-+:?\s*\|)+")


def _inside(folder: Path, target: str) -> Path | None:
    """The file ``target`` names relative to ``folder``, when it is one inside the folder; else None
    (an absolute path, a URL, '..' out of the folder: never linked, never read)."""
    if not target or "://" in target or target.startswith(("/", "\\")) or ":" in target.split("/")[0]:
        return None
    path = (folder / target).resolve()
    root = folder.resolve()
    return path if path.is_relative_to(root) and path.is_file() else None


def inline(text: str, folder: Path) -> str:
    """One line of the Markdown subset as HTML: escapes, code, bold, italic, links to the folder's files."""
    out, at = [], 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[at:match.start()]))
        escaped, code, bold, italic, link_text, target = match.groups()
        if escaped is not None:
            out.append(html.escape(escaped))
        elif code is not None:
            out.append(f"<code>{html.escape(code)}</code>")
        elif bold is not None:
            out.append(f"<strong>{inline(bold, folder)}</strong>")
        elif italic is not None:
            out.append(f"<em>{inline(italic, folder)}</em>")
        elif _inside(folder, target) is not None:
            out.append(f'<a href="{html.escape(target)}">{inline(link_text, folder)}</a>')
        else:  # a link the page could not follow offline: its text only
            out.append(inline(link_text, folder))
        at = match.end()
    out.append(html.escape(text[at:]))
    return "".join(out)


def embedded_image(folder: Path, target: str, alt: str) -> str:
    """A ``<figure>`` with the PNG ``target`` (relative to ``folder``) inside it as base64; a line
    saying it is missing when the file is not there (never a link out)."""
    path = _inside(folder, target)
    if path is None or path.suffix.lower() != ".png":
        return f'<p class="missing">(plot {html.escape(target)} is missing)</p>'
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'
            f"<figcaption>{html.escape(alt)}</figcaption></figure>")


def _table(lines: list[str], folder: Path) -> str:
    rows = [[cell.strip() for cell in _CELL_SPLIT.split(line.strip().strip("|"))] for line in lines]
    header, body = rows[0], [row for row, line in zip(rows[1:], lines[1:]) if not _TABLE_RULE.fullmatch(line.strip())]
    head = "".join(f"<th>{inline(cell, folder)}</th>" for cell in header)
    cells = ["".join(f"<td>{inline(cell, folder)}</td>" for cell in row) for row in body]
    return f"<table><thead><tr>{head}</tr></thead><tbody>" + "".join(f"<tr>{row}</tr>" for row in cells) + \
        "</tbody></table>"


def markdown_html(text: str, folder: Path) -> str:
    """The body of a page for Markdown ``text`` (the subset above), plots read from ``folder``."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            i += 1
        elif (heading := _HEADING.fullmatch(stripped)) is not None:
            level = len(heading.group(1))
            blocks.append(f"<h{level}>{inline(heading.group(2), folder)}</h{level}>")
            i += 1
        elif _IMAGE.fullmatch(stripped):
            while i < len(lines) and (image := _IMAGE.fullmatch(lines[i].strip())) is not None:
                blocks.append(embedded_image(folder, image.group(2), image.group(1)))
                i += 1
        elif stripped.startswith("|"):
            start = i
            while i < len(lines) and lines[i].strip().startswith("|"):
                i += 1
            blocks.append(_table(lines[start:i], folder))
        elif stripped.startswith("- "):
            items = []
            while i < len(lines) and lines[i].strip().startswith("- "):
                items.append(f"<li>{inline(lines[i].strip()[2:], folder)}</li>")
                i += 1
            blocks.append("<ul>" + "".join(items) + "</ul>")
        else:
            start = i
            while i < len(lines) and lines[i].strip() and not (
                    lines[i].strip().startswith(("#", "|", "- ")) or _IMAGE.fullmatch(lines[i].strip())):
                i += 1
            blocks.append("<p>" + " ".join(inline(line.strip(), folder) for line in lines[start:i]) + "</p>")
    return "\n".join(blocks)


def page(title: str, body: str) -> str:
    """A whole HTML page: the title, the inline style, the body; no external resource."""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def _files_list(folder: Path) -> str:
    """Links to the folder's own files (relative: they resolve wherever the folder is copied)."""
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                   if p.is_file() and p.name != REPORT_HTML and p.parent.name != "plots")
    items = "".join(f'<li><a href="{html.escape(name)}">{html.escape(name)}</a></li>' for name in files)
    return f"<h2>Files of this folder</h2>\n<ul>{items}</ul>"


def report_html(folder: Path) -> str:
    """The page of a results folder: its report.md, plots embedded, then links to its files."""
    folder = Path(folder)
    text = (folder / "report.md").read_text(encoding="utf-8")
    first = next((line for line in text.splitlines() if line.startswith("# ")), "# mlnb results")
    # the heading, not the folder's name: the page is written while the folder still has its .partial-* name
    return page(first[2:].replace("\\", ""), markdown_html(text, folder) + "\n" + _files_list(folder))


def write_report_html(folder: Path) -> Path:
    """Write ``folder/report.html`` from its report.md (call it last: it lists the folder's files)."""
    path = Path(folder) / REPORT_HTML
    path.write_text(report_html(folder), encoding="utf-8")
    return path


def _index_row(entry: RunEntry, root: Path) -> str:
    relative = entry.folder.relative_to(root).as_posix()
    report = entry.folder / REPORT_HTML
    target = f"{relative}/{REPORT_HTML}" if report.is_file() else None
    name = (f'<a href="{html.escape(target)}">{html.escape(relative)}</a>' if target else html.escape(relative))
    cells = [name, entry.kind, entry.created.replace("T", " ")[:19], entry.data, ", ".join(entry.models),
             headline_text(entry), " ".join(entry.overrides)]
    return "<tr>" + "".join(f'<td class="text">{cell if i == 0 else html.escape(cell)}</td>'
                            for i, cell in enumerate(cells)) + "</tr>"


def index_html(root: Path) -> str:
    """The page of a results root: one row per results folder under it (newest first), linked to its report."""
    root = Path(root)
    entries = sorted(find_runs(root), key=lambda e: e.created, reverse=True)
    head = "".join(f'<th class="text">{h}</th>' for h in ("folder", "kind", "created", "data", "models", "headline",
                                              "overrides"))
    rows = "".join(_index_row(entry, root) for entry in entries)
    body = (f"<h1>mlnb results: {html.escape(str(root))}</h1>\n<p>{len(entries)} results folder"
            f"{'' if len(entries) == 1 else 's'}, newest first; <code>mlnb runs {html.escape(str(root))}</code> prints "
            f"the same table.</p>\n<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
    return page(f"mlnb results: {root}", body)


def write_index(root: Path) -> Path:
    """Write ``root/index.html`` atomically (a temporary file renamed over it: two runs that finish at
    once each leave a whole page)."""
    root = Path(root)
    text = index_html(root)
    handle, temporary = tempfile.mkstemp(prefix=".index-", suffix=".html", dir=root)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, root / INDEX_HTML)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return root / INDEX_HTML


def refresh_index(root) -> None:
    """Rewrite ``root/index.html`` after a results folder is written under ``root``; a root where it cannot
    be written keeps its old page, with a warning: the results are complete without it."""
    try:
        write_index(Path(root))
    except OSError as error:
        warnings.warn(MlnbWarning(f"{Path(root) / INDEX_HTML}: not updated ({error.strerror or error})"))


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask
