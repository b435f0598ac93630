"""Chunk sources: a corpus read as a stream of chunks of documents, never whole.

A :class:`ChunkSource` knows ``n_features``, ``category_names`` and its
:class:`Partition` list (one per file or shard: what a Dask worker reads on its
own), and yields :class:`Chunk` objects of at most ``chunk_size`` documents from
one partition (``read``) or from all of them in order (``chunks``). Every chunk's
X and Y pass ``validate.check_features`` / ``check_labels``, as in-memory
matrices do, and a bad line is reported as ``file:LINE``.

Sources here: :class:`SvmlightSource` (one file or a glob of shards, plain, .gz
or .bz2) and :class:`TextSource` (CSV / TSV / JSON-lines, vectorised per
chunk); binary shards are in :mod:`mlnb.data.shards`. Each reads its files through
the one reader of its format (:mod:`mlnb.data.svmlight`, :mod:`mlnb.data.text`),
which the in-memory loaders use too: concatenated, the chunks of a source are exactly
the matrices, ids and split the in-memory loader builds from the same files, and a
bad line gives the same message.

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

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb import progress, timings
from mlnb.data import svmlight
from mlnb.data.files import expand_paths, file_ids, source_name
from mlnb.data.hashing import FILE_ID_SHIFT, split_mask
from mlnb.data.limits import MAX_DOCUMENTS
from mlnb.data.regular import check_regular
from mlnb.data.svmlight import SvmlightScan, join_blocks, matrices, scan_svmlight, slice_block
from mlnb.data.svmlight_blocks import ParsedBlock
from mlnb.data.text import (TextOptions, TextReading, fit_text, label_matrix, text_format, text_records, vectorizer,
                            vocabulary_features)
from mlnb.data.validate import check_features, check_labels, one_class_error
from mlnb.errors import MlnbError

__all__ = ["FILE_ID_SHIFT", "Chunk", "ChunkSource", "Partition", "SplitPart", "SvmlightScan", "SvmlightSource",
           "TextReading", "TextSource", "DerivedSource", "OneClassSource", "SelectedSource", "check_chunk_size", "check_one_class", "concatenate", "expand_paths",
           "fit_text", "make_chunk", "scan_svmlight", "split_source", "svmlight_sources", "text_sources",
           "track_chunks"]


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
        from mlnb._kernels.csr import select_rows  # (numba: imported when a chunk is split, not with the sources)

        index = np.flatnonzero(keep)
        lines = self.row_lines()[index]
        # scipy's X[index], its rows copied on every thread (a split's part of every chunk of every pass)
        return Chunk(select_rows(self.X, index), select_rows(self.Y, index), self.ids[index], self.where,
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
    #: how texts became the columns (a text source's vocabulary or hashing collisions, for the report); None: numbers
    text_features: dict | None = None

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

    #: whether ``read`` takes any row range start .. stop of a partition (so that a partition can be cut
    #: into smaller ones, e.g. for parameter mixing on Dask); else only the partitions as given
    reads_row_ranges: bool = False

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


def check_chunk_size(chunk_size, name: str = "chunk_size") -> int:
    """``chunk_size`` as an int, or one line naming ``name`` (the option or argument that gave it)."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise MlnbError(f"{name} must be a positive integer, got {chunk_size!r}")
    if chunk_size > MAX_DOCUMENTS:
        raise MlnbError(f"{name} = {chunk_size}: expected at most {MAX_DOCUMENTS:,} documents")
    return int(chunk_size)


def make_chunk(X, Y, ids, where: str, first_line: int, row_lines=None) -> Chunk:
    """A Chunk whose X and Y went through the same checks as in-memory matrices."""
    from mlnb._kernels.csr import row_order  # (numba: imported when a chunk is made, not with the sources)

    X = check_features(X, where, first_line=first_line if row_lines is None else None, row_lines=row_lines)
    if not row_order(X):  # scipy's has_sorted_indices, on every thread (check_features's X is a new object)
        X.sort_indices()
    Y = check_labels(Y, where, n_documents=X.shape[0], first_line=first_line if row_lines is None else None,
                     row_lines=row_lines)
    lines = None
    if row_lines is not None:
        lines = np.asarray(row_lines, dtype=np.int64)
        if lines.size and lines[-1] - lines[0] == lines.size - 1:
            lines = None  # consecutive: first_line says it all
    return Chunk(X, Y, np.asarray(ids, dtype=np.int64), where, int(first_line), lines)


