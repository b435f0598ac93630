"""Chunk sources: a corpus read as a stream of chunks of documents, never whole.

A :class:`ChunkSource` knows ``n_features``, ``category_names`` and its
:class:`Partition` list (one per file or shard: what a Dask worker reads on its
own), and yields :class:`Chunk` objects of at most ``chunk_size`` documents from
one partition (``read``) or from all of them in order (``chunks``). Every chunk's
X and Y pass ``validate.check_features`` / ``check_labels``, as in-memory
matrices do, and a bad line is reported as ``file:LINE``.

Sources here: :class:`SvmlightSource` (one file or a glob of shards, plain, .gz
or .bz2) and :class:`TextSource` (CSV / TSV / JSON-lines, vectorised per
chunk); binary shards are in :mod:`mlnb.data.shards`. Concatenated, the chunks of
a source are exactly the matrices the in-memory loader builds from the same files.

Document ids (``Chunk.ids``) are global and increase in source order:

* one file: the document's 0-based position in it (blank and comment lines are
  not documents);
* several files (a glob of shards, read without a manifest): ``(file number << 40)
  + position in the file``, the file number counting from 0 in sorted-name order.
  Ids are then unique and increasing but not consecutive: no pass over the
  shards is needed to learn where each begins, and a Dask worker numbers its
  shard on its own. ``mlnb convert`` keeps these ids in its shards.

The train/test split of a single source is :func:`mlnb.data.hashing.split_mask`
of the ids (:func:`split_source`); a given test file is its own source.
"""

from __future__ import annotations

import bz2
import codecs
import csv
import glob
import gzip
import io
import json
import os
import time
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb import progress
from mlnb.data.hashing import split_mask
from mlnb.data.svmlight_blocks import ParsedBlock, describe_bad_line, parse_block
from mlnb.data.text import TextOptions
from mlnb.data.validate import check_features, check_labels, existing_file
from mlnb.errors import MlnbError, MlnbWarning

#: ids of file k of a multi-file source start at k << FILE_ID_SHIFT (2^40 ≈ 10^12 documents a file)
FILE_ID_SHIFT = 40
#: bytes read (decompressed) and parsed at a time by the svmlight reader
BLOCK_BYTES = 4 * 2**20


# -- the interfaces -----------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Chunk:
    """Consecutive documents of one file.

    X : csr_matrix (m, V) float32, sorted indices, checked by ``validate.check_features``
    Y : csr_matrix (m, K) int8 0/1 (multiclass: one class per row)
    ids : int64 (m,), the documents' global numbers (increasing in source order)
    where : the file (shard) the rows came from, for messages
    first_line : 1-based line (or record) of the first row in that file
    lines : int64 (m,), each row's line, when rows are not consecutive lines (blank or comment
        lines between them, CSV records over several lines, rows taken by a split); None: row i
        is on line first_line + i
    """

    X: sp.csr_matrix
    Y: sp.csr_matrix
    ids: np.ndarray
    where: str
    first_line: int
    lines: np.ndarray | None = None

    @property
    def n_documents(self) -> int:
        return self.X.shape[0]

    def row_lines(self) -> np.ndarray:
        """The line of each row (int64, m)."""
        if self.lines is not None:
            return self.lines
        return self.first_line + np.arange(self.n_documents, dtype=np.int64)

    def place(self, row: int) -> str:
        """'file:LINE' of row ``row``, for messages."""
        return f"{self.where}:{int(self.row_lines()[row])}"

    def rows(self, keep: np.ndarray) -> Chunk:
        """The rows where ``keep`` (bool, one per row) is True (their lines kept)."""
        keep = np.asarray(keep, dtype=bool)
        if keep.all():
            return self
        index = np.flatnonzero(keep)
        lines = self.row_lines()[index]
        return Chunk(self.X[index], self.Y[index], self.ids[index], self.where,
                     int(lines[0]) if lines.size else self.first_line, lines)


@dataclass(frozen=True)
class Partition:
    """A part of a source that one reader (a Dask worker) reads on its own: documents
    ``start`` .. ``stop`` (``None``: to the end) of the file ``path``. Small and picklable.

    number : position among the source's partitions
    first_id : id of the file's first document (ids of a file are first_id + position)
    n_documents : documents in the partition, when known (a manifest, a scan pass)
    """

    path: str
    number: int
    first_id: int
    start: int = 0
    stop: int | None = None
    n_documents: int | None = None


