"""Raw text: the CSV / TSV / JSON-lines reader, and text -> word counts.

One reader of the format (:func:`text_records`: rows streamed from a file, plain, .gz or .bz2,
each with the line where it begins) serves the in-memory loader (:func:`load_text_dataset`)
and the streaming source (:class:`mlnb.data.stream.TextSource`), so both read the same
documents and refuse a bad row with the same one line ``file:LINE: what is wrong``.

Texts become counts of word n-grams (``ngram_range``; [1, 1]: words) with scikit-learn's
CountVectorizer, whose vocabulary comes from the training documents only (:func:`fit_text` learns it
in one pass, as a stream; the in-memory loader fits it on the training texts at once: the same terms,
sorted the same way), or its HashingVectorizer (a fixed number of hashed features, non-negative
counts, no vocabulary; the distinct training terms are counted to state how many share a column).

The terms are counted within ``features.max_vocabulary_memory`` (:mod:`mlnb.data.vocabulary`: beyond
it, out of core in DuckDB). Vocabulary pruning (``min_df``, ``max_features``) happens in
``mlnb.features`` for data read whole, the same way for every source; a streamed text source, and
text read whole whose terms outgrew the budget, apply it in the vocabulary pass instead (the same
columns: :mod:`mlnb.data.vocabulary` states the rule).
"""

from __future__ import annotations

import codecs
import csv
import io
import itertools
import json
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb.data.dataset import Dataset, RowOrigin, hash_split
from mlnb.data.files import DECOMPRESSION_ERRORS, expand_paths, file_ids, open_binary, source_name
from mlnb.budget import check_data_sizes
from mlnb.data.limits import MAX_CATEGORIES, MAX_LINE_BYTES
from mlnb.data.splits import given_split_rule, hash_split_rule
from mlnb.data.vocabulary import (DEFAULT_VOCABULARY_MEMORY_MIB, TERM_BYTES, DocumentFrequencies, check_ngram_range,
                                  hashing_summary, term_kind, vocabulary_summary)
from mlnb.errors import MlnbError, MlnbWarning


# csv refuses a field beyond 131,072 characters by default: a valid document of a few hundred KB (a long
# article in one cell) would be "malformed". Raised to the bound of every line a reader holds (a bounded,
# C long-safe value, not sys.maxsize), never lowered below what another caller set.
csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))


@dataclass(frozen=True)
class TextOptions:
    """How texts become counts (from the config's [features] section).

    ngram_range : (min_n, max_n): the terms are the word n-grams for n from min_n to max_n
    min_df, max_features : the vocabulary pass's pruning (0 = none): a streamed source's, and, read whole,
        only where the terms were counted out of core (else ``mlnb.features`` prunes the same columns)
    vocabulary_memory : bytes the counts of the training terms may take in memory before they spill
    """

    vectorizer: str = "count"  # "count" or "hashing"
    lowercase: bool = True
    stop_words: str = "none"  # "none" or "english"
    hash_features: int = 2**18
    ngram_range: tuple = (1, 1)
    min_df: int = 0
    max_features: int = 0
    vocabulary_memory: int = DEFAULT_VOCABULARY_MEMORY_MIB * 2**20

    def __post_init__(self):
        object.__setattr__(self, "ngram_range", check_ngram_range(self.ngram_range))


def vocabulary_features(vocabulary, text_options) -> tuple[dict | None, int, list | None]:
    """(vocabulary, n_features, feature_names) of a fitted text source: the vocabulary's terms by column,
    or, with the hashing vectorizer, no vocabulary and ``hash_features`` unnamed columns."""
    if text_options.vectorizer == "hashing":
        return None, text_options.hash_features, None
    vocabulary = dict(vocabulary)
    feature_names = [None] * len(vocabulary)
    for term, j in vocabulary.items():
        feature_names[j] = term
    return vocabulary, len(vocabulary), feature_names


