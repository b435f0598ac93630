"""Raw text -> word counts, and the CSV / TSV / JSON-lines text source.

``vectorize`` turns training and test texts into count matrices with
scikit-learn's CountVectorizer (vocabulary from the training texts only) or
HashingVectorizer (a fixed number of hashed features, non-negative counts).
Vocabulary pruning (``min_df``, ``max_features``) happens later, in
``mlnb.features``, the same way for every source.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer

from mlnb.data.dataset import Dataset, random_split
from mlnb.data.validate import existing_file
from mlnb.errors import MlnbError, MlnbWarning


@dataclass(frozen=True)
class TextOptions:
    """How texts become counts (from the config's [features] section)."""

    vectorizer: str = "count"  # "count" or "hashing"
    lowercase: bool = True
    stop_words: str = "none"  # "none" or "english"
    hash_features: int = 2**18


def vectorize(train_texts: list[str], test_texts: list[str], options: TextOptions = TextOptions()):
    """(X_train, X_test, feature_names or None): CSR float32 word counts."""
    stop_words = None if options.stop_words == "none" else options.stop_words
    if options.vectorizer == "hashing":
        vectorizer = HashingVectorizer(n_features=options.hash_features, lowercase=options.lowercase,
                                       stop_words=stop_words, alternate_sign=False, norm=None,
                                       dtype=np.float32)
        return (vectorizer.transform(train_texts).tocsr(), vectorizer.transform(test_texts).tocsr(), None)
    vectorizer = CountVectorizer(lowercase=options.lowercase, stop_words=stop_words, dtype=np.float32)
    try:
        X_train = vectorizer.fit_transform(train_texts)
    except ValueError as error:  # e.g. "empty vocabulary"
        raise MlnbError(f"cannot build a vocabulary from the training texts: {error}") from None
    return X_train.tocsr(), vectorizer.transform(test_texts).tocsr(), list(vectorizer.get_feature_names_out())


# -- the CSV / TSV / JSON-lines source ---------------------------------------------------------
_SUFFIX_FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".txt": "tsv", ".jsonl": "jsonl",
                   ".json": "jsonl", ".ndjson": "jsonl"}


def _decoded_lines(path: Path, encoding: str) -> list[str]:
    """The file's lines, decoded; a bad byte is reported with its line number."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise MlnbError(f"data.text.encoding: unknown encoding {encoding!r}") from None
    raw = path.read_bytes()
    if not raw.strip():
        raise MlnbError(f"{path}: the file is empty")
    # utf-8-sig: a byte-order mark is not part of the first column's name
    codec = "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding
    try:
        text = raw.decode(codec)
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        raise MlnbError(f"{path}:{line}: not valid {encoding} text ({error.reason}); set data.text.encoding") \
            from None
    return text.splitlines()


def _format_of(path: Path, fmt: str) -> str:
    if fmt != "auto":
        return fmt
    if path.suffix.lower() not in _SUFFIX_FORMATS:
        raise MlnbError(f"{path}: cannot tell the format from the suffix {path.suffix!r}; "
                        "set data.text.format to 'csv', 'tsv' or 'jsonl'")
    return _SUFFIX_FORMATS[path.suffix.lower()]


def _opening_quote_line(lines: list[str], start: int, delimiter: str) -> int:
    """The line of the quote that opens the field still open at the end of the file, scanning the
    CSV record that begins on line ``start`` (a quote opens a field only at the field's start; ""
    inside a quoted field is a literal quote)."""
    in_quote, opened = False, start
    for number in range(start, len(lines) + 1):
        field_start = not in_quote
        line, i = lines[number - 1], 0
        while i < len(line):
            c = line[i]
            if in_quote:
                if c == '"' and line[i + 1:i + 2] == '"':
                    i += 1
                elif c == '"':
                    in_quote = False
            elif c == '"' and field_start:
                in_quote, opened = True, number
            field_start = not in_quote and c == delimiter
            i += 1
    return opened


def _rows_delimited(path: Path, lines: list[str], delimiter: str, header: bool, text_column: str,
                    label_column: str):
    """(line number, text, raw label cell) for each data row of a CSV/TSV file; a row's line is
    where it begins (a quoted field may span lines)."""
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    kind = "TSV" if delimiter == "\t" else "CSV"
    reader = csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter, quoting=quoting, strict=True)
    rows, numbers, start = [], [], 1
    try:
        for row in reader:
            rows.append(row)
            numbers.append(start)
            start = reader.line_num + 1
    except csv.Error as error:
        if quoting != csv.QUOTE_NONE and reader.line_num >= len(lines) and "end of data" in str(error):
            opened = _opening_quote_line(lines, start, delimiter)
            raise MlnbError(f"{path}:{opened}: malformed {kind}: the quote opened on this line is never closed "
                            "(a quote inside a quoted field is written twice: \"\")") from None
        raise MlnbError(f"{path}:{reader.line_num}: malformed {kind} ({error})") from None
    if header:
        if not rows:
            raise MlnbError(f"{path}: no header row (data.text.header = true)")
        names, rows, numbers = rows[0], rows[1:], numbers[1:]
        seen = {}
        for i, name in enumerate(names):
            if name in seen:
                raise MlnbError(f"{path}:1: column {name!r} appears twice in the header (columns {seen[name] + 1} "
                                f"and {i + 1}); expected distinct column names")
            seen[name] = i
    else:
        names = [str(i) for i in range(max((len(r) for r in rows), default=0))]
    columns = {name: i for i, name in enumerate(names)}
    for key, column in (("text_column", text_column), ("label_column", label_column)):
        if column not in columns:
            raise MlnbError(f"{path}: data.text.{key} = {column!r} is not a column; the columns are "
                            f"{', '.join(names)}")
    t, l = columns[text_column], columns[label_column]
    for number, row in zip(numbers, rows):
        if not row:
            continue
        if len(row) != len(names):
            raise MlnbError(f"{path}:{number}: expected {len(names)} columns, got {len(row)}")
        yield number, row[t], row[l]


def _unique_keys(pairs, path: Path, number: int) -> dict:
    """A JSON object's pairs as a dict, refusing a key given twice (json.loads would keep the last)."""
    record = {}
    for key, value in pairs:
        if key in record:
            raise MlnbError(f"{path}:{number}: key {key!r} appears twice in the JSON object; expected distinct keys")
        record[key] = value
    return record


