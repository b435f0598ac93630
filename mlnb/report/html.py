"""report.html of a results folder and index.html of a results root: pages that open offline.

``report.html`` is the folder's ``report.md`` as one self-contained page: every plot it shows is
embedded as a base64 PNG (``data:image/png;base64,...``), the style is inline, and it names no
URL outside the folder, so it opens from a copied folder, an e-mail attachment or a machine with
no network; its only links are relative ones to the folder's own files (config.toml,
metrics.csv, ...). ``index.html`` of a results root links every run's report (``mlnb.report.runs``
finds them) with the table ``mlnb runs`` prints, in its order, and a column per headline metric of
each model; a click on a column's title sorts by it (``SORT_SCRIPT``, inline: without JavaScript the
page keeps ``mlnb runs``'s order).

The Markdown read is the subset ``mlnb.report.markdown`` writes: ``#`` headings, paragraphs,
``-`` lists, pipe tables, ``![name](plots/x.png)`` images, ``[text](file)`` links, ``**bold**``,
``*italic*``, `` `code` ``, backslash escapes and the entities ``mlnb.report.escape.plain`` writes.
Every piece of text is HTML-escaped: category names and labels come from the data and the config;
every link is a relative path whose parts are percent-encoded (``safe_href``): a folder named
``javascript:alert(1)`` is a folder, never a script.
"""

from __future__ import annotations

import base64
import html
import os
import re
import tempfile
import warnings
from collections import Counter
from pathlib import Path

from mlnb.errors import MlnbError, MlnbWarning
from mlnb.report.escape import safe_href
from mlnb.report.runs import RunEntry, Skipped, headline_text, scan_runs

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
table.runs th { cursor: pointer; user-select: none; }
table.runs th[aria-sort=ascending]::after { content: " \\25B2"; }
table.runs th[aria-sort=descending]::after { content: " \\25BC"; }
"""
MAX_METRIC_COLUMNS = 12  # index.html's columns of one model's headline metric each (the most common ones)
#: index.html's sorting: a click on a column's title sorts the rows by it, again the other way; a cell's
#: data-value (a metric's number) sorts numerically, other text naturally ('run2' before 'run10'); empty
#: cells last either way; equal cells keep their order (the default: ``mlnb runs``'s)
SORT_SCRIPT = """
document.querySelectorAll("table.runs th").forEach((title, column) => title.addEventListener("click", () => {
  const ascending = title.getAttribute("aria-sort") !== "ascending";
  title.parentNode.querySelectorAll("th").forEach(other => other.removeAttribute("aria-sort"));
  title.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const value = row => { const cell = row.cells[column];
    return cell.hasAttribute("data-value") ? Number(cell.dataset.value) : cell.textContent; };
  const missing = v => v === "" || Number.isNaN(v);
  const body = title.closest("table").tBodies[0];
  const rows = [...body.rows].sort((a, b) => {
    const x = value(a), y = value(b);
    if (missing(x) || missing(y)) return missing(x) - missing(y);
    const order = typeof x === "number" ? x - y : x.localeCompare(y, undefined, {numeric: true});
    return ascending ? order : -order;
  });
  body.append(...rows);
}));
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
        out.append(_text(text[at:match.start()]))
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
    out.append(_text(text[at:]))
    return "".join(out)


def _text(markdown: str) -> str:
    """Plain Markdown text as HTML: its entities (``&lt;`` from a name) read, then everything escaped."""
    return html.escape(html.unescape(markdown))


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


def page(title: str, body: str, script: str = "") -> str:
    """A whole HTML page: the title, the inline style, the body, an inline ``script``; no external resource."""
    script = f"<script>{script}</script>\n" if script else ""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\n{script}</body>\n"
            "</html>\n")


def _files_list(folder: Path) -> str:
    """Links to the folder's own files (relative: they resolve wherever the folder is copied)."""
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                   if p.is_file() and p.name != REPORT_HTML and p.parent.name != "plots")
    items = "".join(f'<li><a href="{html.escape(safe_href(name))}">{html.escape(name)}</a></li>' for name in files)
    return f"<h2>Files of this folder</h2>\n<ul>{items}</ul>"


def report_html(folder: Path) -> str:
    """The page of a results folder: its report.md, plots embedded, then links to its files."""
    folder = Path(folder)
    text = (folder / "report.md").read_text(encoding="utf-8")
    first = next((line for line in text.splitlines() if line.startswith("# ")), "# mlnb results")
    # the heading, not the folder's name: the page is written while the folder still has its .partial-* name
    return page(html.unescape(re.sub(r"\\(.)", r"\1", first[2:])), markdown_html(text, folder) + "\n" +
                _files_list(folder))


def write_report_html(folder: Path) -> Path:
    """Write ``folder/report.html`` from its report.md (call it last: it lists the folder's files)."""
    path = Path(folder) / REPORT_HTML
    path.write_text(report_html(folder), encoding="utf-8")
    return path


def _metric_columns(entries: list[RunEntry]) -> tuple[list[tuple[str, str]], bool]:
    """The (metric, model) pairs of the entries' headlines that get a column of their own (the
    ``MAX_METRIC_COLUMNS`` most common, in the order first met), and whether any pair is left without one
    (then the page keeps the headline as text too)."""
    counts = Counter((title, model) for entry in entries for title, values in entry.headline.items()
                     for model, value in values.items() if value is not None)
    kept = {pair for pair, _ in counts.most_common(MAX_METRIC_COLUMNS)}
    return [pair for pair in counts if pair in kept], len(counts) > len(kept)