def vectorizer(options: TextOptions, vocabulary: dict | None = None):
    """The scikit-learn vectorizer of ``options`` (a CountVectorizer with ``vocabulary`` fixed when given)."""
    from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer

    stop_words = None if options.stop_words == "none" else options.stop_words
    if options.vectorizer == "hashing":
        return HashingVectorizer(n_features=options.hash_features, lowercase=options.lowercase,
                                 stop_words=stop_words, ngram_range=options.ngram_range, alternate_sign=False,
                                 norm=None, dtype=np.float32)
    return CountVectorizer(lowercase=options.lowercase, stop_words=stop_words, ngram_range=options.ngram_range,
                           dtype=np.float32, vocabulary=vocabulary)


_EMPTY_VOCABULARY = ("cannot build a vocabulary from the training texts: empty vocabulary; perhaps the documents "
                     "only contain stop words")


#: documents whose terms are counted at a time (the batch's own counts come on top of the budget's dict)
COUNT_BATCH = 1_000


def count_terms(frequencies: DocumentFrequencies, analyzer, texts: Sequence[str]) -> None:
    """Add each text's terms (``analyzer(text)``) to ``frequencies``, ``COUNT_BATCH`` texts at a time."""
    for start in range(0, len(texts), COUNT_BATCH):
        frequencies.add(analyzer(text) for text in texts[start:start + COUNT_BATCH])


def kept_vocabulary(frequencies: DocumentFrequencies, options: TextOptions, prune: bool) -> tuple[dict, dict]:
    """(vocabulary term -> column, summary.json's text_features) of counted training terms: pruned by
    ``options.min_df`` / ``max_features`` when ``prune``; one line when nothing is left. The kept vocabulary is
    held in memory to vectorise: beyond the budget, an MlnbWarning names the keys that keep fewer terms."""
    min_df, max_features = (options.min_df, options.max_features) if prune else (0, 0)
    terms = frequencies.vocabulary(min_df, max_features)
    distinct = frequencies.distinct_terms
    if not distinct:
        raise MlnbError(_EMPTY_VOCABULARY)
    if not terms:
        raise MlnbError(f"features.min_df = {min_df} removes every feature: no {term_kind(options.ngram_range)} in "
                        f"at least {min_df} training documents")
    held = TERM_BYTES * len(terms) + sum(map(len, terms))
    if held > options.vocabulary_memory:
        warnings.warn(MlnbWarning(
            f"features.max_vocabulary_memory = {options.vocabulary_memory / 2**20:,.4g} MiB: the kept vocabulary of "
            f"{len(terms):,} {term_kind(options.ngram_range)} (~{held / 2**20:,.0f} MiB) is held in memory to "
            "vectorise the texts; features.min_df or max_features (or vectorizer = 'hashing') keep fewer"), stacklevel=3)
    summary = vocabulary_summary(options.ngram_range, distinct, len(terms), min_df, max_features, frequencies.spills)
    return {term: j for j, term in enumerate(terms)}, summary


def hashed_terms(frequencies: DocumentFrequencies, options: TextOptions) -> dict:
    """summary.json's text_features of hashed training terms: how many share a bucket."""
    return hashing_summary(options.ngram_range, frequencies.collisions(options.hash_features), frequencies.spills)


