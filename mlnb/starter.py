"""``mlnb init DATA``: look at a file or folder, tell what it is, and write a starter config that runs as is.

:func:`detect` reads the data once (a counting pass, no model) and decides

* the **format**: binary shards (a folder with ``manifest.json``), a Mulan ARFF pair with its XML, a
  folder of text files (one sub-folder per category, or files and a labels file), svmlight, or a
  CSV / TSV / JSON-lines file of texts (sniffed from the content when the suffix does not say);
* for a file of texts, the **text and label columns** (by name, else the longest texts and the column
  with the fewest distinct values) and whether the file has a header;
* the **label separator** of multilabel cells (``"sport;politics"``): the separator on which the labels
  split into labels that occur on their own (:func:`mlnb.data.text.lists_separated_by`, the rule by
  which a run refuses mis-split labels), or ``;`` / ``|`` wherever a cell holds one;
* the **categories** and the **task**: ``multiclass`` when every document has exactly one category,
  else ``multilabel`` (one-vs-rest).

Where it cannot decide it refuses in one line naming what it found and the option to set (``--text-column``,
``--label-column``, ``--label-separator``). :func:`starter_config` writes the config: the data keys found,
a Naive Bayes model (its default event model for counts, one that reads word presence for other
non-negative values: each asked of the registered event models, never named here) and a logistic one,
commented; every other key keeps its default, and ``report.category`` picks a testable category.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
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
_SVMLIGHT_LINE = re.compile(r"^\s*(\d+(,\d+)*)?(\s+(qid:\S+\s+)?\d+:\S+)+\s*(#.*)?$")
_TEXT_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".json": "jsonl",
                  ".ndjson": "jsonl"}
_SVMLIGHT_SUFFIXES = (".svm", ".svmlight", ".libsvm", ".lsvm")


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
    presence : the values are not counts: Naive Bayes reads word presence
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
    nb_enabled: bool = True
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


# -- the entry point -------------------------------------------------------------------------------------------
def detect(data, hints: Hints = Hints()) -> Detected:
    """What ``data`` (a file or folder) holds; one MlnbError line when it cannot tell."""
    path = Path(data)
    if not path.exists():
        raise MlnbError(f"{data}: no such file or folder")
    if path.is_dir():
        found = _folder(path, hints)
    else:
        found = _file(path, hints)
    if found.n_categories < 1:
        raise MlnbError(f"{data}: no categories found (every document without a label)")
    if found.n_categories == 1 and found.task == "multiclass":
        name = next(iter(found.documents_per_category))
        raise MlnbError(f"{data}: every document is in the one category {name!r}; expected at least 2 categories "
                        "(or documents without a category)")
    return found


def _folder(path: Path, hints: Hints) -> Detected:
    from mlnb.data.shards import MANIFEST

    if (path / MANIFEST).is_file():
        return _shards(path)
    entries = [e for e in os.scandir(path) if not e.name.startswith(".")]
    for entry in entries:  # neither a file nor a folder (a FIFO, a socket, a device): refused, not skipped
        if not entry.is_file() and not entry.is_dir():
            check_regular(entry.path, "a file of the data folder")
    files = sorted(Path(e.path) for e in entries if e.is_file())
    folders = sorted(Path(e.path) for e in entries if e.is_dir())
    arffs = [f for f in files if f.name.lower().endswith((".arff", ".arff.gz"))]
    if arffs:
        return _arff(sorted(arffs, key=lambda f: ("test" in f.name.lower(), f.name))[0])
    labels_file = _labels_file(path, files)
    if labels_file is not None:
        return _files_with_labels(path, labels_file, hints)
    parts = {f.name.lower(): f for f in folders}
    train = parts.get("train") or parts.get("training")
    test = parts.get("test") or parts.get("testing")
    if train is not None and test is not None and len(folders) == 2 and _has_subfolders(train):
        return _files_by_category(train, test)
    if folders:
        return _files_by_category(path)
    if len(files) == 1:
        return _file(files[0], hints)
    raise MlnbError(f"{path}: {len(files)} files and no sub-folders: expected one sub-folder of text files per "
                    f"category, or the files and a labels file ({', '.join(LABELS_FILE_NAMES)}: file name, labels); "
                    "or name one data file (svmlight, ARFF, CSV, TSV, JSON lines)")


def _has_subfolders(path: Path) -> bool:
    return any(e.is_dir() and not e.name.startswith(".") for e in os.scandir(path))


def _file(path: Path, hints: Hints) -> Detected:
    check_regular(path, "mlnb init's data")  # a FIFO or device: refused before anything opens it
    name = path.name.lower()
    if name.endswith((".arff", ".arff.gz")):
        return _arff(path)
    if name.endswith((".npy", ".npz", ".pkl", ".zip", ".tar", ".parquet", ".xlsx")):
        raise MlnbError(f"{path}: a {Path(name).suffix} file, not a format mlnb reads; expected svmlight, ARFF, CSV, "
                        "TSV or JSON lines of texts, a folder of text files, or shards (mlnb convert)")
    head = _head(path)
    lines = [line for line in head if line.strip() and not line.lstrip().startswith("#")]
    stem = name[:-3] if name.endswith(".gz") else name[:-4] if name.endswith(".bz2") else name
    if stem.endswith(_SVMLIGHT_SUFFIXES) or (lines and all(_SVMLIGHT_LINE.match(line) for line in lines[:200])):
        return _svmlight(path, lines)
    return _texts(path, head, hints)


def _head(path: Path) -> list[str]:
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


# -- formats of features ---------------------------------------------------------------------------------------
def _counts(found: Detected, Y, X_data: np.ndarray) -> None:
    """Documents per category, labels per document and the NB event model from label and value arrays."""
    per_document = np.diff(Y.indptr)
    found.labels_per_document = "one" if per_document.size and (per_document == 1).all() else "several"
    found.task = "multiclass" if found.labels_per_document == "one" else "multilabel"
    _event_model(found, X_data)


def _event_model(found: Detected, values: np.ndarray) -> None:
    if values.size and values.min() < 0:
        found.nb_enabled = False
        found.notes.append("feature values are negative somewhere: Naive Bayes (counts) cannot read them, so "
                           "models.nb is written disabled")
    elif values.size and not np.all(values == np.round(values)):
        found.presence = True
        found.notes.append(f"feature values are not counts (e.g. TF-IDF): Naive Bayes reads word presence "
                           f"(event_model = {_event_model_name(True)!r})")


def _from_chunks(found: Detected, sources, names) -> Detected:
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
    _event_model(found, np.concatenate(values))
    return found


def _svmlight(path: Path, lines: list[str]) -> Detected:
    from mlnb.data.stream import SvmlightSource, svmlight_sources

    zero = any(re.search(r"\s0:", line) for line in lines)
    options = {"path": str(path)}
    if zero:
        options["index_base"] = 0
    test = _partner(path, "train", "test")
    if test is not None:
        options["test_path"] = str(test)
    base = re.sub(r"\.(svm|svmlight|libsvm|lsvm|txt|dat)(\.gz|\.bz2)?$", "", str(path))
    for names in (f"{base}.labels.txt", f"{base}.names", f"{base}.categories.txt"):
        if Path(names).is_file():
            options["category_names_path"] = names
    kwargs = dict(index_base=0 if zero else 1, category_names=options.get("category_names_path"))
    if test is not None:
        train_source, test_source = svmlight_sources(path, test, **kwargs)
    else:
        train_source, test_source = SvmlightSource(path, **kwargs), None
    found = Detected("svmlight", options, f"svmlight (LIBSVM) file{'s' if test else ''} of feature values")
    return _from_chunks(found, (train_source, test_source), train_source.category_names)


def _shards(path: Path) -> Detected:
    from mlnb.data.shards import MANIFEST, ShardSource

    options = {"path": str(path)}
    source = ShardSource(path)
    test = None
    if (path / "test" / MANIFEST).is_file():
        options["test_path"] = str(path / "test")
        test = ShardSource(path / "test")
    found = Detected("shards", options, "binary shards written by `mlnb convert`")
    return _from_chunks(found, (source, test), source.category_names)


def _partner(path: Path, mine: str, other: str) -> Path | None:
    """The file beside ``path`` whose name has ``other`` where ``path``'s has ``mine`` ('train' -> 'test')."""
    if mine not in path.name.lower():
        return None
    index = path.name.lower().rindex(mine)
    partner = path.with_name(path.name[:index] + other + path.name[index + len(mine):])
    return partner if partner.is_file() else None