def _metric_cell(value) -> str:
    """A metric's cell: shown as ``mlnb runs`` shows it, its exact number in data-value for sorting."""
    if value is None:
        return "<td></td>"
    shown = f"{value:.4f}" if isinstance(value, float) else f"{value}"
    return f'<td data-value="{value!r}">{shown}</td>'


def _index_row(entry: RunEntry, root: Path, metrics: list[tuple[str, str]], headline: bool) -> str:
    relative = entry.folder.relative_to(root).as_posix()
    report = entry.folder / REPORT_HTML
    target = safe_href(f"{relative}/{REPORT_HTML}") if report.is_file() else None
    name = (f'<a href="{html.escape(target)}">{html.escape(relative)}</a>' if target else html.escape(relative))
    texts = [entry.kind, entry.created.replace("T", " ")[:19], entry.data, ", ".join(entry.models)]
    cells = [f'<td class="text">{name}</td>'] + [f'<td class="text">{html.escape(text)}</td>' for text in texts]
    cells += [_metric_cell(entry.headline.get(title, {}).get(model)) for title, model in metrics]
    texts = ([headline_text(entry)] if headline else []) + [" ".join(entry.overrides)]
    return "<tr>" + "".join(cells) + "".join(f'<td class="text">{html.escape(text)}</td>' for text in texts) + "</tr>"


def _skipped_html(skipped: list[Skipped], root: Path) -> str:
    """The folders under the root that are not in the table, each with why (no link: they may be anything)."""
    if not skipped:
        return ""
    items = "".join(f"<li>{html.escape(_shown_path(s.path, root))}: {html.escape(s.reason)}</li>" for s in skipped)
    return f"\n<p>Not listed ({len(skipped)}): could not be read.</p>\n<ul>{items}</ul>"


def _shown_path(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def index_html(root: Path, scan: tuple[list[RunEntry], list[Skipped]] | None = None) -> str:
    """The page of a results root: one row per results folder under it, oldest first as ``mlnb runs`` lists
    them, linked to its report, a column per model's headline metric, sorted by a click on a column's
    title; then the folders it could not read (``scan``: what ``scan_runs(root)`` gives, when the caller
    has it)."""
    root = Path(root)
    entries, skipped = scan_runs(root) if scan is None else scan
    metrics, headline = _metric_columns(entries)
    texts = (["headline"] if headline else []) + ["overrides"]
    head = "".join(f'<th class="text">{title}</th>' for title in ("folder", "kind", "created", "data", "models")) + \
        "".join(f"<th>{html.escape(f'{title} {model}')}</th>" for title, model in metrics) + \
        "".join(f'<th class="text">{title}</th>' for title in texts)
    rows = "".join(_index_row(entry, root, metrics, headline) for entry in entries)
    body = (f"<h1>mlnb results: {html.escape(str(root))}</h1>\n<p>{len(entries)} results folder"
            f"{'' if len(entries) == 1 else 's'}, oldest first, as <code>mlnb runs {html.escape(str(root))}</code> "
            f"lists them; click a column's title to sort by it.</p>\n"
            f'<table class="runs"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
            + _skipped_html(skipped, root))
    return page(f"mlnb results: {root}", body, SORT_SCRIPT)


def write_index(root: Path, scan: tuple[list[RunEntry], list[Skipped]] | None = None) -> Path:
    """Write ``root/index.html`` atomically (a temporary file renamed over it: two runs that finish at
    once each leave a whole page); MlnbError naming the page and why when it cannot be written."""
    root = Path(root)
    path = root / INDEX_HTML
    text = index_html(root, scan)
    try:
        handle, temporary = tempfile.mkstemp(prefix=".index-", suffix=".html", dir=root)
    except OSError as error:
        raise MlnbError(f"{path}: cannot be written ({root}: {error.strerror or error})") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, IsADirectoryError):
            raise MlnbError(f"{path}: is a folder; the page needs that name (move the folder away)") from None
        if isinstance(error, OSError):
            raise MlnbError(f"{path}: cannot be written ({error.strerror or error})") from None
        raise
    return path


def refresh_index(root) -> None:
    """Rewrite ``root/index.html`` after a results folder is written under ``root``. The results are complete
    without it: a folder under the root that cannot be read is named in a warning and left out of the page,
    and a page that cannot be written is a warning (the old page stays), never a failed run."""
    root = Path(root)
    try:
        found, skipped = scan_runs(root)
        for left_out in skipped:
            warnings.warn(MlnbWarning(f"{left_out.path}: not listed in {root / INDEX_HTML} ({left_out.reason})"))
        write_index(root, (found, skipped))
    except MlnbError as error:
        warnings.warn(MlnbWarning(f"{error}; not updated"))
    except Exception as error:  # noqa: BLE001  (whatever a neighbour's folder holds: this run succeeded)
        warnings.warn(MlnbWarning(f"{root / INDEX_HTML}: not updated ({type(error).__name__}: {error})"))


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask
