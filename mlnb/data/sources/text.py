"""``data.source = "text"``: CSV, TSV or JSON-lines files of texts and labels (:mod:`mlnb.data.text`), in memory
or streamed (:class:`mlnb.data.stream.TextSource`): the same reader, documents, ids, split and vocabulary."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import Request, SourceKind, hashed_shape
from mlnb.data.splits import given_split_rule, hash_split_rule
from mlnb.options import option


@dataclass
class TextConfig:
    path: str = option("", "CSV, TSV or JSON-lines file (or glob of files; plain, .gz or .bz2) with one document "
                       "per row")
    test_path: str = option("", "optional separate test file (or glob); empty = a seeded hash split of `path`")
    format: str = option("auto", "file format; 'auto' = from the file suffix",
                         choices=("auto", "csv", "tsv", "jsonl"))
    header: bool = option(True, "CSV/TSV: the first row names the columns (else columns are '0', '1', ...)")
    text_column: str = option("text", "column (or JSON key) holding the text")
    label_column: str = option("label", "column (or JSON key) holding the label(s)")
    labels: str = option("single", "'single': one label per row; 'multi': a list of labels per row",
                         choices=("single", "multi"))
    label_separator: str = option(",", "multi: the separator of the labels in a CSV/TSV cell, e.g. ';' for "
                                  "\"sport;politics\" (JSON lists need none); labels that look split on the wrong "
                                  "one are refused, naming the one they seem to use")
    negative_labels: list[str] = option([], "labels that mean 'no category' (e.g. [\"ham\"] for spam)")
    encoding: str = option("utf-8", "text encoding of the file")
    check_labels: bool = option(True, "refuse labels that look mis-split (lists on another separator) or not "
                                "labels at all (most of 20 or more occurring in one document only)")


def text_options_of(request: Request):
    """How the request's texts become counts (``Request.text``; None: the defaults, a ``TextOptions()``)."""
    from mlnb.data.text import TextOptions

    return request.text or TextOptions()


def reading(s: TextConfig):
    """The :class:`mlnb.data.text.TextReading` of the options."""
    from mlnb.data.text import TextReading

    return TextReading(format=s.format, header=s.header, text_column=s.text_column, label_column=s.label_column,
                       labels=s.labels, label_separator=s.label_separator, negative_labels=tuple(s.negative_labels),
                       encoding=s.encoding, check_labels=s.check_labels)


def load(s: TextConfig, request: Request):
    from mlnb.data.text import load_text_dataset

    return load_text_dataset(s.path, test_path=s.test_path or None, reading=reading(s),
                             text_options=text_options_of(request), test_fraction=request.test_fraction,
                             seed=request.seed)


def open_streams(s: TextConfig, request: Request):
    from mlnb.data.stream import text_sources

    return text_sources(s.path, s.test_path or None, reading=reading(s), text_options=text_options_of(request),
                        seed=request.seed, test_fraction=request.test_fraction)


def open_whole(s: TextConfig, request: Request):
    """With a test file, the pair; without, all documents as one source whose CountVectorizer vocabulary comes
    from all of them (a later hash split of converted shards then has test-only words as columns: use
    ``vectorizer = "hashing"``, or convert a train and a test file, to keep the rule "vocabulary from training
    documents only")."""
    from mlnb.data.stream import TextSource, text_sources

    if s.test_path:
        return text_sources(s.path, s.test_path, reading=reading(s), text_options=text_options_of(request))
    return TextSource(s.path, reading(s), text_options_of(request)), None


def split(s: TextConfig, request: Request) -> str:
    return given_split_rule("test file", s.test_path) if s.test_path else hash_split_rule(request.seed,
                                                                                          request.test_fraction)


def check_task(s: TextConfig, task: str) -> None:
    """task = 'multiclass': one label a row (labels = 'single'), and no label that means 'no class'."""
    from mlnb.errors import MlnbError

    if task != "multiclass":
        return
    if s.labels != "single":
        raise MlnbError(f"data.text.labels = {s.labels!r}: task = 'multiclass' needs 'single'")
    if s.negative_labels:
        raise MlnbError(f"data.text.negative_labels = {s.negative_labels!r}: with task = 'multiclass' every label is "
                        "a class (a document without one has no class); leave it empty")


def detect(look):
    """``mlnb init``: any other file, read as CSV, TSV or JSON lines of texts: its format (by suffix, else sniffed),
    header, text and label columns (by name, else the longest texts and the column with the fewest distinct
    values) and label separator; refused in one line naming the option to set where it cannot tell."""
    from mlnb.data import detect as sniff
    from mlnb.data.text import TextReading, label_problem, text_records
    from mlnb.errors import MlnbError

    if look.is_folder:
        return None
    path, head, hints = look.path, look.head, look.hints
    fmt, header, rows, header_why = sniff.read_table(path)
    if not rows:
        raise MlnbError(f"{path}: no rows of a text and its labels")
    columns = list(rows[0].keys())
    for given, what in ((hints.text_column, "--text-column"), (hints.label_column, "--label-column")):
        if given and given not in columns:
            raise MlnbError(f"{path}: {what} {given!r} is not a column; the columns are {', '.join(columns)}")
    text_column = hints.text_column or sniff.text_column(path, [c for c in columns if c != hints.label_column], rows)
    label_column = hints.label_column or sniff.label_column(path, [c for c in columns if c != text_column], rows)
    separator = hints.label_separator or sniff.label_separator(path, [r.get(label_column) for r in rows])
    multi = bool(separator) or any(isinstance(r.get(label_column), list) for r in rows)
    options = {"path": str(path)}
    if fmt != "auto":
        options["format"] = fmt
    kind = {"csv": "CSV", "tsv": "TSV", "jsonl": "JSON-lines"}[fmt if fmt != "auto" else sniff.text_format(path, head)]
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
    found = sniff.Detected("text", options, f"a {kind} file of texts")
    found.separator, found.label_column = separator, label_column
    if header_why:
        found.why["header"] = header_why
    others = sniff.label_candidates([c for c in columns if c not in (text_column, label_column)], rows)[0]
    if others:
        found.why["label_column"] = (f"other columns that could hold the labels: {', '.join(map(repr, others))} "
                                     "(mlnb init ... --label-column NAME)")
    sniff.from_labels(found, labels)
    problem = label_problem(found.documents_per_category, reading)
    if problem:
        raise MlnbError(f"{path}: {problem} (mlnb init: --label-column NAME, --label-separator S)")
    return found


SOURCE = SourceKind(name="text", options=TextConfig, load=load, open_streams=open_streams, open_whole=open_whole,
                    split=split, required=("path",), help="CSV, TSV or JSON-lines files of texts and their labels",
                    files=lambda s: [p for p in (s.path, s.test_path) if p], prunes_vocabulary=True,
                    labels=lambda s: s.labels, shape=hashed_shape, check_task=check_task,
                    detect=detect, detect_order=90)  # last: any other file is read as texts