def _vocabulary_bytes_bound(texts: Sequence[str], options: TextOptions) -> int:
    """More than CountVectorizer's dict of the terms of ``texts`` can take (bytes): a term has at least 2
    word characters and a separator, so a text of c characters has at most c/3 + 1 n-grams of each n,
    whose characters (4 bytes each at most) add up to at most n·(c + 1)."""
    characters, n_texts = sum(map(len, texts)), len(texts)
    low, high = options.ngram_range
    return sum((characters // 3 + n_texts) * TERM_BYTES + 4 * n * (characters + n_texts) for n in range(low, high + 1))


@dataclass(frozen=True)
class Vectorized:
    """Training and test texts as counts: CSR float32 X_train and X_test, the feature names (None:
    hashed), and what the report states of the terms (``text_features``)."""

    X_train: sp.csr_matrix
    X_test: sp.csr_matrix
    feature_names: list | None
    text_features: dict


def vectorize_texts(train_texts: Sequence[str], test_texts: Sequence[str],
                    options: TextOptions = TextOptions()) -> Vectorized:
    """The counts of ``train_texts`` and ``test_texts``, the vocabulary (count) from the training texts only.

    Where the vocabulary cannot outgrow ``options.vocabulary_memory`` (:func:`_vocabulary_bytes_bound`),
    CountVectorizer fits it at once; else the training terms are counted in batches
    (:class:`DocumentFrequencies`), pruned there by min_df / max_features only when they left memory. The
    hashing vectorizer's distinct training terms are counted the same way, for their collisions."""
    counter = vectorizer(options)
    if options.vectorizer == "hashing":
        with DocumentFrequencies(options.vocabulary_memory) as frequencies:
            count_terms(frequencies, counter.build_analyzer(), train_texts)
            features = hashed_terms(frequencies, options)
        return Vectorized(counter.transform(train_texts).tocsr(), counter.transform(test_texts).tocsr(), None,
                          features)
    if _vocabulary_bytes_bound(train_texts, options) <= options.vocabulary_memory:
        try:
            X_train = counter.fit_transform(train_texts)
        except ValueError:  # "empty vocabulary": no training text has a term
            raise MlnbError(_EMPTY_VOCABULARY) from None
        names = list(counter.get_feature_names_out())
        features = vocabulary_summary(options.ngram_range, len(names), len(names), 0, 0, spills=0)
        return Vectorized(X_train.tocsr(), counter.transform(test_texts).tocsr(), names, features)
    with DocumentFrequencies(options.vocabulary_memory) as frequencies:
        count_terms(frequencies, counter.build_analyzer(), train_texts)
        vocabulary, features = kept_vocabulary(frequencies, options, prune=frequencies.out_of_core)
    counter = vectorizer(options, vocabulary)
    names = [None] * len(vocabulary)
    for term, j in vocabulary.items():
        names[j] = term
    return Vectorized(counter.transform(train_texts).tocsr(), counter.transform(test_texts).tocsr(), names, features)


# -- the CSV / TSV / JSON-lines reader -----------------------------------------------------------
_SUFFIX_FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".txt": "tsv", ".jsonl": "jsonl",
                   ".json": "jsonl", ".ndjson": "jsonl"}


def text_format(path: Path, fmt: str, table: str = "data.text") -> str:
    """The format of ``path``: ``fmt``, or with 'auto' the one its suffix names (before .gz / .bz2);
    ``table`` is the config table that sets it, for the message."""
    if fmt != "auto":
        return fmt
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2"):
        suffixes = suffixes[:-1]
    suffix = suffixes[-1] if suffixes else ""
    if suffix not in _SUFFIX_FORMATS:
        raise MlnbError(f"{path}: cannot tell the format from the suffix {suffix!r}; "
                        f"set {table}.format to 'csv', 'tsv' or 'jsonl'")
    return _SUFFIX_FORMATS[suffix]


@dataclass(frozen=True)
class TextReading:
    """How rows of a CSV/TSV/JSON-lines file become (text, labels): the [data.text] options.

    table : the config table whose keys these are, named in messages (``data.files`` reads its
        labels file with this reader: its file names stand in the text column)
    check_labels : refuse labels that look mis-split or are not labels (:func:`check_label_names`)
    """

    format: str = "auto"
    header: bool = True
    text_column: str = "text"
    label_column: str = "label"
    labels: str = "single"
    label_separator: str = ","
    negative_labels: tuple = ()
    encoding: str = "utf-8"
    check_labels: bool = True
    table: str = "data.text"

    def __post_init__(self):
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise MlnbError(f"{self.table}.encoding: unknown encoding {self.encoding!r}") from None
        if self.format not in ("auto", "csv", "tsv", "jsonl"):
            raise MlnbError(f"{self.table}.format: expected 'auto', 'csv', 'tsv' or 'jsonl', got {self.format!r}")
        if self.labels not in ("single", "multi"):
            raise MlnbError(f"{self.table}.labels: expected 'single' or 'multi', got {self.labels!r}")
        if self.labels == "multi" and not self.label_separator:
            raise MlnbError(f"{self.table}.label_separator: expected a separator of labels such as ',' or ';', got "
                            f"{self.label_separator!r}")


@dataclass
class Records:
    """Rows of one file: record (line) numbers, texts, label-name lists."""

    numbers: list = field(default_factory=list)
    texts: list = field(default_factory=list)
    labels: list = field(default_factory=list)


def _decode_error_line(path: Path, codec: str) -> tuple[int, str]:
    """(line, reason) of the first byte that ``codec`` cannot decode, the lines read in bounded pieces."""
    decoder = codecs.getincrementaldecoder(codec)()
    number = 1
    with open_binary(path) as stream:
        while raw := stream.readline(MAX_LINE_BYTES + 1):
            try:
                decoder.decode(raw)
            except UnicodeError as error:  # UnicodeDecodeError, or e.g. UTF-16 without its byte-order mark
                return number, getattr(error, "reason", str(error))
            number += raw.endswith(b"\n")
    return 0, "undecodable bytes"


def _text_lines(path: Path, encoding: str, table: str = "data.text") -> Iterator[str]:
    """The decoded lines of ``path`` (universal newlines), streamed; a file of nothing but
    whitespace is refused as empty."""
    codec = "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding
    binary = open_binary(path)
    lines = io.TextIOWrapper(binary, encoding=codec, errors="strict", newline=None)
    try:
        bounded = _bounded_lines(path, lines)
        leading = []  # blank lines before the first with content (a header or a record)
        for line in bounded:
            leading.append(line)
            if line.strip():
                break
        else:
            raise MlnbError(f"{path}: the file is empty")
        yield from itertools.chain(leading, bounded)
    except UnicodeError:  # UnicodeDecodeError, or e.g. UTF-16 without its byte-order mark
        line, reason = _decode_error_line(path, codec)
        raise MlnbError(f"{path}:{line}: not valid {encoding} text ({reason}); set {table}.encoding") from None
    except DECOMPRESSION_ERRORS as error:
        raise MlnbError(f"{path}: corrupt or truncated compressed data ({error})") from None
    finally:
        lines.close()


def _bounded_lines(path: Path, lines: io.TextIOWrapper) -> Iterator[str]:
    """The lines of ``lines``, each read at most MAX_LINE_BYTES characters at a time: a longer line (a
    file without newlines, a binary file) is refused on its line before it is held whole."""
    number = 0
    while line := lines.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(line) > MAX_LINE_BYTES:
            raise MlnbError(f"{path}:{number}: a line of more than {MAX_LINE_BYTES:,} characters; expected lines "
                            f"(records) of at most {MAX_LINE_BYTES:,} characters: not a text file?")
        yield line


class _Kept:
    """The lines an iterator handed out since the last ``clear`` (the record being read)."""

    def __init__(self, lines: Iterator[str]):
        self.lines, self.kept = lines, []

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = next(self.lines)
        self.kept.append(line)
        return line


def _opening_quote_line(lines: list[str], start: int, delimiter: str) -> int:
    """The line of the quote that opens the field still open at the end of the file, scanning the
    CSV record whose ``lines`` begin on line ``start`` (a quote opens a field only at the field's
    start; "" inside a quoted field is a literal quote)."""
    in_quote, opened = False, start
    for number, line in enumerate(lines, start=start):
        field_start = not in_quote
        i = 0
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


def _rows_delimited(path: Path, lines: Iterator[str], delimiter: str, reading: TextReading):
    """(line, text, label cell) of each data row; a row's line is the one where it begins."""
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    kind = "TSV" if delimiter == "\t" else "CSV"
    record = _Kept(lines)
    reader = csv.reader(record, delimiter=delimiter, quoting=quoting, strict=True)
    start, names, t, l = 1, None, None, None
    while True:
        record.kept.clear()
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            if quoting != csv.QUOTE_NONE and "end of data" in str(error):  # the file ended inside a quoted field
                opened = _opening_quote_line(record.kept, start, delimiter)
                raise MlnbError(f"{path}:{opened}: malformed {kind}: the quote opened on this line is never closed "
                                "(a quote inside a quoted field is written twice: \"\")") from None
            raise MlnbError(f"{path}:{reader.line_num}: malformed {kind} ({error})") from None
        number, start = start, reader.line_num + 1
        if names is None:
            if reading.header:
                names = row
                seen = {}
                for i, name in enumerate(names):
                    if name in seen:
                        raise MlnbError(f"{path}:{number}: column {name!r} appears twice in the header (columns "
                                        f"{seen[name] + 1} and {i + 1}); expected distinct column names")
                    seen[name] = i
            else:
                names = [str(i) for i in range(len(row))]
            columns = {name: i for i, name in enumerate(names)}
            for key, column in (("text_column", reading.text_column), ("label_column", reading.label_column)):
                if column not in columns:
                    raise MlnbError(f"{path}: {reading.table}.{key} = {column!r} is not a column; the columns are "
                                    f"{', '.join(names)}")
            t, l = columns[reading.text_column], columns[reading.label_column]
            if reading.header:
                continue
        if not row:
            continue
        if len(row) != len(names):
            raise MlnbError(f"{path}:{number}: expected {len(names)} columns, got {len(row)}")
        yield number, row[t], row[l]


def _rows_jsonl(path: Path, lines: Iterator[str], reading: TextReading):
    def unique_keys(pairs):
        record = {}
        for key, value in pairs:
            if key in record:
                raise MlnbError(f"{path}:{number}: key {key!r} appears twice in the JSON object; "
                                "expected distinct keys")
            record[key] = value
        return record

    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_pairs_hook=unique_keys)
        except json.JSONDecodeError as error:
            raise MlnbError(f"{path}:{number}: not a JSON object ({error.msg})") from None
        except RecursionError:
            raise MlnbError(f"{path}:{number}: not a JSON object of a text and its labels (nested too deeply)") from None
        if not isinstance(record, dict) or reading.text_column not in record or reading.label_column not in record:
            raise MlnbError(f"{path}:{number}: expected a JSON object with keys {reading.text_column!r} and "
                            f"{reading.label_column!r}")
        yield number, record[reading.text_column], record[reading.label_column]