class ChunkSource:
    """Documents in chunks: ``partitions()``, ``read(partition, chunk_size)``, ``chunks(chunk_size)``.

    Subclasses set ``n_features``, ``category_names``, ``feature_names`` (or None) and ``name``,
    and implement ``partitions`` and ``read``.
    """

    n_features: int
    category_names: list
    feature_names: list | None = None
    name: str = "stream"

    @property
    def n_categories(self) -> int:
        return len(self.category_names)

    @property
    def n_documents(self) -> int | None:
        """Documents in the source, when every partition knows its count (else None)."""
        counts = [p.n_documents for p in self.partitions()]
        return None if any(c is None for c in counts) else int(sum(counts))

    @property
    def expected_documents(self) -> int | None:
        """Documents expected from ``chunks`` (for an ETA): ``n_documents`` here, an estimate for a split."""
        return self.n_documents

    def partitions(self) -> list[Partition]:
        raise NotImplementedError

    def read(self, partition: Partition, chunk_size: int) -> Iterator[Chunk]:
        raise NotImplementedError

    def chunks(self, chunk_size: int) -> Iterator[Chunk]:
        """Every document, in order, in chunks of at most ``chunk_size`` (none spans two files)."""
        for partition in self.partitions():
            yield from self.read(partition, chunk_size)

    def read_where(self, partition: Partition, chunk_size: int,
                   keep: Callable[[np.ndarray], np.ndarray]) -> Iterator[Chunk]:
        """The documents of ``partition`` whose ids ``keep(ids)`` (-> bool array) selects, in
        non-empty chunks of at most ``chunk_size``. A source may select before its costly work
        (text: before vectorising)."""
        for chunk in self.read(partition, chunk_size):
            part = chunk.rows(keep(chunk.ids))
            if part.n_documents:
                yield part


def check_chunk_size(chunk_size) -> int:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise MlnbError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    return int(chunk_size)


def make_chunk(X, Y, ids, where: str, first_line: int, row_lines=None) -> Chunk:
    """A Chunk whose X and Y went through the same checks as in-memory matrices."""
    X = check_features(X, where, first_line=first_line if row_lines is None else None, row_lines=row_lines)
    if not X.has_sorted_indices:
        X.sort_indices()
    Y = check_labels(Y, where, n_documents=X.shape[0], first_line=first_line if row_lines is None else None,
                     row_lines=row_lines)
    lines = None
    if row_lines is not None:
        lines = np.asarray(row_lines, dtype=np.int64)
        if lines.size and lines[-1] - lines[0] == lines.size - 1:
            lines = None  # consecutive: first_line says it all
    return Chunk(X, Y, np.asarray(ids, dtype=np.int64), where, int(first_line), lines)


def check_one_class(chunk: Chunk) -> None:
    """Every document of the chunk in exactly one class (task = 'multiclass'), or one line naming
    the first that is not by file and line."""
    counts = np.diff(chunk.Y.indptr)
    bad = np.flatnonzero(counts != 1)
    if bad.size:
        row = int(bad[0])
        has = f"{counts[row]} labels" if counts[row] else "no label"
        raise MlnbError(f"{chunk.place(row)}: document has {has}; task = 'multiclass' needs exactly one class per "
                        "document: use task = 'multilabel'")


def concatenate(chunks: Iterable[Chunk]) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """(X, Y, ids) of all the chunks stacked: for small data and tests, not for a stream."""
    chunks = list(chunks)
    if not chunks:
        raise MlnbError("no documents in the stream")
    return (sp.vstack([c.X for c in chunks], format="csr"), sp.vstack([c.Y for c in chunks], format="csr"),
            np.concatenate([c.ids for c in chunks]))


# -- files ----------------------------------------------------------------------------------------
_GLOB_CHARACTERS = set("*?[")


