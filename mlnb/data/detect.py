"""What a data file or folder holds, for ``mlnb init`` (:func:`mlnb.starter.detect`): the machinery its sources'
detectors share.

:func:`detect` looks at a path once and asks the registered sources' detectors (``SourceKind.detect``, tried in
the order of ``SourceKind.detect_order``) what it is; the first that recognises it reads the data once (a
counting pass, no model) and returns a :class:`Detected`: the source and its options, the categories and the
task (``multiclass`` when every document has exactly one category, else ``multilabel``). Each detector lives
beside its source (``mlnb.data.sources.<name>``); this module holds what several share: sniffing a file's
head, its format and columns, whether its first row is a header, the label column and separator (the rule by
which a run refuses mis-split labels, :func:`mlnb.data.text.lists_separated_by`), and counting the categories.

Where it cannot decide it refuses in one line naming what it found and the option to set (``--text-column``,
``--label-column``, ``--label-separator``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from mlnb.data.files import open_binary
from mlnb.data.limits import MAX_LINE_BYTES
from mlnb.data.regular import check_regular
from mlnb.errors import MlnbError

#: column (or JSON key) names taken for the text, and for the labels, before any guess from the content
TEXT_NAMES = ("text", "texts", "document", "doc", "body", "content", "message", "sentence", "review", "tweet",
              "abstract")
LABEL_NAMES = ("labels", "label", "tags", "tag", "categories", "category", "topics", "topic", "classes", "class",
               "keywords", "sentiment", "airline_sentiment", "target", "y")
FILE_NAMES = ("file", "filename", "file_name", "name", "path", "id")
LABELS_FILE_NAMES = ("labels.csv", "labels.tsv", "labels.jsonl", "labels.txt")
#: cells read to sniff a file's format and columns
SNIFF_ROWS = 2000
#: separators that never occur inside a label's name in files seen in the wild: one cell holding one of
#: them makes the labels a list (',' and ' ' do occur in names: they need lists_separated_by's evidence)
LIST_ONLY_SEPARATORS = (";", "|")
_TEXT_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".json": "jsonl",
                  ".ndjson": "jsonl"}


@dataclass
class Detected:
    """What :func:`detect` found.

    source, options : ``data.source`` and its ``[data.<source>]`` keys
    format : the format in words
    n_documents : documents in all parts
    documents_per_category : category name -> documents that carry it
    labels_per_document : 'one' or 'several' (some document has none or more than one)
    separator : the multilabel separator found ('' = none needed)
    label_column : the label column (files of texts), else ''
    task : 'multiclass' or 'multilabel'
    presence : the values are not counts (e.g. TF-IDF): Naive Bayes reads word presence
    negative_values : some feature value is negative: Naive Bayes (counts) cannot read them
    notes : more lines for the config's head
    why : option key -> why init chose its value (a line of the summary, the key's comment in the config)
    """

    source: str
    options: dict
    format: str
    n_documents: int = 0
    documents_per_category: dict = field(default_factory=dict)
    labels_per_document: str = "one"
    separator: str = ""
    label_column: str = ""
    task: str = "multilabel"
    presence: bool = False
    negative_values: bool = False
    notes: list = field(default_factory=list)
    why: dict = field(default_factory=dict)

    @property
    def n_categories(self) -> int:
        return len(self.documents_per_category)


@dataclass(frozen=True)
class Hints:
    """What the user said (``mlnb init`` options): empty = find it."""

    text_column: str = ""
    label_column: str = ""
    label_separator: str = ""


@dataclass
class Look:
    """A file or folder that ``mlnb init`` was given, as the detectors see it; what it lists and the head of a
    file are read once, when a detector first asks.

    path   : the file or folder
    hints  : what the user said
    """

    path: Path
    hints: Hints

    @property
    def is_folder(self) -> bool:
        return self.path.is_dir()

    @cached_property
    def entries(self) -> tuple[list[Path], list[Path]]:
        """(the files, the sub-folders) of a folder, sorted, hidden ones left out; anything neither (a FIFO, a
        socket, a device) is refused, not skipped."""
        entries = [e for e in os.scandir(self.path) if not e.name.startswith(".")]
        for entry in entries:
            if not entry.is_file() and not entry.is_dir():
                check_regular(entry.path, "a file of the data folder")
        return (sorted(Path(e.path) for e in entries if e.is_file()),
                sorted(Path(e.path) for e in entries if e.is_dir()))

    @property
    def files(self) -> list[Path]:
        return self.entries[0]

    @property
    def folders(self) -> list[Path]:
        return self.entries[1]

    @cached_property
    def head(self) -> list[str]:
        """The first SNIFF_ROWS lines of a file (``read_head``)."""
        return read_head(self.path)

    @cached_property
    def lines(self) -> list[str]:
        """The head's lines that are neither blank nor a ``#`` comment."""
        return [line for line in self.head if line.strip() and not line.lstrip().startswith("#")]


# -- the entry point -------------------------------------------------------------------------------------------
def detect(data, hints: Hints, sources) -> Detected:
    """What ``data`` (a file or folder) holds, asked of the detectors of ``sources`` (the registered
    SourceKinds); one MlnbError line when none can tell."""
    path = Path(data)
    if not path.exists():
        raise MlnbError(f"{data}: no such file or folder")
    detectors = [source.detect for source in sorted((s for s in sources if s.detect is not None),
                                                     key=lambda s: s.detect_order)]
    found = _folder(path, hints, detectors) if path.is_dir() else _file(path, hints, detectors)
    if found.n_categories < 1:
        raise MlnbError(f"{data}: no categories found (every document without a label)")
    if found.n_categories == 1 and found.task == "multiclass":
        name = next(iter(found.documents_per_category))
        raise MlnbError(f"{data}: every document is in the one category {name!r}; expected at least 2 categories "
                        "(or documents without a category)")
    return found


def _ask(look: Look, detectors) -> Detected | None:
    for detector in detectors:
        found = detector(look)
        if found is not None:
            return found
    return None


def _folder(path: Path, hints: Hints, detectors) -> Detected:
    look = Look(path, hints)
    found = _ask(look, detectors)
    if found is not None:
        return found
    if len(look.files) == 1 and not look.folders:
        return _file(look.files[0], hints, detectors)
    raise MlnbError(f"{path}: {len(look.files)} files and no sub-folders: expected one sub-folder of text files per "
                    f"category, or the files and a labels file ({', '.join(LABELS_FILE_NAMES)}: file name, labels); "
                    "or name one data file (svmlight, ARFF, CSV, TSV, JSON lines)")


def has_subfolders(path: Path) -> bool:
    return any(e.is_dir() and not e.name.startswith(".") for e in os.scandir(path))


def _file(path: Path, hints: Hints, detectors) -> Detected:
    check_regular(path, "mlnb init's data")  # a FIFO or device: refused before anything opens it
    name = path.name.lower()
    if name.endswith((".npy", ".npz", ".pkl", ".zip", ".tar", ".parquet", ".xlsx")):
        raise MlnbError(f"{path}: a {Path(name).suffix} file, not a format mlnb reads; expected svmlight, ARFF, CSV, "
                        "TSV or JSON lines of texts, a folder of text files, or shards (mlnb convert)")
    found = _ask(Look(path, hints), detectors)
    if found is None:
        raise MlnbError(f"{path}: cannot tell the format; expected svmlight, ARFF, CSV, TSV or JSON lines of texts")
    return found


def read_head(path: Path) -> list[str]:
    """The first SNIFF_ROWS lines of a (possibly compressed) file, decoded leniently; one line for a binary file."""
    lines = []
    with open_binary(path, "mlnb init's data") as stream:
        while raw := stream.readline(MAX_LINE_BYTES + 1):  # bounded: a file without newlines is no line
            if len(raw) > MAX_LINE_BYTES:
                raise MlnbError(f"{path}:{len(lines) + 1}: a line of more than {MAX_LINE_BYTES:,} bytes; expected "
                                "svmlight, ARFF, CSV, TSV or JSON lines, one record per line")
            if b"\x00" in raw:
                raise MlnbError(f"{path}: a binary file (NUL bytes); expected svmlight, ARFF, CSV, TSV or JSON lines")
            lines.append(raw.decode("utf-8", errors="replace"))
            if len(lines) >= SNIFF_ROWS:
                break
    if not any(line.strip() for line in lines):
        raise MlnbError(f"{path}: the file is empty")
    return lines


# -- counting the categories ------------------------------------------------------------------------------------
def count_labels(found: Detected, Y, X_data: np.ndarray) -> None:
    """Documents per category, labels per document and the NB event model from label and value arrays."""
    per_document = np.diff(Y.indptr)
    found.labels_per_document = "one" if per_document.size and (per_document == 1).all() else "several"
    found.task = "multiclass" if found.labels_per_document == "one" else "multilabel"
    check_values(found, X_data)


def check_values(found: Detected, values: np.ndarray) -> None:
    """Whether the feature values are counts: some negative (``negative_values``), else some not an integer
    (``presence``: e.g. TF-IDF)."""
    if values.size and values.min() < 0:
        found.negative_values = True
    elif values.size and not np.all(values == np.round(values)):
        found.presence = True


def from_chunks(found: Detected, sources, names) -> Detected:
    positives, documents, labels_per_doc, values = None, 0, [], []
    for source in sources:
        if source is None:
            continue
        for chunk in source.chunks(100_000):
            counts = np.asarray(chunk.Y.sum(axis=0)).ravel()
            positives = counts if positives is None else positives + counts
            documents += chunk.n_documents
            labels_per_doc.append(np.diff(chunk.Y.indptr))
            values.append(chunk.X.data[:100_000])
    found.n_documents = documents
    found.documents_per_category = {str(name): int(n) for name, n in zip(names, positives)}
    per_document = np.concatenate(labels_per_doc)
    found.labels_per_document = "one" if (per_document == 1).all() else "several"
    found.task = "multiclass" if found.labels_per_document == "one" else "multilabel"
    check_values(found, np.concatenate(values))
    return found


def partner(path: Path, mine: str, other: str) -> Path | None:
    """The file beside ``path`` whose name has ``other`` where ``path``'s has ``mine`` ('train' -> 'test')."""
    if mine not in path.name.lower():
        return None
    index = path.name.lower().rindex(mine)
    partner = path.with_name(path.name[:index] + other + path.name[index + len(mine):])
    return partner if partner.is_file() else None


def from_labels(found: Detected, labels: list) -> Detected:
    counts = Counter(name for names in labels for name in set(names))
    found.n_documents = len(labels)
    found.documents_per_category = dict(sorted(counts.items()))
    found.labels_per_document = "one" if all(len(names) == 1 for names in labels) else "several"
    found.task = "multiclass" if found.labels_per_document == "one" else "multilabel"
    _label_notes(found, labels)
    return found


#: categories with fewer documents than this are named by init: too few to learn from and to test on
TINY_CATEGORY = 5

def _label_notes(found: Detected, labels: list) -> None:
    """Notes on the documents without a label and the categories of fewer than TINY_CATEGORY documents."""
    unlabelled = sum(not names for names in labels)
    if unlabelled:
        found.notes.append(f"{unlabelled:,} documents ({100 * unlabelled / len(labels):.1f} %) have no label: each "
                           "is a negative of every category")
    tiny = sorted(((n, name) for name, n in found.documents_per_category.items() if n < TINY_CATEGORY))
    if tiny:
        shown = ", ".join(f"{name!r} ({n})" for n, name in tiny[:5]) + (", ..." if len(tiny) > 5 else "")
        found.notes.append(f"{len(tiny):,} categor{'y has' if len(tiny) == 1 else 'ies have'} fewer than "
                           f"{TINY_CATEGORY} documents ({shown}): too few to learn from and to test on")


# -- files of texts: format, columns, header, labels ---------------------------------------------------------
def text_format(path: Path, head: list[str]) -> str:
    name = path.name.lower()
    for compressed in (".gz", ".bz2"):
        name = name.removesuffix(compressed)
    suffix = Path(name).suffix
    if suffix in _TEXT_SUFFIXES:
        return _TEXT_SUFFIXES[suffix]
    lines = [line for line in head if line.strip()][:200]
    if lines and all(line.lstrip().startswith("{") for line in lines):
        return "jsonl"
    if lines and all("\t" in line for line in lines):
        return "tsv"
    if lines and all("," in line for line in lines[:1]):
        return "csv"
    raise MlnbError(f"{path}: cannot tell the format (not svmlight, no tabs, commas or JSON objects in the first "
                    "lines); expected CSV, TSV or JSON lines of a text and its labels")


def read_table(path: Path, header: bool | None = None) -> tuple[str, bool, list[dict], str]:
    """(format, header, the first SNIFF_ROWS rows as column -> value, why the header was so guessed) of a
    CSV/TSV/JSON-lines file; ``header``: whether the first row names the columns (None: guess)."""
    head = read_head(path)
    fmt = text_format(path, head)
    if fmt == "jsonl":
        rows = []
        for number, line in enumerate(head, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                if number == len(head):  # the last line read may be cut
                    break
                raise MlnbError(f"{path}:{number}: not a JSON object ({error.msg})") from None
            if isinstance(record, dict):
                rows.append(record)
        return ("jsonl" if not path.name.lower().endswith((".jsonl", ".json", ".ndjson")) else "auto"), True, rows, ""
    delimiter = "\t" if fmt == "tsv" else ","
    reader = csv.reader(io.StringIO("".join(head[:-1] if len(head) >= SNIFF_ROWS else head)), delimiter=delimiter,
                        quoting=csv.QUOTE_NONE if fmt == "tsv" else csv.QUOTE_MINIMAL)
    try:
        table = [row for row in reader if row]
    except csv.Error as error:
        raise MlnbError(f"{path}:{reader.line_num}: malformed {fmt.upper()} ({error})") from None
    if not table:
        raise MlnbError(f"{path}: no rows")
    header, why = _has_header(table) if header is None else (header, "")
    names = table[0] if header else [str(i) for i in range(len(table[0]))]
    rows = [dict(zip(names, row)) for row in (table[1:] if header else table) if len(row) == len(names)]
    by_suffix = Path(path.name.lower().removesuffix(".gz").removesuffix(".bz2")).suffix in _TEXT_SUFFIXES
    return ("auto" if by_suffix else fmt), header, rows, why


def _has_header(table: list[list[str]]) -> tuple[bool, str]:
    """(whether the first row names the columns, why), from a known column name, else by comparing the first
    row with the rest (``_header_evidence``): it is a header where more of the comparisons say so than say
    it is a document (a tie, or nothing to compare, reads it as a document: a row of data is never dropped
    for lack of evidence)."""
    first = [cell.strip() for cell in table[0]]
    known = [cell for cell in first if cell.lower() in TEXT_NAMES + LABEL_NAMES + FILE_NAMES]
    if known:
        return True, f"the first row names the columns ({known[0]!r} is a column name)"
    if len(set(first)) < len(first):
        return False, f"the first row repeats a cell ({Counter(first).most_common(1)[0][0]!r}), so it names no columns"
    rest = [[cell.strip() for cell in row] for row in table[1:] if len(row) == len(first)]
    evidence = _header_evidence(first, rest)
    says_header = [why for header, why in evidence if header]
    says_document = [why for header, why in evidence if not header]
    if len(says_header) > len(says_document):
        return True, "the first row names the columns: " + "; ".join(says_header)
    if not evidence:
        return False, "the first row is read as a document: nothing in the other rows tells it from a header"
    return False, "the first row is read as a document: " + "; ".join(says_document + says_header)


#: a column's cells are labels when at least this share of its non-empty cells (below the first row) hold a
#: value that recurs in the column
LABEL_RECURRENCE = 0.5
#: a first cell of the text column (the longest cells) shorter than this share of the others' median is a
#: column name; one at least HEADER_TEXT_SHARE_AS_DOCUMENT of it reads as a document
HEADER_TEXT_SHARE = 0.25
HEADER_TEXT_SHARE_AS_DOCUMENT = 0.5

def _values(cell: str) -> set[str]:
    """The cell and, for a list of labels, its items: what may recur in a label column."""
    return {cell} | {part.strip() for part in re.split(r"[;|,]", cell) if part.strip()} if cell else set()


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _header_evidence(first: list[str], rest: list[list[str]]) -> list[tuple[bool, str]]:
    """(says the first row is a header, why) of each comparison of the first row with the rest (``rest``:
    the other rows of the sniffed lines, as many cells as the first):

    * a label column (its values recur): the first row's value recurs there (a document) or never does;
    * the text column (the longest cells): the first row's cell far shorter than the others' median
      (a column name) or as long as a text;
    * a column of numbers: the first row's cell a number too, or not."""
    if len(rest) < 2:
        return []
    evidence = []
    columns = range(len(first))
    widths = [float(np.median([len(row[j]) for row in rest])) for j in columns]
    text = int(np.argmax(widths))
    for j in columns:
        cells = [row[j] for row in rest if row[j]]
        if j == text or not cells or not first[j]:
            continue
        if all(map(_is_number, cells)):
            number = _is_number(first[j])
            evidence.append((not number, f"column {j + 1} holds numbers and its first cell {first[j]!r} "
                                         f"{'is one' if number else 'is not'}"))
            continue
        seen = Counter(value for cell in cells for value in _values(cell))
        recurring = sum(any(seen[value] > 1 for value in _values(cell)) for cell in cells)
        if recurring >= LABEL_RECURRENCE * len(cells):
            again = sorted(value for value in _values(first[j]) if seen[value])
            evidence.append((not again, f"its {again[0] if again else first[j]!r} "
                                        f"{'recurs' if again else 'never recurs'} in column {j + 1}, whose values are "
                                        "labels that recur"))
    length, median = len(first[text]), widths[text]
    if median >= 20 and length < HEADER_TEXT_SHARE * median:
        evidence.append((True, f"its {first[text]!r} is far shorter than the texts of column {text + 1} "
                               f"(median {median:,.0f} characters)"))
    elif length >= HEADER_TEXT_SHARE_AS_DOCUMENT * median:
        evidence.append((False, f"its cell of column {text + 1} is as long as a text ({length:,} characters, "
                                f"median {median:,.0f})"))
    return evidence


def label_column(path: Path, columns: list[str], rows: list[dict]) -> str:
    """The label column: a known name, else the column with the fewest distinct values (at least 2)."""
    if not columns:
        raise MlnbError(f"{path}: one column only; expected a text column and a label column")
    for name in LABEL_NAMES:
        for column in columns:
            if column.strip().lower() == name:
                return column
    usable, distinct = label_candidates(columns, rows)
    if not usable:
        found = ", ".join(f"{c!r} ({distinct[c]:,} distinct values in {len(rows):,} rows)" for c in columns)
        raise MlnbError(f"{path}: cannot tell the label column among {found}; set it: mlnb init ... "
                        "--label-column NAME")
    return min(usable, key=lambda c: (distinct[c], columns.index(c)))


def label_candidates(columns: list[str], rows: list[dict]) -> tuple[list[str], dict]:
    """(the columns that could hold labels: 2 to half as many distinct values as rows, distinct values by column)."""
    distinct = {c: len({json.dumps(r.get(c), sort_keys=True) for r in rows}) for c in columns}
    return [c for c in columns if 2 <= distinct[c] <= max(2, len(rows) // 2)], distinct


def text_column(path: Path, columns: list[str], rows: list[dict]) -> str:
    for name in TEXT_NAMES:
        for column in columns:
            if column.strip().lower() == name:
                return column
    strings = [c for c in columns if all(isinstance(r.get(c), str) for r in rows)]
    if not strings:
        raise MlnbError(f"{path}: no column of texts among {', '.join(map(repr, columns))}; set it: mlnb init ... "
                        "--text-column NAME")
    return max(strings, key=lambda c: (np.mean([len(r.get(c, "")) for r in rows]), -columns.index(c)))


def label_separator(path: Path, cells: list, force: bool = False) -> str:
    """The separator of the labels in the cells ('' = one label per cell, or JSON lists)."""
    from mlnb.data.text import TextReading, lists_separated_by

    strings = [str(c).strip() for c in cells if isinstance(c, str) and c.strip()]
    if any(isinstance(c, list) for c in cells):
        return ""
    for separator in LIST_ONLY_SEPARATORS:
        if any(separator in c for c in strings):
            return separator
    found = lists_separated_by(Counter(strings), TextReading(labels="single"))
    if found is not None:
        return found[0]
    return "," if force and any("," in c for c in strings) else ""