def _label_names(path: Path, number: int, label, reading: TextReading) -> list:
    if label is None:
        names = []
    elif isinstance(label, list):
        names = [str(x).strip() for x in label if x is not None]
    elif reading.labels == "multi":
        names = [x.strip() for x in str(label).split(reading.label_separator) if x.strip()]
    else:
        names = [str(label).strip()]
    names = [name for name in names if name]
    if reading.labels == "single" and len(names) > 1:
        raise MlnbError(f"{path}:{number}: expected one label ({reading.table}.labels = 'single'), got {label!r}")
    return names


def text_records(path: Path, reading: TextReading, batch: int | None = None) -> Iterator[Records]:
    """The rows of a text file in batches of ``batch`` records (None: all in one)."""
    fmt = text_format(path, reading.format, reading.table)
    lines = _text_lines(path, reading.encoding, reading.table)
    rows = (_rows_jsonl(path, lines, reading) if fmt == "jsonl" else
            _rows_delimited(path, lines, "," if fmt == "csv" else "\t", reading))
    records = Records()
    try:
        for number, text, label in rows:
            if not isinstance(text, str):
                raise MlnbError(f"{path}:{number}: the text must be a string, got {text!r}")
            records.numbers.append(number)
            records.texts.append(text)
            records.labels.append(_label_names(path, number, label, reading))
            if len(records.texts) == batch:
                yield records
                records = Records()
    finally:
        lines.close()
    if records.texts:
        yield records