def check_one_class(chunk: Chunk, category_names=None) -> None:
    """Every document of the chunk in exactly one class (task = 'multiclass'), or one line naming
    the first that is not by file and line."""
    counts = np.diff(chunk.Y.indptr)
    bad = np.flatnonzero(counts != 1)
    if bad.size:
        row = int(bad[0])
        indices = chunk.Y.indices[chunk.Y.indptr[row]:chunk.Y.indptr[row + 1]]
        names = [category_names[k] if category_names is not None else str(k) for k in indices]
        raise one_class_error(chunk.place(row), names)


class DerivedSource(ChunkSource):
    """A source whose documents come from another source's partitions: a part of them
    (``SelectedSource``), or the same documents checked as they are read (``OneClassSource``)."""

    def __init__(self, source: ChunkSource):
        self.source = source
        self.n_features = source.n_features
        self.category_names = source.category_names
        self.feature_names = source.feature_names
        self.name = source.name
        self.text_features = source.text_features

    def partitions(self) -> list[Partition]:
        return self.source.partitions()

    @property
    def reads_row_ranges(self) -> bool:
        return self.source.reads_row_ranges


class SelectedSource(DerivedSource):
    """The documents of ``source`` whose ids ``keep(ids)`` (-> bool array; picklable, as a Dask worker
    selects its partition's documents on its own) selects. Chunks hold the chosen rows of the source's
    chunks, so at most ``chunk_size`` documents; ``share`` is the expected share chosen (for an ETA)."""

    def __init__(self, source: ChunkSource, keep: Callable[[np.ndarray], np.ndarray], share: float | None = None):
        super().__init__(source)
        self.keep, self.share = keep, share

    @property
    def n_documents(self) -> int | None:
        return None  # known only after reading

    @property
    def expected_documents(self) -> int | None:
        total = self.source.expected_documents
        return None if total is None or self.share is None else round(total * self.share)

    def read(self, partition: Partition, chunk_size: int) -> Iterator[Chunk]:
        return self.source.read_where(partition, chunk_size, self.keep)

    def read_where(self, partition: Partition, chunk_size: int,
                   keep: Callable[[np.ndarray], np.ndarray]) -> Iterator[Chunk]:
        return self.source.read_where(partition, chunk_size, lambda ids: self.keep(ids) & keep(ids))


class OneClassSource(DerivedSource):
    """The documents of ``source``, each checked to be in exactly one class (task = 'multiclass')
    as it is read, wherever it is read (here or on a Dask worker)."""

    @property
    def n_documents(self) -> int | None:
        return self.source.n_documents

    @property
    def expected_documents(self) -> int | None:
        return self.source.expected_documents

    def read(self, partition: Partition, chunk_size: int) -> Iterator[Chunk]:
        for chunk in self.source.read(partition, chunk_size):
            check_one_class(chunk, self.category_names)
            yield chunk

    def read_where(self, partition: Partition, chunk_size: int,
                   keep: Callable[[np.ndarray], np.ndarray]) -> Iterator[Chunk]:
        for chunk in self.source.read_where(partition, chunk_size, keep):
            check_one_class(chunk, self.category_names)
            yield chunk


def concatenate(chunks: Iterable[Chunk]) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """(X, Y, ids) of all the chunks stacked: for small data and tests, not for a stream."""
    chunks = list(chunks)
    if not chunks:
        raise MlnbError("no documents in the stream")
    return (sp.vstack([c.X for c in chunks], format="csr"), sp.vstack([c.Y for c in chunks], format="csr"),
            np.concatenate([c.ids for c in chunks]))