def _arff(path: Path) -> Detected:
    from mlnb.data.arff import load_arff_dataset

    train = path
    test = _partner(path, "train", "test")
    if test is None and "test" in path.name.lower():
        train, test = _partner(path, "test", "train"), path
    if train is None or test is None:
        raise MlnbError(f"{path}: an ARFF file without its train/test partner (e.g. enron-train.arff beside "
                        "enron-test.arff): data.source = 'arff' reads a Mulan train and test pair and its XML")
    stem = re.sub(r"[-_.]?train$", "", train.name.split(".arff")[0], flags=re.IGNORECASE)
    xmls = [train.with_name(stem + ".xml")] + sorted(train.parent.glob("*.xml"))
    xml = next((x for x in xmls if x.is_file()), None)
    if xml is None:
        raise MlnbError(f"{train}: no Mulan label XML beside it ({stem}.xml) naming the label attributes")
    dataset = load_arff_dataset(train, test, xml)
    found = Detected("arff", {"train_path": str(train), "test_path": str(test), "xml_path": str(xml)},
                     "a Mulan ARFF train/test pair and its label XML")
    found.n_documents = dataset.n_documents
    positives = np.asarray(dataset.Y.sum(axis=0)).ravel()
    found.documents_per_category = dict(zip(dataset.category_names, map(int, positives)))
    _counts(found, dataset.Y.tocsr(), dataset.X.data)
    return found