def label_matrix(label_lists: Sequence[list], categories: Sequence[str]) -> sp.csr_matrix:
    """0/1 CSR (documents × categories) of label-name lists; names not in ``categories`` are no category."""
    index = {name: k for k, name in enumerate(categories)}
    rows, cols = [], []
    for i, names in enumerate(label_lists):
        for name in set(names):
            if name in index:
                rows.append(i)
                cols.append(index[name])
    return sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(len(label_lists), len(categories)))


# -- labels that are not what they seem -------------------------------------------------------------
#: characters that separate the labels of a cell in files seen in the wild, tried when labels look mis-split
LABEL_SEPARATORS = (";", "|", ",", " ")
#: at least this many distinct labels before "most occur in one document only" says they are not labels
SINGLETON_MIN_LABELS = 20


def _split_on(names: Sequence[str], separator: str) -> tuple[list, set]:
    """(the names that contain ``separator``, the distinct parts they split into)."""
    containing = [name for name in names if separator in name]
    return containing, {part.strip() for name in containing for part in name.split(separator) if part.strip()}


def lists_separated_by(documents: dict, reading: TextReading) -> tuple[str, list] | None:
    """(separator, the labels that contain it) when the labels (name -> documents) look like lists of
    labels not split on that separator, else None. A separator s (other than the one the labels were
    split on) is taken to separate lists when at least two labels contain it and either

    * at least half of the parts they split into are labels themselves ('a;b' beside 'a' and 'b';
      not tried for a space: 'machine learning' beside 'learning' is a name), or
    * at least half of all labels contain it and splitting them gives fewer distinct parts than
      there are such labels (combinations of a few tags; multi-word names give more parts, not fewer).
    """
    names = list(documents)
    used = reading.label_separator if reading.labels == "multi" else None
    for separator in LABEL_SEPARATORS:
        if separator == used:
            continue
        containing, parts = _split_on([name.strip() for name in names], separator)
        if len(containing) < 2 or len(parts) < 2:
            continue
        listed = sum(part in documents for part in parts)
        if (separator != " " and 2 * listed >= len(parts)) or \
                (2 * len(containing) >= len(names) and len(parts) < len(containing)):
            return separator, containing
    return None