def expand_paths(paths, what: str) -> list[Path]:
    """Files named by ``paths`` (one path or glob pattern, or a list of them), in order; a pattern
    gives its matches sorted by name. One line when a file is missing or a pattern matches none."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    for entry in paths:
        entry = str(entry)
        if _GLOB_CHARACTERS & set(entry):
            matches = sorted(Path(p) for p in glob.glob(entry) if Path(p).is_file())
            if not matches:
                raise MlnbError(f"{entry}: no file matches this pattern ({what})")
            files.extend(matches)
        else:
            files.append(existing_file(entry, what))
    if not files:
        raise MlnbError(f"no files given ({what})")
    return files


def _open_binary(path: Path):
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix.lower(), open)
    try:
        return opener(path, "rb")
    except OSError as error:
        raise MlnbError(f"{path}: cannot open ({error.strerror or error})") from None


_DECOMPRESSION_ERRORS = (OSError, EOFError, zlib.error)


def _blocks(path: Path, block_bytes: int | None = None) -> Iterator[tuple[bytes, int]]:
    """(block, number of the block's first line): whole lines of ``path``, about ``block_bytes``
    (default BLOCK_BYTES) at a time."""
    block_bytes = block_bytes or BLOCK_BYTES
    line = 1
    carry = b""
    with _open_binary(path) as stream:
        while True:
            try:
                raw = stream.read(block_bytes)
            except _DECOMPRESSION_ERRORS as error:
                complete = line - 1 + carry.count(b"\n")
                raise MlnbError(f"{path}: corrupt or truncated compressed data after line {complete} ({error})") \
                    from None
            if not raw:
                if carry:
                    yield carry, line
                return
            data = carry + raw if carry else raw
            del raw
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = data
                continue
            block, carry = data[:cut + 1], data[cut + 1:]
            del data
            yield block, line
            line += block.count(b"\n")
            del block


# -- svmlight -------------------------------------------------------------------------------------
def _parse_or_explain(block: bytes, first_line: int, path: Path, index_base: int, n_features, n_categories,
                      use_numba: bool) -> ParsedBlock:
    parsed = parse_block(block, index_base, n_features, n_categories, use_numba=use_numba)
    if parsed is None:
        found = describe_bad_line(block, index_base, n_features, n_categories)
        if found is None:
            last = first_line + block.count(b"\n")
            raise MlnbError(f"{path}: lines {first_line}-{last}: not readable as svmlight text "
                            "('<labels> <index>:<value> ...')")
        line, problem = found
        raise MlnbError(f"{path}:{first_line + line - 1}: {problem}")
    parsed.lines += first_line - 1
    return parsed


def _concat(a: ParsedBlock, b: ParsedBlock) -> ParsedBlock:
    """The documents of a, then those of b."""
    return ParsedBlock(indptr=np.concatenate([a.indptr, b.indptr[1:] + a.indptr[-1]]),
                       indices=np.concatenate([a.indices, b.indices]), data=np.concatenate([a.data, b.data]),
                       label_indptr=np.concatenate([a.label_indptr, b.label_indptr[1:] + a.label_indptr[-1]]),
                       labels=np.concatenate([a.labels, b.labels]), lines=np.concatenate([a.lines, b.lines]))


def _slice(block: ParsedBlock, a: int, b: int) -> ParsedBlock:
    """Documents a .. b of a block, in arrays of their own."""
    x0, x1 = block.indptr[a], block.indptr[b]
    l0, l1 = block.label_indptr[a], block.label_indptr[b]
    return ParsedBlock(indptr=block.indptr[a:b + 1] - x0, indices=block.indices[x0:x1].copy(),
                       data=block.data[x0:x1].copy(), label_indptr=block.label_indptr[a:b + 1] - l0,
                       labels=block.labels[l0:l1].copy(), lines=block.lines[a:b].copy())


@dataclass
class SvmlightScan:
    """What a pass over svmlight files found: the largest 0-based feature index and label, and
    the documents in each file."""

    max_index: int
    max_label: int
    documents: list


def scan_svmlight(paths: Sequence[Path], index_base: int = 1, n_features: int | None = None,
                  n_categories: int | None = None, use_numba: bool = True) -> SvmlightScan:
    """One pass over the files, parsing every line (as reading does): the dimensions they need
    and their document counts. Costs about one reading pass (experiments/bench_shards.py)."""
    max_index, max_label, documents = -1, -1, []
    for path in paths:
        count = 0
        for block, line in _blocks(path):
            parsed = _parse_or_explain(block, line, path, index_base, n_features, n_categories, use_numba)
            max_index, max_label = max(max_index, parsed.max_index), max(max_label, parsed.max_label)
            count += parsed.n_documents
        documents.append(count)
    return SvmlightScan(max_index, max_label, documents)


def _category_names(category_names, n_categories: int | None) -> list | None:
    if category_names is None:
        return None
    source = ""
    if isinstance(category_names, (str, os.PathLike)):
        from mlnb.data.svmlight import read_category_names

        source = f"{category_names}: "
        category_names = read_category_names(category_names)
    names = [str(n) for n in category_names]
    if n_categories and len(names) != n_categories:
        raise MlnbError(f"{source}{len(names)} category names given for n_categories = {n_categories}")
    return names


class SvmlightSource(ChunkSource):
    """Multilabel svmlight files (``<labels> <index>:<value> ...``) read in chunks: the
    conventions of :func:`mlnb.data.svmlight.load_svmlight_dataset` (labels "1,5,7", features from
    ``index_base``), and the same X and Y.

    paths : a file, a glob pattern ("shards/part-*.svm.gz") or a list of them; plain, .gz, .bz2
    n_features : the width of X; None = one more than the largest index found by a scan pass
    n_categories / category_names (a list or a file, one name per line in id order): the
        categories; with neither, one more than the largest label found by a scan pass.

    The category set (and the width of X) must be known before the first chunk, since a model
    is sized by them: give them, or the constructor makes one scan pass over all the files,
    parsing every line — about the cost of one more reading pass. ``scanned_from`` lets
    several sources (a train and a test file) share one scan. A scan also counts the documents
    of each file (then ``n_documents`` is known: ETA in the progress lines).

    Each file is one partition; a file is read as a stream of 4 MiB blocks (decompressed),
    each parsed at once by :mod:`mlnb.data.svmlight_blocks`, so memory does not grow with the file.
    Ids: see the module docstring.
    """

    def __init__(self, paths, n_features: int | None = None, index_base: int = 1,
                 n_categories: int | None = None, category_names=None, name: str | None = None,
                 scanned_from: SvmlightScan | None = None, use_numba: bool = True):
        if index_base not in (0, 1):
            raise MlnbError(f"index_base must be 0 or 1, got {index_base}")
        self.paths = [str(p) for p in expand_paths(paths, "svmlight data")]
        self.index_base = index_base
        self.use_numba = use_numba
        names = _category_names(category_names, n_categories)
        n_categories = n_categories or (len(names) if names is not None else None)
        self.documents: list | None = None
        if n_features is None or n_categories is None:
            scan = scanned_from or scan_svmlight([Path(p) for p in self.paths], index_base, n_features,
                                                 n_categories, use_numba)
            if scanned_from is None:
                self.documents = scan.documents
            if n_features is None:
                n_features = max(scan.max_index, 0) + 1  # scikit-learn's width for files without features
            if n_categories is None:
                if scan.max_label < 0:
                    raise MlnbError(f"{self.paths[0]}: no labels found; a multilabel file needs category ids")
                n_categories = scan.max_label + 1
        if not (isinstance(n_features, (int, np.integer)) and n_features >= 1):
            raise MlnbError(f"n_features must be a positive integer, got {n_features!r}")
        self.n_features = int(n_features)
        self.category_names = names if names is not None else [str(k) for k in range(n_categories)]
        self.feature_names = None
        # one file: its name; several (a glob of shards): the first's, marked as the first of n
        first = Path(self.paths[0]).name.split(".")[0]
        self.name = name or (first if len(self.paths) == 1 else f"{first} (+{len(self.paths) - 1} files)")

    def partitions(self) -> list[Partition]:
        single = len(self.paths) == 1
        return [Partition(path=p, number=k, first_id=0 if single else k << FILE_ID_SHIFT,
                          n_documents=None if self.documents is None else self.documents[k])
                for k, p in enumerate(self.paths)]

    def read(self, partition: Partition, chunk_size: int) -> Iterator[Chunk]:
        chunk_size = check_chunk_size(chunk_size)
        if partition.start != 0 or partition.stop is not None:
            raise MlnbError(f"{partition.path}: an svmlight partition is a whole file (got documents "
                            f"{partition.start}..{partition.stop})")
        path = Path(partition.path)
        if not path.is_file():
            raise MlnbError(f"{path}: no such file (svmlight shard {partition.number})")
        K = self.n_categories
        current, offset = None, 0  # parsed documents, of which the first `offset` are yielded
        position = 0  # documents of the file yielded
        for block, line in _blocks(path):
            parsed = _parse_or_explain(block, line, path, self.index_base, self.n_features, K, self.use_numba)
            if current is None or offset == current.n_documents:
                current = parsed
            else:  # fewer than chunk_size documents left over, then the new block
                current = _concat(_slice(current, offset, current.n_documents), parsed)
            offset = 0
            while current.n_documents - offset >= chunk_size:
                yield self._chunk(_slice(current, offset, offset + chunk_size), partition, position, path)
                offset += chunk_size
                position += chunk_size
        if current is not None and offset < current.n_documents:
            yield self._chunk(_slice(current, offset, current.n_documents), partition, position, path)
            position += current.n_documents - offset
        if position == 0:
            raise MlnbError(f"{path}: the file holds no documents")

    def _chunk(self, block: ParsedBlock, partition: Partition, position: int, path: Path) -> Chunk:
        m = block.n_documents
        X = sp.csr_matrix((block.data, block.indices, block.indptr), shape=(m, self.n_features))
        X.has_sorted_indices = True  # the parsers accept only increasing indices
        rows = np.repeat(np.arange(m), np.diff(block.label_indptr))
        Y = sp.csr_matrix((np.ones(block.labels.size, dtype=np.int8), (rows, block.labels)),
                          shape=(m, self.n_categories))
        Y.sum_duplicates()
        Y.data[:] = 1  # a label written twice on a line
        ids = partition.first_id + position + np.arange(m, dtype=np.int64)
        return make_chunk(X, Y, ids, str(path), int(block.lines[0]), row_lines=block.lines)


def svmlight_sources(path, test_path=None, *, n_features: int | None = None, index_base: int = 1,
                     n_categories: int | None = None, category_names=None, seed: int = 0,
                     test_fraction: float = 0.5) -> tuple[ChunkSource, ChunkSource]:
    """(train, test) sources of an svmlight corpus: ``test_path`` (a file or glob) is the test
    part, else a seeded hash split of ``path``'s documents. Dimensions not given are found by one
    scan over all the files (train and test share them, as in the in-memory loader)."""
    names = _category_names(category_names, n_categories)
    n_categories = n_categories or (len(names) if names is not None else None)
    options = dict(n_features=n_features, index_base=index_base, n_categories=n_categories, category_names=names)
    if not test_path:
        return split_source(SvmlightSource(path, **options), seed, test_fraction)
    train_paths, test_paths = expand_paths(path, "svmlight data"), expand_paths(test_path, "svmlight test data")
    scan = None
    if n_features is None or n_categories is None:
        scan = scan_svmlight(train_paths + test_paths, index_base, n_features, n_categories)
    train = SvmlightSource(train_paths, scanned_from=scan, **options)
    test = SvmlightSource(test_paths, scanned_from=scan, **options)
    if scan is not None:
        train.documents, test.documents = scan.documents[:len(train_paths)], scan.documents[len(train_paths):]
    return train, test


# -- the hash split ----------------------------------------------------------------------------------
class SplitPart(ChunkSource):
    """The training (or test) documents of ``source``: those whose id ``split_mask`` puts on that
    side. Chunks hold the chosen rows of the source's chunks, so at most ``chunk_size`` documents."""

    def __init__(self, source: ChunkSource, seed: int, test_fraction: float, test: bool):
        split_mask(np.zeros(0, dtype=np.int64), seed, test_fraction)  # checks the arguments
        self.source, self.seed, self.test_fraction, self.test = source, seed, test_fraction, test
        self.n_features = source.n_features
        self.category_names = source.category_names
        self.feature_names = source.feature_names
        self.name = source.name

    @property
    def n_documents(self) -> int | None:
        return None  # known only after reading

    @property
    def expected_documents(self) -> int | None:
        """About how many documents this side holds (for an ETA): its share of the source."""
        total = self.source.n_documents
        share = self.test_fraction if self.test else 1 - self.test_fraction
        return None if total is None else round(total * share)

    def partitions(self) -> list[Partition]:
        return self.source.partitions()

    def _keep(self, ids: np.ndarray) -> np.ndarray:
        is_test = split_mask(ids, self.seed, self.test_fraction)
        return is_test if self.test else ~is_test

    def read(self, partition: Partition, chunk_size: int) -> Iterator[Chunk]:
        return self.source.read_where(partition, chunk_size, self._keep)

    def read_where(self, partition: Partition, chunk_size: int,
                   keep: Callable[[np.ndarray], np.ndarray]) -> Iterator[Chunk]:
        return self.source.read_where(partition, chunk_size, lambda ids: self._keep(ids) & keep(ids))


def split_source(source: ChunkSource, seed: int, test_fraction: float,
                 test_source: ChunkSource | None = None) -> tuple[ChunkSource, ChunkSource]:
    """(train, test): ``test_source`` when given (a test file), else the two sides of a seeded hash
    split of ``source``'s document ids (:func:`mlnb.data.hashing.split_mask`)."""
    if test_source is not None:
        if test_source.n_features != source.n_features:
            raise MlnbError(f"{source.name} has {source.n_features} features but the test data "
                            f"{test_source.name} has {test_source.n_features}: they must share one feature space")
        if list(test_source.category_names) != list(source.category_names):
            raise MlnbError(f"{source.name} and the test data {test_source.name} have different categories")
        return source, test_source
    return SplitPart(source, seed, test_fraction, test=False), SplitPart(source, seed, test_fraction, test=True)


# -- text ---------------------------------------------------------------------------------------------
_SUFFIX_FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".txt": "tsv", ".jsonl": "jsonl",
                   ".json": "jsonl", ".ndjson": "jsonl"}