# -- folders of text files --------------------------------------------------------------------------------------
def _files_by_category(path: Path, test: Path | None = None) -> Detected:
    from mlnb.data.folders import FolderReading, list_folder, read_document

    reading = FolderReading()
    listings = [list_folder(path, reading)] + ([list_folder(test, reading, what="test_path")] if test else [])
    options = {"path": str(path)} | ({"test_path": str(test)} if test else {})
    found = Detected("files", options, "a folder of text files, one sub-folder per category (scikit-learn's "
                     "load_files layout)" + (", a train and a test folder" if test else ""))
    _sample_documents(listings, read_document)
    return _from_labels(found, [labels for listing in listings for labels in listing.labels])


def _sample_documents(listings, read_document, n: int = 200) -> None:
    """Read the first ``n`` documents of each listing: a binary file is refused now, not after training."""
    for listing in listings:
        for file in listing.files[:n]:
            read_document(file, "utf-8")


def _labels_file(folder: Path, files: list[Path]) -> Path | None:
    named = [f for f in files if f.name.lower() in LABELS_FILE_NAMES]
    if named:
        return named[0]
    candidates = [f for f in files if f.suffix.lower() in (".csv", ".tsv", ".jsonl") and "label" in f.name.lower()]
    return candidates[0] if len(candidates) == 1 else None