def label_problem(documents: dict, reading: TextReading) -> str | None:
    """Why the labels found (category name -> documents that carry it) look mis-split or are not
    labels at all, in words that name the key to set, or None. Two signs: labels that look like
    lists on another separator (:func:`lists_separated_by`), and most of at least
    ``SINGLETON_MIN_LABELS`` labels occurring in one document only (a text or id column, or labels
    split on a character inside their names)."""
    table, separator = reading.table, reading.label_separator
    multi = reading.labels == "multi"
    found = lists_separated_by(documents, reading)
    if found is not None:
        other, containing = found
        what = (f"{len(containing):,} of {len(documents):,} labels contain {other!r} (e.g. {containing[0]!r}): they "
                "look like lists of labels")
        if multi:
            return f"{what} split on {separator!r} instead of {other!r}; set {table}.label_separator = {other!r}"
        return f"{what}; set {table}.labels = 'multi' and {table}.label_separator = {other!r}"
    once = [name for name, n in documents.items() if n == 1]
    if len(documents) >= SINGLETON_MIN_LABELS and 2 * len(once) > len(documents):
        split = f", split on {separator!r} ({table}.label_separator)" if multi else ""
        return (f"{len(once):,} of {len(documents):,} labels occur in one document only (e.g. {once[0]!r}): is "
                f"{table}.label_column = {reading.label_column!r} the column of labels{split}? (set "
                f"{table}.check_labels = false to keep them as categories)")
    return None


# -- what a pass over the training documents learns ----------------------------------------------------
@dataclass
class TextFit:
    """What a first pass over text files learns: the categories and, for CountVectorizer, the
    vocabulary (term -> column, terms sorted as CountVectorizer sorts them)."""

    categories: list
    vocabulary: dict | None
    text_features: dict | None = None  # summary.json's data.text_features (:func:`kept_vocabulary`)