def _text_format(path: Path, fmt: str) -> str:
    if fmt != "auto":
        return fmt
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".bz2"):
        suffixes = suffixes[:-1]
    suffix = suffixes[-1] if suffixes else ""
    if suffix not in _SUFFIX_FORMATS:
        raise MlnbError(f"{path}: cannot tell the format from the suffix {suffix!r}; "
                        "set data.text.format to 'csv', 'tsv' or 'jsonl'")
    return _SUFFIX_FORMATS[suffix]


@dataclass(frozen=True)
class TextReading:
    """How rows of a CSV/TSV/JSON-lines file become (text, labels): the [data.text] options of
    :func:`mlnb.data.text.load_text_dataset`."""

    format: str = "auto"
    header: bool = True
    text_column: str = "text"
    label_column: str = "label"
    labels: str = "single"
    label_separator: str = ","
    negative_labels: tuple = ()
    encoding: str = "utf-8"

    def __post_init__(self):
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise MlnbError(f"data.text.encoding: unknown encoding {self.encoding!r}") from None
        if self.format not in ("auto", "csv", "tsv", "jsonl"):
            raise MlnbError(f"data.text.format: expected 'auto', 'csv', 'tsv' or 'jsonl', got {self.format!r}")
        if self.labels not in ("single", "multi"):
            raise MlnbError(f"data.text.labels: expected 'single' or 'multi', got {self.labels!r}")