# -- svmlight -------------------------------------------------------------------------------------
class SvmlightSource(ChunkSource):
    """Multilabel svmlight files (``<labels> <index>:<value> ...``) read in chunks through the one
    svmlight reader (:func:`mlnb.data.svmlight.parse_file`): the conventions of
    :func:`mlnb.data.svmlight.load_svmlight_dataset` (labels "1,5,7", features from ``index_base``),
    the same X, Y and ids, and the same message for a bad line.

    paths : a file, a glob pattern ("shards/part-*.svm.gz") or a list of them; plain, .gz, .bz2
    n_features : the width of X; None = one more than the largest index found by a scan pass
    n_categories / category_names (a list or a file, one name per line in id order): the
        categories; with neither, one more than the largest label found by a scan pass.

    The category set (and the width of X) must be known before the first chunk, since a model
    is sized by them: give them, or the constructor makes one scan pass over all the files,
    parsing every line — about the cost of one more reading pass. ``scanned_from`` lets
    several sources (a train and a test file) share one scan. A scan also counts the documents
    of each file (then ``n_documents`` is known: ETA in the progress lines).

    Each file is one partition; a file is read as a stream of blocks of about
    ``mlnb.data.svmlight.BLOCK_BYTES`` (decompressed), so memory does not grow with the file.
    Ids: see the module docstring.
    """

    def __init__(self, paths, n_features: int | None = None, index_base: int = 1,
                 n_categories: int | None = None, category_names=None, name: str | None = None,
                 scanned_from: SvmlightScan | None = None, use_numba: bool = True, what: str = "svmlight data"):
        reading, names = svmlight.reading(n_features, index_base, n_categories, category_names, use_numba)
        self.paths = [str(p) for p in expand_paths(paths, what)]
        self.documents: list | None = None
        n_features, n_categories = reading.n_features, reading.known_categories
        if n_features is None or n_categories is None:
            scan = scanned_from or scan_svmlight([Path(p) for p in self.paths], reading)
            if scanned_from is None:
                self.documents = scan.documents
            n_features, n_categories = scan.dimensions(reading, Path(self.paths[0]))
        self.reading = replace(reading, n_features=n_features)
        self.n_features = int(n_features)
        self.category_names = names if names is not None else [str(k) for k in range(n_categories)]
        self.feature_names = None
        self.name = name or source_name(self.paths)

    @property
    def index_base(self) -> int:
        return self.reading.index_base

    def partitions(self) -> list[Partition]:
        return [Partition(path=p, number=k, first_id=int(file_ids(k, len(self.paths), 1)[0]),
                          n_documents=None if self.documents is None else self.documents[k])
                for k, p in enumerate(self.paths)]

    def read(self, partition: Partition, chunk_size: int) -> Iterator[Chunk]:
        chunk_size = check_chunk_size(chunk_size)
        if partition.start != 0 or partition.stop is not None:
            raise MlnbError(f"{partition.path}: an svmlight partition is a whole file (got documents "
                            f"{partition.start}..{partition.stop})")
        path = Path(partition.path)
        check_regular(path, f"svmlight shard {partition.number}")  # (it may have changed since it was listed)
        current, offset = None, 0  # parsed documents, of which the first `offset` are yielded
        position = 0  # documents of the file yielded
        for parsed in svmlight.parse_file(path, self.reading):
            if current is None or offset == current.n_documents:
                current = parsed
            else:  # fewer than chunk_size documents left over, then the new block
                current = join_blocks([slice_block(current, offset, current.n_documents), parsed])
            offset = 0
            while current.n_documents - offset >= chunk_size:
                yield self._chunk(slice_block(current, offset, offset + chunk_size), partition, position, path)
                offset += chunk_size
                position += chunk_size
        if current is not None and offset < current.n_documents:
            yield self._chunk(slice_block(current, offset, current.n_documents), partition, position, path)
            position += current.n_documents - offset
        if position == 0:
            raise MlnbError(f"{path}: the file holds no documents")

    def _chunk(self, block: ParsedBlock, partition: Partition, position: int, path: Path) -> Chunk:
        X, Y = matrices(block, self.n_features, self.n_categories)
        ids = partition.first_id + position + np.arange(block.n_documents, dtype=np.int64)
        return make_chunk(X, Y, ids, str(path), int(block.lines[0]), row_lines=block.lines)