class _Fitting:
    """The labels (and, with ``vocabulary``, the training terms: CountVectorizer's vocabulary, or the
    distinct terms that HashingVectorizer hashes) of documents added batch by batch, training ones apart."""

    def __init__(self, reading: TextReading, options: TextOptions, vocabulary: bool):
        self.reading, self.options = reading, options
        self.analyzer = vectorizer(options).build_analyzer() if vocabulary else None
        self.terms = DocumentFrequencies(options.vocabulary_memory) if vocabulary else None
        self.trained: set = set()
        self.documents: Counter = Counter()  # label -> documents that carry it

    @property
    def seen(self) -> set:
        return set(self.documents)

    def add(self, records: Records, train: np.ndarray, where: str = "") -> None:
        for i, names in enumerate(records.labels):
            self.documents.update(set(names))
            if train[i]:
                self.trained.update(names)
        if self.analyzer is not None:
            self.terms.add(self.analyzer(records.texts[i]) for i in np.flatnonzero(train))
        # the labels found set the number of categories: bounded as they are collected, not once all are held
        if len(self.documents) > MAX_CATEGORIES + len(self.reading.negative_labels):
            line = f":{records.numbers[-1]}" if where and records.numbers else ""
            raise MlnbError(f"{where or 'text data'}{line}: more than {MAX_CATEGORIES:,} distinct labels so far; "
                            f"expected at most {MAX_CATEGORIES:,} categories (a text column as the label column?)")

    def result(self, first: Path, last: Path) -> TextFit:
        """Categories = the distinct labels of all documents, sorted, less ``negative_labels``; one
        line when no category has a training document, a warning naming the labels found only in
        test documents (``last``: the test file). The vocabulary when terms were counted, pruned by the
        options' min_df and max_features."""
        try:
            return self._result(first, last)
        finally:
            if self.terms is not None:
                self.terms.close()

    def _result(self, first: Path, last: Path) -> TextFit:
        negative = set(self.reading.negative_labels)
        if self.reading.check_labels:
            problem = label_problem({name: n for name, n in self.documents.items() if name not in negative},
                                    self.reading)
            if problem:
                raise MlnbError(f"{first}: {problem}")
        if not self.trained - negative:
            raise MlnbError(f"{first}: no category left: every training label is one of the negative "
                            f"labels {sorted(negative)}")
        # a label seen only in the test part stays a category (without training documents: untrainable,
        # listed in the report and left out of the macro averages), never silently dropped
        test_only = sorted(self.seen - negative - self.trained)
        if test_only:
            shown = ", ".join(map(repr, test_only[:10])) + (f" and {len(test_only) - 10} more"
                                                            if len(test_only) > 10 else "")
            warnings.warn(MlnbWarning(f"{last}: {len(test_only)} label(s) occur only in the test part: {shown}; kept "
                                      "as categories without training documents (no model can learn them; listed as "
                                      "untrainable)"), stacklevel=3)
        vocabulary = features = None
        categories = sorted(self.seen - negative)
        if self.terms is not None and self.options.vectorizer == "hashing":
            features = hashed_terms(self.terms, self.options)
        elif self.terms is not None:
            vocabulary, features = kept_vocabulary(self.terms, self.options, prune=True)
        check_data_sizes(str(first), n_categories=len(categories),
                         n_features=len(vocabulary) if vocabulary is not None else None)
        return TextFit(categories, vocabulary, features)


def fit_text(parts: Sequence[tuple[Sequence[Path], Callable[[np.ndarray], np.ndarray] | None]],
             reading: TextReading, options: TextOptions, batch: int = 10_000) -> TextFit:
    """One pass over text files: categories = the distinct labels of all their documents, sorted,
    less ``negative_labels``; vocabulary = the terms of the training documents (as
    ``CountVectorizer.fit`` would find them in all of those texts at once), built batch by batch.

    parts : (files, is_train) pairs; ``is_train(ids)`` picks the training documents of a batch
        (None: all of them). A label found in no training document is warned about and kept as a
        category.

    Memory grows with the vocabulary (Heaps' law: sublinearly in the corpus) up to
    ``options.vocabulary_memory``, not with the documents; beyond it the counts go out of core. With
    the hashing vectorizer the distinct training terms are counted for their collisions (``text_features``).
    """
    fitting = _Fitting(reading, options, vocabulary=True)
    try:
        for files, is_train in parts:
            for k, path in enumerate(files):
                position = 0
                for records in text_records(path, reading, batch):
                    ids = file_ids(k, len(files), len(records.texts), position)
                    position += ids.size
                    fitting.add(records, np.ones(ids.size, dtype=bool) if is_train is None else is_train(ids),
                                str(path))
                if position == 0:
                    raise MlnbError(f"{path}: no documents")
        return fitting.result(parts[0][0][0], parts[-1][0][0])
    finally:
        fitting.terms.close()  # a refused file leaves no counts out of core behind