@dataclass
class _Records:
    """Rows of one file: record (line) numbers, texts, label-name lists."""

    numbers: list = field(default_factory=list)
    texts: list = field(default_factory=list)
    labels: list = field(default_factory=list)


def _decode_error_line(path: Path, codec: str) -> tuple[int, str]:
    """(line, reason) of the first byte that ``codec`` cannot decode."""
    decoder = codecs.getincrementaldecoder(codec)()
    with _open_binary(path) as stream:
        for number, raw in enumerate(stream, start=1):
            try:
                decoder.decode(raw)
            except UnicodeDecodeError as error:
                return number, error.reason
    return 0, "undecodable bytes"


def _text_lines(path: Path, encoding: str) -> Iterator[str]:
    """The decoded lines of ``path`` (universal newlines), streamed."""
    codec = "utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding
    binary = _open_binary(path)
    lines = io.TextIOWrapper(binary, encoding=codec, errors="strict", newline=None)
    try:
        yield from lines
    except UnicodeDecodeError:
        line, reason = _decode_error_line(path, codec)
        raise MlnbError(f"{path}:{line}: not valid {encoding} text ({reason}); set data.text.encoding") from None
    except _DECOMPRESSION_ERRORS as error:
        raise MlnbError(f"{path}: corrupt or truncated compressed data ({error})") from None
    finally:
        lines.close()


