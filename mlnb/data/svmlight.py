"""LIBSVM / svmlight multilabel files (plain, .gz, .bz2): the one reader of the format.

One document per line: ``<labels> <index>:<value> ...`` where labels are
comma-separated non-negative integers (possibly none) and indices start at
``index_base`` (1 in the LIBSVM convention, as in the RCV1 subsets); ``#`` starts a
comment, and blank or comment lines are not documents.

A file is read as whole lines in blocks of about ``BLOCK_BYTES`` (decompressed), each block
parsed at once by :mod:`mlnb.data.svmlight_blocks` (:func:`parse_file`). The in-memory loader
(:func:`load_svmlight_dataset`) joins a file's blocks into one matrix; the streaming source
(:class:`mlnb.data.stream.SvmlightSource`) cuts them into chunks. Both read through
:func:`parse_file`, so they build the same matrices from the same files (one file, or a glob of
shards), number the documents alike (see :mod:`mlnb.data.stream`), and refuse a bad line with
the same one line ``file:LINE: what is wrong``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb.data.dataset import Dataset, RowOrigin
from mlnb.budget import check_data_sizes, human
from mlnb.data.files import DECOMPRESSION_ERRORS, expand_paths, file_ids, open_binary, source_name
from mlnb.data.limits import MAX_CATEGORIES, MAX_LINE_BYTES
from mlnb.data.splits import given_split_rule
from mlnb.data.svmlight_blocks import ParsedBlock, describe_bad_line, parse_block
from mlnb.data.validate import check_features, check_labels, existing_file
from mlnb.errors import MlnbError

#: bytes read (decompressed) and parsed at a time
BLOCK_BYTES = 4 * 2**20


@dataclass(frozen=True)
class SvmlightReading:
    """How lines of an svmlight file are read and checked (what :func:`reading` makes of the options).

    index_base   : the index of the first feature, 0 or 1
    n_features   : the width of X, every index checked against it; None: not known yet
    n_categories : the number of categories given, every label checked against it; None: not given
    n_names      : the number of category names given (a names file or list) without n_categories: a
                   label beyond them is blamed on the names (``names_from``), not on the data file
    names_from   : 'FILE: ' of the names file, for that message ('' for a list)
    use_numba    : parse with the compiled parser where it takes the block
    """

    index_base: int = 1
    n_features: int | None = None
    n_categories: int | None = None
    n_names: int | None = None
    names_from: str = ""
    use_numba: bool = True

    @property
    def known_categories(self) -> int | None:
        """The number of categories when the options fix it (else a pass over the files finds it)."""
        return self.n_categories or self.n_names


def read_category_names(path) -> list[str]:
    """One category name per non-empty line, in category-id order."""
    path = existing_file(path, "category names")
    names = [line.strip() for line in path.read_text(encoding="utf-8-sig", errors="replace").splitlines()]
    names = [n for n in names if n]
    if not names:
        raise MlnbError(f"{path}: no category names (expected one name per line, in category-id order)")
    seen = {}
    for name in names:
        if name in seen:
            raise MlnbError(f"{path}: category name {name!r} repeats; expected one distinct name per category")
        seen[name] = True
    return names


def reading(n_features: int | None = None, index_base: int = 1, n_categories: int | None = None,
            category_names=None, use_numba: bool = True) -> tuple[SvmlightReading, list[str] | None]:
    """(the reading, the category names or None) of the svmlight options; ``category_names`` is a
    list or a file with one name per line (read here, in id order)."""
    if index_base not in (0, 1):
        raise MlnbError(f"index_base must be 0 or 1, got {index_base}")
    if n_features is not None and not (isinstance(n_features, (int, np.integer)) and n_features >= 1):
        raise MlnbError(f"n_features must be a positive integer, got {n_features!r}")
    names, names_from = None, ""
    if category_names is not None:
        if isinstance(category_names, (str, os.PathLike)):
            names_from = f"{category_names}: "
            category_names = read_category_names(category_names)
        names = [str(n) for n in category_names]
        if n_categories and len(names) != n_categories:
            raise MlnbError(f"{names_from}{len(names)} category names given for n_categories = {n_categories}")
    return (SvmlightReading(index_base, n_features, n_categories or None,
                            len(names) if names is not None and not n_categories else None, names_from, use_numba),
            names)


# -- parsing --------------------------------------------------------------------------------------
def blocks(path: Path, block_bytes: int | None = None) -> Iterator[tuple[bytes, int]]:
    """(block, number of the block's first line): whole lines of ``path``, about ``block_bytes``
    (default BLOCK_BYTES) at a time."""
    block_bytes = block_bytes or BLOCK_BYTES
    line = 1
    pending: list[bytes] = []  # the line begun and not ended, as read: joined once it ends (one copy, not one a read)
    held = 0
    with open_binary(path, "svmlight data") as stream:
        while True:
            try:
                raw = stream.read(block_bytes)
            except DECOMPRESSION_ERRORS as error:
                raise MlnbError(f"{path}: not a readable svmlight file: corrupt or truncated compressed data after "
                                f"line {line - 1} ({error})") from None
            if not raw:
                if pending:
                    yield b"".join(pending), line
                return
            if b"\n" not in raw:
                pending.append(raw)
                held += len(raw)
                if held > MAX_LINE_BYTES:
                    raise _long_line(path, line, held)
                continue
            data = b"".join([*pending, raw]) if pending else raw
            del raw
            cut = data.rfind(b"\n")
            block, carry = data[:cut + 1], data[cut + 1:]
            del data
            if len(carry) > MAX_LINE_BYTES:
                raise _long_line(path, line + block.count(b"\n"), len(carry))
            pending, held = ([carry] if carry else []), len(carry)
            yield block, line
            line += block.count(b"\n")
            del block


def _long_line(path: Path, line: int, size: int) -> MlnbError:
    """The one line for a line longer than MAX_LINE_BYTES (a document is a line: a missing newline, a
    binary file?), raised before it is held whole."""
    return MlnbError(f"{path}:{line}: a line of more than {size:,} bytes ({human(size)}) without a newline; expected "
                     f"one document per line, each at most {MAX_LINE_BYTES:,} bytes ({human(MAX_LINE_BYTES)}): "
                     "not an svmlight file?")


def parse_file(path: Path, reading: SvmlightReading) -> Iterator[ParsedBlock]:
    """The documents of an svmlight file, a block at a time (``lines``: their lines in the file).
    A bad line ends it with one MlnbError line: 'file:LINE: what is wrong'."""
    for block, first_line in blocks(path):
        parsed = parse_block(block, reading.index_base, reading.n_features, reading.n_categories,
                             use_numba=reading.use_numba)
        if parsed is None:
            found = describe_bad_line(block, reading.index_base, reading.n_features, reading.n_categories)
            if found is None:
                last = first_line + block.count(b"\n")
                raise MlnbError(f"{path}: lines {first_line}-{last}: not readable as svmlight text "
                                "('<labels> <index>:<value> ...')")
            line, problem = found
            raise MlnbError(f"{path}:{first_line + line - 1}: {problem}")
        parsed.lines += first_line - 1
        if reading.known_categories is None and parsed.max_label >= MAX_CATEGORIES:
            position = int(np.flatnonzero(parsed.labels >= MAX_CATEGORIES)[0])
            row = int(np.searchsorted(parsed.label_indptr, position, side="right")) - 1
            raise MlnbError(f"{path}:{parsed.lines[row]}: label {int(parsed.labels[position])} would make more than "
                            f"{MAX_CATEGORIES:,} categories; expected category ids below {MAX_CATEGORIES:,} "
                            "(the bound of data.svmlight.n_categories)")
        if reading.n_names is not None and parsed.labels.size and parsed.max_label >= reading.n_names:
            position = int(np.flatnonzero(parsed.labels >= reading.n_names)[0])
            row = int(np.searchsorted(parsed.label_indptr, position, side="right")) - 1
            label = int(parsed.labels[position])
            raise MlnbError(f"{reading.names_from}{reading.n_names} category names, but {path}:{parsed.lines[row]} has "
                            f"category id {label}: expected at least {label + 1} names, one per line in id order")
        yield parsed


def join_blocks(parts: Sequence[ParsedBlock]) -> ParsedBlock:
    """The documents of ``parts``, in order, as one block."""
    nnz = np.cumsum([0] + [int(p.indptr[-1]) for p in parts])
    named = np.cumsum([0] + [int(p.label_indptr[-1]) for p in parts])
    start = [np.zeros(1, np.int64)]
    return ParsedBlock(indptr=np.concatenate(start + [p.indptr[1:] + nnz[k] for k, p in enumerate(parts)]),
                       indices=np.concatenate([p.indices for p in parts]),
                       data=np.concatenate([p.data for p in parts]),
                       label_indptr=np.concatenate(start + [p.label_indptr[1:] + named[k]
                                                            for k, p in enumerate(parts)]),
                       labels=np.concatenate([p.labels for p in parts]), lines=np.concatenate([p.lines for p in parts]))


def slice_block(block: ParsedBlock, a: int, b: int) -> ParsedBlock:
    """Documents a .. b of a block, in arrays of their own."""
    x0, x1 = block.indptr[a], block.indptr[b]
    l0, l1 = block.label_indptr[a], block.label_indptr[b]
    return ParsedBlock(indptr=block.indptr[a:b + 1] - x0, indices=block.indices[x0:x1].copy(),
                       data=block.data[x0:x1].copy(), label_indptr=block.label_indptr[a:b + 1] - l0,
                       labels=block.labels[l0:l1].copy(), lines=block.lines[a:b].copy())


def matrices(block: ParsedBlock, n_features: int, n_categories: int) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """(X, Y) of a block's documents: X (m, n_features) float32 with sorted indices, Y (m, n_categories) 0/1."""
    m = block.n_documents
    X = sp.csr_matrix((block.data, block.indices, block.indptr), shape=(m, n_features))
    X.has_sorted_indices = True  # the parsers accept only increasing indices
    rows = np.repeat(np.arange(m), np.diff(block.label_indptr))
    Y = sp.csr_matrix((np.ones(block.labels.size, dtype=np.int8), (rows, block.labels)), shape=(m, n_categories))
    Y.sum_duplicates()
    Y.data[:] = 1  # a label written twice on a line
    return X, Y


@dataclass
class SvmlightScan:
    """What a pass over svmlight files found: the largest 0-based feature index and label, and
    the documents in each file."""

    max_index: int
    max_label: int
    documents: list

    def dimensions(self, reading: SvmlightReading, first: Path) -> tuple[int, int]:
        """(n_features, n_categories): the reading's, else what the files need."""
        n_features = reading.n_features or max(self.max_index, 0) + 1  # scikit-learn's width without features
        n_categories = reading.known_categories
        if n_categories is None:
            if self.max_label < 0:
                raise MlnbError(f"{first}: no labels found; a multilabel file needs category ids")
            n_categories = self.max_label + 1
        # the one gate of the sizes the files set, before anything of those sizes is allocated
        check_data_sizes(str(first), n_features=n_features, n_categories=n_categories,
                         n_documents=sum(self.documents) or None)
        return n_features, n_categories


def scan_svmlight(paths: Sequence[Path], reading: SvmlightReading) -> SvmlightScan:
    """One pass over the files, parsing every line (as reading does): the dimensions they need
    and their document counts. Costs about one reading pass (experiments/bench_shards.py)."""
    max_index, max_label, documents = -1, -1, []
    for path in paths:
        count = 0
        for parsed in parse_file(path, reading):
            max_index, max_label = max(max_index, parsed.max_index), max(max_label, parsed.max_label)
            count += parsed.n_documents
        if count == 0:
            raise MlnbError(f"{path}: the file holds no documents")
        documents.append(count)
    return SvmlightScan(max_index, max_label, documents)


# -- in memory ------------------------------------------------------------------------------------
@dataclass
class SvmlightPart:
    """The documents of one path (a file or a glob of files), read whole."""

    X: sp.csr_matrix
    Y: sp.csr_matrix
    ids: np.ndarray
    origins: list
    files: list


def read_parts(entries: Sequence, reading: SvmlightReading,
               what: Sequence[str] = ("svmlight data", "svmlight test data")) -> tuple[list[SvmlightPart], int, int]:
    """(one SvmlightPart per entry, n_features, n_categories): every file of every entry (a path or
    glob pattern; ``what`` names each entry's role for messages) read whole, in one shared feature
    space and category set, with the streaming source's checks in the streaming source's order
    (a pass over every file first when the dimensions are not given)."""
    files = [expand_paths(entry, what[min(k, len(what) - 1)]) for k, entry in enumerate(entries)]
    dimensions_known = reading.n_features is not None and reading.known_categories is not None
    V, K = reading.n_features, reading.known_categories
    done: list[list] = []  # per entry, per file: (X, Y, lines) once checked, the parsed block until then
    for paths in files:
        done.append([])
        for path in paths:
            block = _read_whole(path, reading)
            if block.n_documents == 0:
                raise MlnbError(f"{path}: the file holds no documents")
            done[-1].append(_checked(block, path, V, K) if dimensions_known else block)
    if not dimensions_known:
        scan = SvmlightScan(max(b.max_index for part in done for b in part),
                            max(b.max_label for part in done for b in part), [])
        V, K = scan.dimensions(reading, files[0][0])
        done = [[_checked(block, path, V, K) for path, block in zip(paths, part)] for paths, part in zip(files, done)]
    parts = []
    for paths, part in zip(files, done):
        parts.append(SvmlightPart(
            X=part[0][0] if len(part) == 1 else sp.vstack([X for X, _, _ in part], format="csr"),
            Y=part[0][1] if len(part) == 1 else sp.vstack([Y for _, Y, _ in part], format="csr"),
            ids=np.concatenate([file_ids(k, len(paths), lines.size) for k, (_, _, lines) in enumerate(part)]),
            origins=[RowOrigin(str(path), lines.size, row_lines=lines) for path, (_, _, lines) in zip(paths, part)],
            files=paths))
    return parts, V, K


class _Growing:
    """Arrays appended to in place: grown by ``ndarray.resize`` (realloc; for large arrays glibc moves
    pages with mremap, not copying them), so that reading a file whole holds little more than its
    documents' arrays, not those and their parts."""

    #: bytes first reserved: above glibc's largest mmap threshold (32 MiB, ``mlnb._kernels.memory``), so that the
    #: array is mapped pages from the start (touched only as filled) and every growth is an mremap
    FIRST_BYTES = 33 * 2**20

    def __init__(self, dtype):
        dtype = np.dtype(dtype)
        self.array, self.size = np.empty(self.FIRST_BYTES // dtype.itemsize, dtype), 0

    def extend(self, values: np.ndarray) -> None:
        end = self.size + values.size
        if end > self.array.size:
            self.array.resize(max(end, int(self.array.size * 1.5)), refcheck=False)
        self.array[self.size:end] = values
        self.size = end

    def take(self) -> np.ndarray:
        self.array.resize(self.size, refcheck=False)
        return self.array


def _read_whole(path: Path, reading: SvmlightReading) -> ParsedBlock:
    """Every document of an svmlight file as one block (:func:`parse_file`'s blocks, joined as they come)."""
    indptr, label_indptr = _Growing(np.int64), _Growing(np.int64)
    indices, data, labels, lines = _Growing(np.int32), _Growing(np.float32), _Growing(np.int64), _Growing(np.int64)
    indptr.extend(np.zeros(1, np.int64))
    label_indptr.extend(np.zeros(1, np.int64))
    for block in parse_file(path, reading):
        indptr.extend(block.indptr[1:] + indices.size)
        label_indptr.extend(block.label_indptr[1:] + labels.size)
        indices.extend(block.indices)
        data.extend(block.data)
        labels.extend(block.labels)
        lines.extend(block.lines)
        del block
    return ParsedBlock(indptr=indptr.take(), indices=indices.take(), data=data.take(),
                       label_indptr=label_indptr.take(), labels=labels.take(), lines=lines.take())


def _checked(block: ParsedBlock, path: Path, n_features: int, n_categories: int) -> tuple:
    """(X, Y, lines) of a block after the checks every chunk of the streaming source passes (``make_chunk``)."""
    X, Y = matrices(block, n_features, n_categories)
    X = check_features(X, str(path), row_lines=block.lines)
    Y = check_labels(Y, str(path), n_documents=X.shape[0], row_lines=block.lines)
    return X, Y, block.lines


def read_svmlight(paths: list[str | os.PathLike], n_features: int | None = None,
                  index_base: int = 1, n_categories: int | None = None):
    """Read one or more multilabel svmlight files (or glob patterns) into one shared feature space.

    Returns a list of (X, Y) pairs, one per path, and the number of categories (``n_categories``
    or one more than the largest label seen). Every matrix passes ``validate.check_features``, and
    every bad value is reported at its file and line.
    """
    parts, _, K = read_parts(paths, reading(n_features, index_base, n_categories)[0], what=("svmlight data",))
    return [(part.X, part.Y) for part in parts], K


def load_svmlight_dataset(path, test_path=None, n_features=None, index_base=1, n_categories=None,
                          category_names=None, test_fraction=0.5, seed=0) -> Dataset:
    """A Dataset from one file or glob of shards (split by a seeded hash of each document's id, as
    streamed) or from a train path and a test path (a given split).

    ``category_names`` may be a list or a file with one name per line; without
    ``n_categories`` its length sets the number of categories.
    """
    options, names = reading(n_features, index_base, n_categories, category_names)
    parts, _, K = read_parts([path] + ([test_path] if test_path else []), options)
    name = source_name(parts[0].files)
    origins = [origin for part in parts for origin in part.origins]
    if test_path:
        train, test = parts
        return Dataset.from_train_test(train.X, train.Y, test.X, test.Y, names, name=name, origins=origins,
                                       ids=(train.ids, test.ids), split_rule=given_split_rule("test file", test_path))
    (whole,) = parts
    return Dataset.from_arrays(whole.X, whole.Y, names, test_fraction=test_fraction, seed=seed, name=name,
                               origins=origins, ids=whole.ids)