def svmlight_sources(path, test_path=None, *, n_features: int | None = None, index_base: int = 1,
                     n_categories: int | None = None, category_names=None, seed: int = 0,
                     test_fraction: float = 0.5) -> tuple[ChunkSource, ChunkSource]:
    """(train, test) sources of an svmlight corpus: ``test_path`` (a file or glob) is the test
    part, else a seeded hash split of ``path``'s documents. Dimensions not given are found by one
    scan over all the files (train and test share them, as in the in-memory loader)."""
    reading, _ = svmlight.reading(n_features, index_base, n_categories, category_names)
    options = dict(n_features=n_features, index_base=index_base, n_categories=n_categories,
                   category_names=category_names)  # a names file stays a file: a label beyond it blames it
    if not test_path:
        return split_source(SvmlightSource(path, **options), seed, test_fraction)
    train_paths, test_paths = expand_paths(path, "svmlight data"), expand_paths(test_path, "svmlight test data")
    scan = None
    if reading.n_features is None or reading.known_categories is None:
        scan = scan_svmlight(train_paths + test_paths, reading)
    train = SvmlightSource(train_paths, scanned_from=scan, **options)
    test = SvmlightSource(test_paths, scanned_from=scan, **options)
    if scan is not None:
        train.documents, test.documents = scan.documents[:len(train_paths)], scan.documents[len(train_paths):]
    return train, test


# -- the hash split ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Side:
    """The ids on one side of the hash split (picklable)."""

    seed: int
    test_fraction: float
    test: bool

    def __call__(self, ids: np.ndarray) -> np.ndarray:
        is_test = split_mask(ids, self.seed, self.test_fraction)
        return is_test if self.test else ~is_test


class SplitPart(SelectedSource):
    """The training (or test) documents of ``source``: those whose id ``split_mask`` puts on that side."""

    def __init__(self, source: ChunkSource, seed: int, test_fraction: float, test: bool):
        split_mask(np.zeros(0, dtype=np.int64), seed, test_fraction)  # checks the arguments
        super().__init__(source, _Side(seed, test_fraction, test), test_fraction if test else 1 - test_fraction)
        self.seed, self.test_fraction, self.test = seed, test_fraction, test


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