def _rows_delimited(path: Path, lines: Iterator[str], delimiter: str, reading: TextReading):
    """(line, text, label cell) of each data row; a row's line is the one where it begins."""
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    kind = "TSV" if delimiter == "\t" else "CSV"
    reader = csv.reader(lines, delimiter=delimiter, quoting=quoting, strict=True)
    start, names, t, l = 1, None, None, None
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            raise MlnbError(f"{path}:{reader.line_num}: malformed {kind} ({error}); a quote opened in the "
                            f"record that begins on line {start} may be unclosed") from None
        number, start = start, reader.line_num + 1
        if names is None:
            if reading.header:
                names = row
                if len(set(names)) != len(names):
                    raise MlnbError(f"{path}:{number}: a column name appears twice in the header")
            else:
                names = [str(i) for i in range(len(row))]
            columns = {name: i for i, name in enumerate(names)}
            for key, column in (("text_column", reading.text_column), ("label_column", reading.label_column)):
                if column not in columns:
                    raise MlnbError(f"{path}: data.text.{key} = {column!r} is not a column; the columns are "
                                    f"{', '.join(names)}")
            t, l = columns[reading.text_column], columns[reading.label_column]
            if reading.header:
                continue
        if not row:
            continue
        if len(row) != len(names):
            raise MlnbError(f"{path}:{number}: expected {len(names)} columns, got {len(row)}")
        yield number, row[t], row[l]
    if names is None and reading.header:
        raise MlnbError(f"{path}: no header row (data.text.header = true)")


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
        raise MlnbError(f"{path}:{number}: expected one label (data.text.labels = 'single'), got {label!r}")
    return names


def text_records(path: Path, reading: TextReading, batch: int) -> Iterator[_Records]:
    """The rows of a text file in batches of ``batch`` records."""
    fmt = _text_format(path, reading.format)
    lines = _text_lines(path, reading.encoding)
    rows = (_rows_jsonl(path, lines, reading) if fmt == "jsonl" else
            _rows_delimited(path, lines, "," if fmt == "csv" else "\t", reading))
    records = _Records()
    try:
        for number, text, label in rows:
            if not isinstance(text, str):
                raise MlnbError(f"{path}:{number}: the text must be a string, got {text!r}")
            records.numbers.append(number)
            records.texts.append(text)
            records.labels.append(_label_names(path, number, label, reading))
            if len(records.texts) == batch:
                yield records
                records = _Records()
    finally:
        lines.close()
    if records.texts:
        yield records


def _vectorizer(options: TextOptions, vocabulary: dict | None):
    from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer

    stop_words = None if options.stop_words == "none" else options.stop_words
    if options.vectorizer == "hashing":
        return HashingVectorizer(n_features=options.hash_features, lowercase=options.lowercase,
                                 stop_words=stop_words, alternate_sign=False, norm=None, dtype=np.float32)
    return CountVectorizer(lowercase=options.lowercase, stop_words=stop_words, dtype=np.float32,
                           vocabulary=vocabulary)


@dataclass
class TextFit:
    """What a first pass over text files learns: the categories and, for CountVectorizer, the
    vocabulary (term -> column, terms sorted as CountVectorizer sorts them)."""

    categories: list
    vocabulary: dict | None