def _rows_jsonl(path: Path, lines: list[str], text_column: str, label_column: str):
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_pairs_hook=lambda pairs: _unique_keys(pairs, path, number))
        except json.JSONDecodeError as error:
            raise MlnbError(f"{path}:{number}: not a JSON object ({error.msg})") from None
        if not isinstance(record, dict) or text_column not in record or label_column not in record:
            raise MlnbError(f"{path}:{number}: expected a JSON object with keys {text_column!r} and "
                            f"{label_column!r}")
        yield number, record[text_column], record[label_column]


def read_text_file(path, format="auto", header=True, text_column="text", label_column="label",
                   labels="single", label_separator=",", encoding="utf-8"):
    """(texts, label lists) of a CSV/TSV/JSON-lines file, one document per row."""
    path = existing_file(path, "text data")
    lines = _decoded_lines(path, encoding)
    fmt = _format_of(path, format)
    rows = (_rows_jsonl(path, lines, text_column, label_column) if fmt == "jsonl" else
            _rows_delimited(path, lines, "," if fmt == "csv" else "\t", header, text_column, label_column))
    texts, label_lists = [], []
    for number, text, label in rows:
        if not isinstance(text, str):
            raise MlnbError(f"{path}:{number}: the text must be a string, got {text!r}")
        if label is None:
            names = []
        elif isinstance(label, list):
            names = [str(x).strip() for x in label if x is not None]
        elif labels == "multi":
            names = [x.strip() for x in str(label).split(label_separator) if x.strip()]
        else:
            names = [str(label).strip()]
        names = [name for name in names if name]
        if labels == "single" and len(names) > 1:
            raise MlnbError(f"{path}:{number}: expected one label (data.text.labels = 'single'), got {label!r}")
        texts.append(text)
        label_lists.append(names)
    if not texts:
        raise MlnbError(f"{path}: no documents")
    return texts, label_lists


def _label_matrix(label_lists, categories: list[str]) -> sp.csr_matrix:
    index = {name: k for k, name in enumerate(categories)}
    rows, cols = [], []
    for i, names in enumerate(label_lists):
        for name in set(names):
            if name in index:
                rows.append(i)
                cols.append(index[name])
    return sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)),
                         shape=(len(label_lists), len(categories)))


def load_text_dataset(path, test_path=None, format="auto", header=True, text_column="text",
                      label_column="label", labels="single", label_separator=",", negative_labels=(),
                      encoding="utf-8", text_options: TextOptions = TextOptions(), test_fraction=0.5,
                      seed=0, name=None) -> Dataset:
    """A Dataset from a text file (seeded random split) or a train file and a test file.

    Categories are the distinct labels, sorted, except ``negative_labels`` ("ham"): documents with
    only those belong to no category. A label found only in the test part is a category without
    training documents, announced by an ``MlnbWarning``.
    """
    options = dict(format=format, header=header, text_column=text_column, label_column=label_column,
                   labels=labels, label_separator=label_separator, encoding=encoding)
    texts, label_lists = read_text_file(path, **options)
    if test_path:
        test_texts, test_labels = read_text_file(test_path, **options)
        train_texts, train_labels = texts, label_lists
    else:
        train, test = random_split(len(texts), test_fraction, seed)
        train_texts, train_labels = [texts[i] for i in train], [label_lists[i] for i in train]
        test_texts, test_labels = [texts[i] for i in test], [label_lists[i] for i in test]
    negative = set(negative_labels)
    trained = {n for names in train_labels for n in names} - negative
    if not trained:
        raise MlnbError(f"{path}: no category left: every training label is one of the negative labels "
                        f"{sorted(negative)}")
    # a label seen only in the test part stays a category (without training documents: untrainable,
    # listed in the report and left out of the macro averages), never silently dropped
    test_only = sorted({n for names in test_labels for n in names} - negative - trained)
    if test_only:
        shown = ", ".join(map(repr, test_only[:10])) + (f" and {len(test_only) - 10} more" if len(test_only) > 10 else "")
        warnings.warn(MlnbWarning(f"{test_path or path}: {len(test_only)} label(s) occur only in the test part: "
                                  f"{shown}; kept as categories without training documents (no model can learn "
                                  "them; listed as untrainable)"), stacklevel=2)
    categories = sorted(trained | set(test_only))
    X_train, X_test, feature_names = vectorize(train_texts, test_texts, text_options)
    return Dataset.from_train_test(X_train, _label_matrix(train_labels, categories), X_test,
                                   _label_matrix(test_labels, categories), categories, feature_names,
                                   name=name or Path(path).name.split(".")[0])
