"""MkDocs hooks (mkdocs.yml: ``hooks``): the pages generated from the code and data at build time.

* ``reference/config.md`` — every config key, from the options dataclasses (docs/gen_config_reference.py,
  the same source as ``mlnb show-config``);
* ``reference/results.md`` — the committed reference results, one table per ``results/reference/*.csv``,
  each named with the script that writes it;
* ``reference/benchmarks.md`` — the benchmark notes, ``experiments/README.md`` as it is.

None is written into docs/: they are added to the build's files in memory, so a stale copy cannot exist.
"""

from __future__ import annotations

import csv
import importlib.util
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    """docs/gen_config_reference.py as a module (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gen_config_reference", ROOT / "docs" / "gen_config_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _writer_of(csv_name: str) -> str | None:
    """The experiments/ script that names this CSV file (the one that writes it), if any."""
    scripts = sorted((ROOT / "experiments").glob("*.py"))
    named = [script for script in scripts if csv_name in script.read_text(encoding="utf-8")]
    named = named or [script for script in scripts if Path(csv_name).stem in _csv_stems(script)]
    return named[0].name if named else None


def _csv_stems(script: Path) -> set[str]:
    """Stems the script writes as ``<stem>.csv`` through an f-string or a variable: ``out / f"{corpus}.csv"``
    writes one per corpus, so every corpus key it lists counts."""
    text = script.read_text(encoding="utf-8")
    if 'f"{' not in text or ".csv" not in text:
        return set()
    return set(re.findall(r'"([a-z0-9_]+)"\s*:', text))


def _markdown_table(rows: list[list[str]]) -> list[str]:
    header, body = rows[0], rows[1:]
    cell = lambda text: text.replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in body]


def results_page() -> str:
    lines = ["# Reference results", "",
             "The results committed in `results/reference/`, measured on the test part of each corpus "
             "(the corpora are in `../shared/data` in the development checkout). Each table is generated "
             "from its CSV file when this site is built, and each CSV is written by the script named "
             "above it, so re-running that script is how a number here is reproduced. Times "
             "(`fit_seconds`) are from the 2-core development machine and move with its load; every other "
             "number is deterministic for the given config and seed.", ""]
    for path in sorted((ROOT / "results" / "reference").glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as handle:
            rows = [row for row in csv.reader(handle) if row]
        if not rows:
            continue
        writer = _writer_of(path.name)
        lines += [f"## {path.stem}", ""]
        lines += [f"`python experiments/{writer}` writes `results/reference/{path.name}`.", ""] if writer else \
            [f"`results/reference/{path.name}`.", ""]
        lines += _markdown_table(rows) + [""]
    return "\n".join(lines)


def benchmarks_page() -> str:
    text = (ROOT / "experiments" / "README.md").read_text(encoding="utf-8")
    # links from experiments/ to the repository are not pages of this site: keep their text only
    return re.sub(r"\[([^\]]+)\]\((?!https?://|#)[^)]+\)", r"\1", text)


def on_files(files, config):
    sys.path.insert(0, str(ROOT))  # the mlnb of this checkout, even when mkdocs runs from elsewhere
    pages = {"reference/config.md": _generator().config_reference(),
             "reference/results.md": results_page(),
             "reference/benchmarks.md": benchmarks_page()}
    for uri, content in pages.items():
        existing = files.get_file_from_path(uri)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, uri, content=content))
    return files