def fit_text(parts: Sequence[tuple[Sequence[Path], Callable[[np.ndarray], np.ndarray] | None]],
             reading: TextReading, options: TextOptions, batch: int = 10_000) -> TextFit:
    """One pass over text files: categories = the distinct labels of all their documents, sorted,
    less ``negative_labels``; vocabulary = the terms of the training documents (as
    ``CountVectorizer.fit`` would find them in all of those texts at once), built batch by batch.

    parts : (files, is_train) pairs; ``is_train(ids)`` picks the training documents of a batch
        (None: all of them). A label found in no training document is warned about, as in the
        in-memory loader, and kept as a category.

    Memory grows with the vocabulary (Heaps' law: sublinearly in the corpus), not with the documents;
    the hashing vectorizer needs no vocabulary pass at all.
    """
    needs_vocabulary = options.vectorizer != "hashing"
    analyzer = _vectorizer(options, None).build_analyzer() if needs_vocabulary else None
    terms: set = set()
    trained, seen = set(), set()
    for files, is_train in parts:
        single = len(files) == 1
        for k, path in enumerate(files):
            position = 0
            for records in text_records(path, reading, batch):
                ids = (0 if single else k << FILE_ID_SHIFT) + position + np.arange(len(records.texts))
                position += len(records.texts)
                train = np.ones(ids.size, dtype=bool) if is_train is None else is_train(ids)
                for i, names in enumerate(records.labels):
                    seen.update(names)
                    if train[i]:
                        trained.update(names)
                        if needs_vocabulary:
                            terms.update(analyzer(records.texts[i]))
            if position == 0:
                raise MlnbError(f"{path}: no documents")
    negative = set(reading.negative_labels)
    if not trained - negative:
        raise MlnbError(f"{parts[0][0][0]}: no category left: every training label is one of the negative "
                        f"labels {sorted(negative)}")
    test_only = sorted(seen - negative - trained)
    if test_only:
        shown = ", ".join(map(repr, test_only[:10])) + (f" and {len(test_only) - 10} more" if len(test_only) > 10 else "")
        warnings.warn(MlnbWarning(f"{parts[-1][0][0]}: {len(test_only)} label(s) occur only in the test part: "
                                  f"{shown}; kept as categories without training documents (no model can learn "
                                  "them; listed as untrainable)"), stacklevel=2)
    vocabulary = None
    if needs_vocabulary:
        if not terms:
            raise MlnbError("cannot build a vocabulary from the training texts: empty vocabulary; perhaps the "
                            "documents only contain stop words")
        vocabulary = {term: j for j, term in enumerate(sorted(terms))}
    return TextFit(sorted(seen - negative), vocabulary)