class TextSource(ChunkSource):
    """CSV / TSV / JSON-lines files (optionally .gz / .bz2) read in chunks of documents, each chunk
    vectorised on its own: the conventions of :func:`mlnb.data.text.load_text_dataset`.

    reading : the columns and label conventions (:class:`TextReading`)
    text_options : ``vectorizer = "hashing"``: scikit-learn's HashingVectorizer (stateless: no
        vocabulary; n_features = hash_features; alternate_sign=False, so counts stay ≥ 0);
        ``"count"``: a CountVectorizer with a fixed vocabulary fitted in a first pass.
    categories, vocabulary : from :func:`fit_text`; when None, the constructor makes that first
        pass over these files (all documents train). :func:`text_sources` fits them on the
        training part of a train/test pair. ``text_options.min_df`` / ``max_features`` prune the
        vocabulary in that pass (:mod:`mlnb.data.vocabulary`).
    text_features : what that pass found (the vocabulary's size, hashing's collisions), for the report

    Each file is one partition; the rows of a file are read as a stream (csv / json), and a chunk's
    first_line is the line where its first row begins. Ids: see the module docstring.
    """

    def __init__(self, paths, reading: TextReading = TextReading(), text_options: TextOptions = TextOptions(),
                 categories: Sequence[str] | None = None, vocabulary: dict | None = None,
                 name: str | None = None, text_features: dict | None = None):
        self.paths = [str(p) for p in expand_paths(paths, "text data")]
        for path in self.paths:
            text_format(Path(path), reading.format)
        self.reading, self.text_options = reading, text_options
        if categories is None or (vocabulary is None and text_options.vectorizer != "hashing"):
            fitted = fit_text([([Path(p) for p in self.paths], None)], reading, text_options)
            categories = fitted.categories if categories is None else categories
            vocabulary = fitted.vocabulary if vocabulary is None else vocabulary
            text_features = fitted.text_features if text_features is None else text_features
        self.category_names = list(categories)
        if not self.category_names:
            raise MlnbError(f"{self.paths[0]}: no categories")
        self.vocabulary, self.n_features, self.feature_names = vocabulary_features(vocabulary, text_options)
        self.name = name or source_name(self.paths)
        self.text_features = text_features

    def partitions(self) -> list[Partition]:
        return [Partition(path=p, number=k, first_id=int(file_ids(k, len(self.paths), 1)[0]))
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
        check_regular(path, f"text shard {partition.number}")
        counter = vectorizer(self.text_options, self.vocabulary)
        position = 0
        for records in text_records(path, self.reading, chunk_size):
            ids = partition.first_id + position + np.arange(len(records.texts), dtype=np.int64)
            position += ids.size
            chosen = np.arange(ids.size) if keep is None else np.flatnonzero(keep(ids))
            if not chosen.size:
                continue
            X = counter.transform([records.texts[i] for i in chosen]).tocsr()
            Y = label_matrix([records.labels[i] for i in chosen], self.category_names)
            lines = np.asarray(records.numbers, dtype=np.int64)[chosen]
            yield make_chunk(X, Y, ids[chosen], str(path), int(lines[0]), row_lines=lines)
        if position == 0:
            raise MlnbError(f"{path}: no documents")


def text_sources(path, test_path=None, *, reading: TextReading = TextReading(),
                 text_options: TextOptions = TextOptions(), seed: int = 0,
                 test_fraction: float = 0.5) -> tuple[ChunkSource, ChunkSource]:
    """(train, test) sources of a text corpus: ``test_path`` is the test part, else a seeded hash
    split of ``path``'s documents. One first pass (:func:`fit_text`) finds the categories (labels of
    all documents) and, for CountVectorizer, the vocabulary of the training documents only (pruned by
    ``text_options.min_df`` / ``max_features``: the columns ``mlnb.features`` keeps of the same
    documents read whole)."""
    train_paths = expand_paths(path, "text data")
    if test_path:
        test_paths = expand_paths(test_path, "text data")
        fitted = fit_text([(train_paths, None), (test_paths, lambda ids: np.zeros(ids.size, dtype=bool))],
                          reading, text_options)
        make = lambda paths: TextSource(paths, reading, text_options, fitted.categories, fitted.vocabulary,
                                        text_features=fitted.text_features)
        return make(train_paths), make(test_paths)
    split_mask(np.zeros(0, dtype=np.int64), seed, test_fraction)  # checks the arguments first
    fitted = fit_text([(train_paths, lambda ids: ~split_mask(ids, seed, test_fraction))], reading, text_options)
    source = TextSource(train_paths, reading, text_options, fitted.categories, fitted.vocabulary,
                        text_features=fitted.text_features)
    return split_source(source, seed, test_fraction)


# -- progress -------------------------------------------------------------------------------------------
def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def track_chunks(chunks: Iterable[Chunk], total: int | None = None, description: str = "reading",
                 every: float = 5.0, clock: Callable[[], float] = time.monotonic) -> Iterator[Chunk]:
    """Yield the chunks, logging documents read, documents/s and (when ``total`` documents are
    expected) an ETA through :func:`mlnb.progress.log` at most every ``every`` seconds, and a last
    line at the end. The rate counts the time spent by the consumer too: it is the pass's rate; before the
    last line, only from the time after numba last compiled a kernel (``timings.WorkRate``: a first run's
    first chunks compile the parser), so no ETA includes compiling."""
    started = last = clock()
    done = 0
    work = timings.WorkRate(started=started, clock=clock)

    def line(now: float, final: bool) -> str:
        elapsed = max(now - started, 1e-9)
        rate = done / elapsed if final else work.update(done, now)
        text = f"{description}: {done:,} documents"
        if total and not final:
            text += f" of ~{total:,}"
        if rate is not None:
            text += f", {rate:,.0f} documents/s"
        if final:
            text += f", {_duration(elapsed)}"
        elif total and rate:
            text += f", ETA {_duration(max(total - done, 0) / rate)}"
        return text

    for chunk in chunks:
        done += chunk.n_documents
        yield chunk
        now = clock()
        if now - last >= every:
            progress.log(line(now, final=False), final=False)
            last = now
    progress.log(line(clock(), final=True))