def _files_with_labels(folder: Path, labels_file: Path, hints: Hints) -> Detected:
    from mlnb.data.folders import FolderReading, list_folder, read_document

    fmt, header, rows, _ = _table(labels_file)
    names = list(rows[0].keys()) if rows else []
    existing = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    file_column = next((c for c in names if sum(str(r.get(c, "")).strip() in existing for r in rows) > len(rows) / 2),
                       None)
    if file_column is not None and not header and str(rows[0][file_column]).strip() not in existing:
        fmt, header, rows, _ = _table(labels_file, header=True)  # the first row names the columns, not a file
        names = list(rows[0].keys())
        file_column = names[int(file_column)]
    if file_column is None:
        raise MlnbError(f"{labels_file}: no column names files of {folder} (columns: {', '.join(names)}); expected "
                        "rows of a file name (relative to the folder) and its labels")
    others = [c for c in names if c != file_column]
    label_column = hints.label_column or _label_column(labels_file, others, rows)
    separator = hints.label_separator or _separator(labels_file, [r.get(label_column) for r in rows], force=True)
    options = {"path": str(folder), "labels_path": str(labels_file), "file_column": file_column,
               "label_column": label_column, "label_separator": separator or ","}
    if fmt != "auto":
        options["format"] = fmt
    if not header:
        options["header"] = False
    reading = FolderReading(labels_path=str(labels_file), file_column=file_column, label_column=label_column,
                            label_separator=separator or ",", format=fmt, header=header)
    listing = list_folder(folder, reading, str(labels_file))
    _sample_documents([listing], read_document)
    found = Detected("files", options, f"a folder of text files and the labels file {labels_file.name}")
    found.separator, found.label_column = separator, label_column
    return _from_labels(found, listing.labels)


def _from_labels(found: Detected, labels: list) -> Detected:
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


# -- files of texts ---------------------------------------------------------------------------------------------
def _text_format(path: Path, head: list[str]) -> str:
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


def _table(path: Path, header: bool | None = None) -> tuple[str, bool, list[dict], str]:
    """(format, header, the first SNIFF_ROWS rows as column -> value, why the header was so guessed) of a
    CSV/TSV/JSON-lines file; ``header``: whether the first row names the columns (None: guess)."""
    head = _head(path)
    fmt = _text_format(path, head)
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


def _label_column(path: Path, columns: list[str], rows: list[dict]) -> str:
    """The label column: a known name, else the column with the fewest distinct values (at least 2)."""
    if not columns:
        raise MlnbError(f"{path}: one column only; expected a text column and a label column")
    for name in LABEL_NAMES:
        for column in columns:
            if column.strip().lower() == name:
                return column
    usable, distinct = _label_candidates(columns, rows)
    if not usable:
        found = ", ".join(f"{c!r} ({distinct[c]:,} distinct values in {len(rows):,} rows)" for c in columns)
        raise MlnbError(f"{path}: cannot tell the label column among {found}; set it: mlnb init ... "
                        "--label-column NAME")
    return min(usable, key=lambda c: (distinct[c], columns.index(c)))