class TextSource(ChunkSource):
    """CSV / TSV / JSON-lines files (optionally .gz / .bz2) read in chunks of documents, each chunk
    vectorised on its own: the conventions of :func:`mlnb.data.text.load_text_dataset`.

    reading : the columns and label conventions (:class:`TextReading`)
    text_options : ``vectorizer = "hashing"``: scikit-learn's HashingVectorizer (stateless: no
        vocabulary pass; n_features = hash_features; alternate_sign=False, so counts stay ≥ 0);
        ``"count"``: a CountVectorizer with a fixed vocabulary fitted in a first pass.
    categories, vocabulary : from :func:`fit_text`; when None, the constructor makes that first
        pass over these files (all documents train). :func:`text_sources` fits them on the
        training part of a train/test pair.

    Each file is one partition; the rows of a file are read as a stream (csv / json), and a chunk's
    first_line is the line where its first row begins. Ids: see the module docstring.
    """

    def __init__(self, paths, reading: TextReading = TextReading(), text_options: TextOptions = TextOptions(),
                 categories: Sequence[str] | None = None, vocabulary: dict | None = None,
                 name: str | None = None):
        self.paths = [str(p) for p in expand_paths(paths, "text data")]
        for path in self.paths:
            _text_format(Path(path), reading.format)
        self.reading, self.text_options = reading, text_options
        if categories is None or (vocabulary is None and text_options.vectorizer != "hashing"):
            fitted = fit_text([([Path(p) for p in self.paths], None)], reading, text_options)
            categories = fitted.categories if categories is None else categories
            vocabulary = fitted.vocabulary if vocabulary is None else vocabulary
        self.category_names = list(categories)
        if not self.category_names:
            raise MlnbError(f"{self.paths[0]}: no categories")
        self.vocabulary = None if text_options.vectorizer == "hashing" else dict(vocabulary)
        if self.vocabulary is None:
            self.n_features, self.feature_names = text_options.hash_features, None
        else:
            self.n_features = len(self.vocabulary)
            self.feature_names = [None] * self.n_features
            for term, j in self.vocabulary.items():
                self.feature_names[j] = term
        # one file: its name; several (a glob of shards): the first's, marked as the first of n
        first = Path(self.paths[0]).name.split(".")[0]
        self.name = name or (first if len(self.paths) == 1 else f"{first} (+{len(self.paths) - 1} files)")

    def partitions(self) -> list[Partition]:
        single = len(self.paths) == 1
        return [Partition(path=p, number=k, first_id=0 if single else k << FILE_ID_SHIFT)
                for k, p in enumerate(self.paths)]

    def read(self, partition: Partition, chunk_size: int) -> Iterator[Chunk]:
        return self.read_where(partition, chunk_size, None)

    def read_where(self, partition: Partition, chunk_size: int,
                   keep: Callable[[np.ndarray], np.ndarray] | None) -> Iterator[Chunk]:
        """Rows selected by ``keep(ids)`` before they are vectorised (the costly part)."""
        chunk_size = check_chunk_size(chunk_size)
        if partition.start != 0 or partition.stop is not None:
            raise MlnbError(f"{partition.path}: a text partition is a whole file")
        path = Path(partition.path)
        if not path.is_file():
            raise MlnbError(f"{path}: no such file (text shard {partition.number})")
        vectorizer = _vectorizer(self.text_options, self.vocabulary)
        column = {name: k for k, name in enumerate(self.category_names)}
        position = 0
        for records in text_records(path, self.reading, chunk_size):
            ids = partition.first_id + position + np.arange(len(records.texts), dtype=np.int64)
            position += ids.size
            chosen = np.arange(ids.size) if keep is None else np.flatnonzero(keep(ids))
            if not chosen.size:
                continue
            X = vectorizer.transform([records.texts[i] for i in chosen]).tocsr()
            rows, cols = [], []
            for row, i in enumerate(chosen):
                for name in set(records.labels[i]):
                    if name in column:
                        rows.append(row)
                        cols.append(column[name])
            Y = sp.csr_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)),
                              shape=(chosen.size, self.n_categories))
            lines = np.asarray(records.numbers, dtype=np.int64)[chosen]
            yield make_chunk(X, Y, ids[chosen], str(path), int(lines[0]), row_lines=lines)
        if position == 0:
            raise MlnbError(f"{path}: no documents")


def text_sources(path, test_path=None, *, reading: TextReading = TextReading(),
                 text_options: TextOptions = TextOptions(), seed: int = 0,
                 test_fraction: float = 0.5) -> tuple[ChunkSource, ChunkSource]:
    """(train, test) sources of a text corpus: ``test_path`` is the test part, else a seeded hash
    split of ``path``'s documents. One first pass (:func:`fit_text`) finds the categories (labels of
    all documents) and, for CountVectorizer, the vocabulary of the training documents only."""
    train_paths = expand_paths(path, "text data")
    if test_path:
        test_paths = expand_paths(test_path, "text test data")
        fitted = fit_text([(train_paths, None), (test_paths, lambda ids: np.zeros(ids.size, dtype=bool))],
                          reading, text_options)
        make = lambda paths: TextSource(paths, reading, text_options, fitted.categories, fitted.vocabulary)
        return make(train_paths), make(test_paths)
    split_mask(np.zeros(0, dtype=np.int64), seed, test_fraction)  # checks the arguments first
    fitted = fit_text([(train_paths, lambda ids: ~split_mask(ids, seed, test_fraction))], reading, text_options)
    source = TextSource(train_paths, reading, text_options, fitted.categories, fitted.vocabulary)
    return split_source(source, seed, test_fraction)


# -- progress -------------------------------------------------------------------------------------------
def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def track_chunks(chunks: Iterable[Chunk], total: int | None = None, description: str = "reading",
                 every: float = 5.0, clock: Callable[[], float] = time.monotonic) -> Iterator[Chunk]:
    """Yield the chunks, logging documents read, documents/s and (when ``total`` documents are
    expected) an ETA through :func:`mlnb.progress.log` at most every ``every`` seconds, and a last
    line at the end. The rate counts the time spent by the consumer too: it is the pass's rate."""
    started = last = clock()
    done = 0

    def line(now: float, final: bool) -> str:
        elapsed = max(now - started, 1e-9)
        rate = done / elapsed
        text = f"{description}: {done:,} documents"
        if total and not final:
            text += f" of ~{total:,}"
        text += f", {rate:,.0f} documents/s"
        if final:
            text += f", {_duration(elapsed)}"
        elif total and rate > 0:
            text += f", ETA {_duration(max(total - done, 0) / rate)}"
        return text

    for chunk in chunks:
        done += chunk.n_documents
        yield chunk
        now = clock()
        if now - last >= every:
            progress.log(line(now, final=False))
            last = now
    progress.log(line(clock(), final=True))