# -- in memory ----------------------------------------------------------------------------------------
@dataclass
class _TextPart:
    """Every row of the files of one path (a file or a glob of files)."""

    files: list
    records: Records
    ids: np.ndarray
    origins: list


def _read_part(files: Sequence[Path], reading: TextReading) -> _TextPart:
    records, ids, origins = Records(), [], []
    for k, path in enumerate(files):
        read = Records()
        for batch in text_records(path, reading):
            read = batch
        if not read.texts:
            raise MlnbError(f"{path}: no documents")
        records.numbers += read.numbers
        records.texts += read.texts
        records.labels += read.labels
        ids.append(file_ids(k, len(files), len(read.texts)))
        origins.append(RowOrigin(str(path), len(read.texts), row_lines=np.asarray(read.numbers, dtype=np.int64)))
    return _TextPart(list(files), records, np.concatenate(ids), origins)


def load_text_dataset(path, test_path=None, format="auto", header=True, text_column="text",
                      label_column="label", labels="single", label_separator=",", negative_labels=(),
                      encoding="utf-8", text_options: TextOptions = TextOptions(), test_fraction=0.5,
                      seed=0, name=None, reading: TextReading | None = None) -> Dataset:
    """A Dataset from a text file or glob of files (split by a seeded hash of each document's id,
    as streamed) or from a train path and a test path (a given split).

    Categories are the distinct labels, sorted, except ``negative_labels`` ("ham"): documents with
    only those belong to no category. A label found only in the test part is a category without
    training documents, announced by an ``MlnbWarning``. The vocabulary (CountVectorizer) is the
    training documents' terms: the matrices of :func:`mlnb.data.stream.text_sources` of the same files.
    ``reading`` (a :class:`TextReading`), when given, replaces the keywords from ``format`` to ``encoding``.
    """
    if reading is None:
        reading = TextReading(format=format, header=header, text_column=text_column, label_column=label_column,
                              labels=labels, label_separator=label_separator, negative_labels=tuple(negative_labels),
                              encoding=encoding)
    train_files = expand_paths(path, "text data")
    test_files = expand_paths(test_path, "text data") if test_path else []
    parts = [_read_part(train_files, reading)] + ([_read_part(test_files, reading)] if test_path else [])
    fitting = _Fitting(reading, text_options, vocabulary=False)  # the vocabulary: fitted below, all at once
    name = name or source_name(train_files)
    if test_path:
        train, test = parts
        fitting.add(train.records, np.ones(train.ids.size, dtype=bool))
        fitting.add(test.records, np.zeros(test.ids.size, dtype=bool))
        fitted = fitting.result(train_files[0], test_files[0])
        counted = vectorize_texts(train.records.texts, test.records.texts, text_options)
        dataset = Dataset.from_train_test(counted.X_train, label_matrix(train.records.labels, fitted.categories),
                                          counted.X_test, label_matrix(test.records.labels, fitted.categories),
                                          fitted.categories, counted.feature_names, name=name,
                                          origins=train.origins + test.origins, ids=(train.ids, test.ids),
                                          split_rule=given_split_rule("test file", test_path))
        return replace(dataset, text_features=counted.text_features)
    (whole,) = parts
    train_index, test_index = hash_split(whole.ids, seed, test_fraction)
    is_train = np.zeros(whole.ids.size, dtype=bool)
    is_train[train_index] = True
    fitting.add(whole.records, is_train)
    fitted = fitting.result(train_files[0], train_files[0])
    texts = whole.records.texts
    counted = vectorize_texts([texts[i] for i in train_index], [texts[i] for i in test_index], text_options)
    # rows back in file order: row i is document i of the files, as the ids and origins say
    X = sp.vstack([counted.X_train, counted.X_test], format="csr")[np.argsort(np.concatenate([train_index,
                                                                                              test_index]))]
    return Dataset(X=X, Y=label_matrix(whole.records.labels, fitted.categories), category_names=fitted.categories,
                   train_index=train_index, test_index=test_index, feature_names=counted.feature_names, name=name,
                   origins=tuple(whole.origins), ids=whole.ids, split_rule=hash_split_rule(seed, test_fraction),
                   text_features=counted.text_features)