def _label_candidates(columns: list[str], rows: list[dict]) -> tuple[list[str], dict]:
    """(the columns that could hold labels: 2 to half as many distinct values as rows, distinct values by column)."""
    distinct = {c: len({json.dumps(r.get(c), sort_keys=True) for r in rows}) for c in columns}
    return [c for c in columns if 2 <= distinct[c] <= max(2, len(rows) // 2)], distinct


def _text_column(path: Path, columns: list[str], rows: list[dict]) -> str:
    for name in TEXT_NAMES:
        for column in columns:
            if column.strip().lower() == name:
                return column
    strings = [c for c in columns if all(isinstance(r.get(c), str) for r in rows)]
    if not strings:
        raise MlnbError(f"{path}: no column of texts among {', '.join(map(repr, columns))}; set it: mlnb init ... "
                        "--text-column NAME")
    return max(strings, key=lambda c: (np.mean([len(r.get(c, "")) for r in rows]), -columns.index(c)))


def _separator(path: Path, cells: list, force: bool = False) -> str:
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


def _texts(path: Path, head: list[str], hints: Hints) -> Detected:
    from mlnb.data.text import TextReading, label_problem, text_records

    fmt, header, rows, header_why = _table(path)
    if not rows:
        raise MlnbError(f"{path}: no rows of a text and its labels")
    columns = list(rows[0].keys())
    for given, what in ((hints.text_column, "--text-column"), (hints.label_column, "--label-column")):
        if given and given not in columns:
            raise MlnbError(f"{path}: {what} {given!r} is not a column; the columns are {', '.join(columns)}")
    text_column = hints.text_column or _text_column(path, [c for c in columns if c != hints.label_column], rows)
    label_column = hints.label_column or _label_column(path, [c for c in columns if c != text_column], rows)
    separator = hints.label_separator or _separator(path, [r.get(label_column) for r in rows])
    multi = bool(separator) or any(isinstance(r.get(label_column), list) for r in rows)
    options = {"path": str(path)}
    if fmt != "auto":
        options["format"] = fmt
    kind = {"csv": "CSV", "tsv": "TSV", "jsonl": "JSON-lines"}[fmt if fmt != "auto" else _text_format(path, head)]
    if kind != "JSON-lines":  # written either way, with why: the run reads the first row as init chose
        options["header"] = header
    options |= {"text_column": text_column, "label_column": label_column, "labels": "multi" if multi else "single"}
    if separator:
        options["label_separator"] = separator
    reading = TextReading(format=fmt, header=header, text_column=text_column, label_column=label_column,
                          labels="multi" if multi else "single", label_separator=separator or ",")
    labels, documents = [], 0
    for records in text_records(path, reading, batch=100_000):
        labels += records.labels
        documents += len(records.texts)
    found = Detected("text", options, f"a {kind} file of texts")
    found.separator, found.label_column = separator, label_column
    if header_why:
        found.why["header"] = header_why
    others = _label_candidates([c for c in columns if c not in (text_column, label_column)], rows)[0]
    if others:
        found.why["label_column"] = (f"other columns that could hold the labels: {', '.join(map(repr, others))} "
                                     "(mlnb init ... --label-column NAME)")
    _from_labels(found, labels)
    problem = label_problem(found.documents_per_category, reading)
    if problem:
        raise MlnbError(f"{path}: {problem} (mlnb init: --label-column NAME, --label-separator S)")
    return found


def _event_model_name(presence: bool) -> str:
    """The default Naive Bayes kind's event model: its default (counts), or the first registered one that reads
    word presence."""
    from mlnb.config import DEFAULT_MODELS
    from mlnb.models import KINDS
    from mlnb.models.naive_bayes.event_model import REGISTERED

    if presence:
        return next(model.name for model in REGISTERED.values() if model.presence and model.non_negative)
    return KINDS[DEFAULT_MODELS["nb"]].options().event_model


# -- the config --------------------------------------------------------------------------------------------------
def _lr_options(n_documents: int) -> dict:
    """Minibatches that give a small corpus enough updates: 100 documents, 10 passes below 100,000 documents."""
    return {"batch_size": 100, "npasses": 10} if n_documents < 100_000 else {}


def starter_config(found: Detected, data: str, name: str) -> str:
    """The TOML text of a config that runs ``found`` as is: NB and LR, every other key at its default. What the
    data named (its path, categories, columns) is written by toml_value or in toml_comment: escaped, so that no
    name can end a string or a comment and write a key of its own."""
    from mlnb.config import DEFAULT_MODELS, toml_comment, toml_key, toml_value

    shown = ", ".join(f"{k if len(k) <= 80 else k[:80] + '...'} ({n:,})"
                      for k, n in list(found.documents_per_category.items())[:8])
    more = f" and {found.n_categories - 8:,} more" if found.n_categories > 8 else ""
    comments = [f"Starter config written by `mlnb init {data}`: it runs as is (`mlnb run <this file>`);",
                "every key not given here keeps its default (`mlnb show-config <this file>` lists them all).",
                f"Detected: {found.format}; {found.n_documents:,} documents, {found.n_categories:,} categories:",
                f"  {shown}{more}."]
    comments += [f"Note: {note}." for note in found.notes]
    comments += ["Paths are read from the working directory, as you gave them to `mlnb init`."]
    task = ("every document has exactly one category (\"multilabel\": each category one-vs-rest)"
            if found.task == "multiclass" else "each category one-vs-rest (documents have none, one or more)")
    lines = [toml_comment(line) for line in comments]
    lines += [f"name = {toml_value(name, 'name')}", "seed = 0",
              f"task = {toml_value(found.task)}  " + toml_comment(task), "", "[data]",
              f"source = {toml_value(found.source)}"]
    if "test_path" not in found.options:
        lines.append("test_fraction = 0.5  " + toml_comment("share of the documents held out for the test (a seeded "
                                                           "hash of each id)"))
    table = f"data.{toml_key(found.source)}"
    lines += ["", f"[{table}]"]
    for key, value in found.options.items():
        why = found.why.get(key) or ("the separator of the labels in a cell" if key == "label_separator" else "")
        lines.append(f"{toml_key(key)} = {toml_value(value, f'{table}.{key}')}" + ("  " + toml_comment(why) if why
                                                                                   else ""))
    lines += ["", "[models.nb]", f"kind = {toml_value(DEFAULT_MODELS['nb'])}",
              f"event_model = {toml_value(_event_model_name(found.presence))}"]
    if not found.nb_enabled:
        lines.append("enabled = false  " + toml_comment("negative feature values: Naive Bayes needs counts or "
                                                       "presence"))
    lines += ["", "[models.lr]", f"kind = {toml_value(DEFAULT_MODELS['lr'])}"]
    lines += [f"{key} = {toml_value(value)}" for key, value in _lr_options(found.n_documents).items()]
    lines += ["", "[report]",
              toml_comment("category = -1 (the default) plots the most frequent category that can be tested; name "
                           "one with"),
              toml_comment("category_name = \"...\"")]
    return "\n".join(lines) + "\n"


def summary(found: Detected, split: str) -> list[str]:
    """What ``mlnb init`` prints: what it detected, one fact a line."""
    per = "one per document" if found.labels_per_document == "one" else "none, one or several per document"
    lines = [f"format: {found.format}", f"documents: {found.n_documents:,}",
             f"categories: {found.n_categories:,} ({per}; task = {found.task!r})"]
    if "header" in found.why:
        lines.append(f"header: {'yes' if found.options.get('header') else 'no'}, {found.why['header']}")
    if found.label_column:  # a file of texts, or a labels file
        lines.append(f"label column: {found.label_column!r}" + (f"; {found.why['label_column']}"
                                                                 if "label_column" in found.why else ""))
        lines.append("label separator: " + (repr(found.separator) if found.separator else "none (one label per cell, "
                                                                                          "or JSON lists)"))
    lines.append(f"split: {split}")
    lines += [f"note: {note}" for note in found.notes]
    return lines


def write_starter(data, out, hints: Hints = Hints(), overwrite: bool = False) -> tuple[Path, list[str]]:
    """Detect ``data``, write the starter config to ``out`` (checked by loading it back), and return
    (the config's path, the lines to print)."""
    from mlnb.config import load_config
    from mlnb.data.sources import describe_split

    out = Path(out)
    if out.exists() and not overwrite:
        raise MlnbError(f"{out}: exists; choose another --out or add --force to replace it")
    if out.suffix.lower() != ".toml":
        raise MlnbError(f"--out {out}: expected a .toml file name")
    found = detect(data, hints)
    stem = Path(str(data).rstrip("/\\")).name.split(".")[0]
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", re.sub(r"[-_.]?train(ing)?$", "", stem)).strip("-.") or "study"
    text = starter_config(found, str(data), stem[:60])
    out.parent.mkdir(parents=True, exist_ok=True)
    staged = out.with_name(f".{out.name}.partial")
    staged.write_text(text, encoding="utf-8")
    try:
        config = load_config(staged)
    except MlnbError as error:
        staged.unlink()
        raise MlnbError(f"the starter config for {data} does not load ({error}); please report this") from None
    os.replace(staged, out)
    return out, summary(found, describe_split(config.data, config.data_seed()))
