"""RCV1-v2 (Lewis, Yang, Rose & Li, JMLR 2004): scikit-learn's cache or the original LYRL2004 files.

Both give 804,414 documents × 47,236 terms (cosine-normalised log TF-IDF, the
"ltc" weights of LYRL2004) × 103 topics, with three splits:

* ``lyrl2004``: the paper's chronological split, the first 23,149 documents
  train and the other 781,265 test;
* ``swapped``: train on the 781,265 and test on the 23,149 (the "full
  training set" studies);
* ``random``: a seeded random split with ``train_size`` / ``test_size``.

``source = "rcv1"`` reads scikit-learn's ``fetch_rcv1`` cache (downloading it
only when allowed) with a restricted unpickler that builds numpy arrays and CSR
matrices and nothing else; ``source = "lyrl2004"`` reads the distribution files
``lyrl2004_vectors_train.dat``, ``lyrl2004_vectors_test_pt0..3.dat`` (lines
``docid  termid:weight ...``, optionally .gz) and ``rcv1-v2.topics.qrels``
(lines ``topic docid 1``).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb.data.dataset import Dataset, RowOrigin
from mlnb.data.hashing import FILE_ID_SHIFT
from mlnb.data.limits import MAX_LINE_BYTES
from mlnb.data.regular import check_regular, open_regular
from mlnb.data.splits import random_split_rule
from mlnb.data.validate import check_features, check_labels, existing_file, existing_folder, place
from mlnb.errors import MlnbError

N_FEATURES = 47_236
LYRL_TRAIN = 23_149
SPLITS = ("lyrl2004", "swapped", "random")


def split_rule(split: str, train_size: int = 0, test_size: int = 0, test_fraction: float = 0.5, seed: int = 0) -> str:
    """The report's sentence for one of SPLITS (``Dataset.split_rule``)."""
    if split == "random":
        return random_split_rule(train_size, test_size, test_fraction, seed)
    if split == "swapped":
        return "the LYRL2004 split swapped (trained on its test documents, tested on its training documents)"
    return "the LYRL2004 split"


def _split(dataset: Dataset, n_first: int, split: str, train_size: int, test_size: int,
           test_fraction: float, seed: int) -> Dataset:
    """Apply one of SPLITS to documents whose first ``n_first`` rows are the LYRL2004 training set."""
    if split not in SPLITS:
        raise MlnbError(f"split must be one of {SPLITS}, got {split!r}")
    if split == "random":
        return dataset.split_by_counts(train_size, test_size, test_fraction, seed)
    first, rest = np.arange(n_first), np.arange(n_first, dataset.n_documents)
    train, test = (first, rest) if split == "lyrl2004" else (rest, first)
    if train.size == 0 or test.size == 0:
        raise MlnbError(f"split {split!r} needs both the LYRL2004 training and test documents")
    return replace(dataset, train_index=train, test_index=test, split_rule=split_rule(split))


# -- scikit-learn's cache ------------------------------------------------------------------------
# fetch_rcv1 keeps four joblib pickles in DATA_HOME/RCV1/ (the "_py3" suffix is its _pkl_filepath):
CACHE_NAMES = ("samples_py3.pkl", "sample_id_py3.pkl", "sample_topics_py3.pkl", "topics_names_py3.pkl")

# The only globals those pickles name (joblib 1.x, scipy >= 1.8 or older, numpy 1.x or 2.x). A
# pickle may call any global it names, so this list, not the file, decides what loading can do.
_SPARSE = {("scipy.sparse._csr", "csr_matrix"), ("scipy.sparse._csr", "csr_array"),
           ("scipy.sparse.csr", "csr_matrix")}
_ARRAY_HEADER = ("joblib.numpy_pickle", "NumpyArrayWrapper")
_RECONSTRUCT = np.empty(0).__reduce__()[0]  # numpy's _reconstruct, wherever this numpy keeps it
_NUMPY = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype,
          ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,  # object arrays, numpy 2
          ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT}  # object arrays, numpy 1
_CHUNK = 1 << 24  # bytes read at a time into an array


class _Refused(Exception):
    """A cache file asks for something the restricted loader does not give."""


class _SparseState:
    """Stands in for a pickled CSR matrix: receives its attributes, becomes a checked csr_matrix later."""


class _ArrayHeader:
    """Stands in for joblib's NumpyArrayWrapper (subclass, shape, order, dtype, ...); the array's
    bytes follow it in the file, outside the pickle."""


class _CacheUnpickler(pickle._Unpickler):  # the Python unpickler: its BUILD can be overridden, as joblib does
    dispatch = pickle._Unpickler.dispatch.copy()

    def __init__(self, file):
        super().__init__(file)
        self.file_handle = file

    def find_class(self, module: str, name: str):
        if (module, name) in _SPARSE:
            return _SparseState
        if (module, name) == _ARRAY_HEADER:
            return _ArrayHeader
        if (module, name) in _NUMPY:
            return _NUMPY[module, name]
        raise _Refused(f"the pickle names {module}.{name}, which is not one of the numpy/scipy/joblib "
                       "types scikit-learn's RCV1 cache holds")

    def persistent_load(self, pid):
        raise _Refused("the pickle uses persistent ids, which scikit-learn's RCV1 cache does not")

    def load_build(self):
        super().load_build()
        if isinstance(self.stack[-1], _ArrayHeader):
            self.stack[-1] = self._read_array(self.stack[-1].__dict__)

    dispatch[pickle.BUILD[0]] = load_build

    def _read_array(self, header: dict) -> np.ndarray:
        """The array that joblib wrote right after its header (joblib's NumpyArrayWrapper.read_array)."""
        shape, order, dtype = header.get("shape"), header.get("order"), header.get("dtype")
        if (header.get("subclass") is not np.ndarray or order not in ("C", "F") or not isinstance(dtype, np.dtype)
                or not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape)):
            raise _Refused(f"an array header is not a plain numpy array's ({sorted(header)})")
        if dtype.hasobject:  # joblib pickles object arrays (the topic names) in a nested stream
            array = _CacheUnpickler(self.file_handle).load()
            if not (isinstance(array, np.ndarray) and array.shape == shape
                    and all(isinstance(item, str) for item in array.flat)):
                raise _Refused("an object array holds something other than strings")
            return array
        if dtype.kind not in "biufU" or dtype.fields is not None or dtype.subdtype is not None:
            raise _Refused(f"an array has the type {dtype}; expected numbers or strings")
        if "numpy_array_alignment_bytes" in header:  # joblib >= 1.2: one byte n, then n bytes of padding
            padding = self.file_handle.read(1)
            self.file_handle.read(padding[0] if padding else 0)
        array = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=dtype)  # like joblib; pages fill as read
        buffer, done = memoryview(array).cast("B"), 0
        while done < buffer.nbytes:
            read = self.file_handle.readinto(buffer[done:done + _CHUNK])
            if not read:
                raise _Refused("the file ends inside an array")
            done += read
        array = array.reshape(shape[::-1]).T if order == "F" else array.reshape(shape)
        return array.astype(dtype.newbyteorder("="), copy=False)


def _decompressed(raw):
    """The byte stream of a joblib file, by its first bytes (joblib.dump's compress= formats but lz4)."""
    from joblib.compressor import BinaryGzipFile, BinaryZlibFile

    magic = raw.peek(6)[:6]
    for prefix, opener in ((b"\x78", BinaryZlibFile), (b"\x1f\x8b", BinaryGzipFile), (b"BZh", bz2.BZ2File),
                           (b"\xfd7zXZ", lzma.LZMAFile), (b"\x5d\x00", lzma.LZMAFile)):
        if magic.startswith(prefix):
            return opener(raw, "rb")
    if magic.startswith(b"\x80"):  # an uncompressed pickle
        return raw
    raise _Refused("not a joblib file (uncompressed, zlib, gzip, bz2 or lzma)")


def _as_csr(value, path: Path) -> sp.csr_matrix:
    state = value.__dict__ if isinstance(value, _SparseState) else {}
    parts = [state.get(key) for key in ("data", "indices", "indptr")]
    shape = state.get("_shape", state.get("shape"))
    if not all(isinstance(part, np.ndarray) and part.ndim == 1 for part in parts) or not isinstance(shape, tuple):
        raise MlnbError(f"{path}: expected a CSR matrix in scikit-learn's RCV1 cache, got {type(value).__name__}")
    try:
        matrix = sp.csr_matrix(tuple(parts), shape=shape)
        matrix.check_format(full_check=True)  # indices inside the shape, indptr monotone: safe to index
    except (ValueError, TypeError) as error:
        raise MlnbError(f"{path}: not a consistent CSR matrix ({error})") from None
    return matrix


def read_cache_file(path: Path):
    """One joblib file of fetch_rcv1's cache, read without running anything it names: numpy arrays
    (numbers, or strings), and CSR matrices given back as ``_SparseState``."""
    raw = open_regular(path, "scikit-learn's RCV1 cache")
    try:
        with raw, _decompressed(raw) as stream:
            return _CacheUnpickler(stream).load()
    except _Refused as error:
        reason = str(error)
    except MemoryError:
        reason = "an array is larger than memory"
    except Exception as error:  # a truncated or corrupt pickle can fail in many ways; nothing has run
        reason = f"{type(error).__name__}: {error}"
    raise MlnbError(f"{path}: refused as an RCV1 cache file: {' '.join(reason.split())}; delete it and "
                    "download again with data.rcv1.download_if_missing = true")


def _cache_folder(data_home: str | None) -> Path:
    """DATA_HOME/RCV1 as fetch_rcv1 finds it, without creating anything (get_data_home would)."""
    home = data_home or os.environ.get("SCIKIT_LEARN_DATA", os.path.join("~", "scikit_learn_data"))
    return Path(os.path.expanduser(home)) / "RCV1"


def load_rcv1(data_home: str | None = None, download_if_missing: bool = False, split: str = "lyrl2004",
              train_size: int = 0, test_size: int = 0, test_fraction: float = 0.5, seed: int = 0) -> Dataset:
    """RCV1-v2 from scikit-learn's ``fetch_rcv1`` cache; category names are the topic codes.

    The cache is read by mlnb's restricted unpickler, never by ``joblib.load``: a shared config can
    point ``data_home`` anywhere, and a pickle there must not run code. ``fetch_rcv1`` is called only
    to download, when the cache is absent and ``download_if_missing`` is true; nothing else creates
    the folder.
    """
    if data_home and Path(os.path.expanduser(data_home)).exists():
        existing_folder(os.path.expanduser(data_home), "data.rcv1.data_home")
    folder = _cache_folder(data_home)
    paths = [folder / name for name in CACHE_NAMES]
    present = [path.exists() for path in paths]  # a folder or FIFO of the name is there: refused when read
    if not all(present) and any(present):  # fetch_rcv1 would joblib.load the files that are there
        raise MlnbError(f"{folder}: scikit-learn's RCV1 cache is incomplete (missing "
                        f"{', '.join(p.name for p, ok in zip(paths, present) if not ok)}); expected all of "
                        f"{', '.join(CACHE_NAMES)}: delete the folder to download again, or complete it")
    if not any(present):
        if download_if_missing:
            from sklearn.datasets import fetch_rcv1

            try:
                fetch_rcv1(data_home=data_home or None, download_if_missing=True)  # writes the cache, read below
            except Exception as error:  # URLError / HTTPError / OSError without network or disk
                how = f"and the download failed ({type(error).__name__}: {' '.join(str(error).split())})"
            else:
                how = ""
        else:
            how = "and data.rcv1.download_if_missing is false"
        if how:
            raise MlnbError(f"RCV1 is not in scikit-learn's cache at {folder} (files {', '.join(CACHE_NAMES)}) "
                            f"{how}; run once with network and download_if_missing = true, copy that cache "
                            "there, or use data.source = 'lyrl2004' with the original files")
    samples, sample_id, topics, names = (read_cache_file(path) for path in paths)
    X = _as_csr(samples, paths[0]).astype(np.float32)
    Y = (_as_csr(topics, paths[2]) if isinstance(topics, _SparseState) else
         sp.csr_matrix(topics) if isinstance(topics, np.ndarray) and topics.ndim == 2 else None)
    checks = [(isinstance(sample_id, np.ndarray) and sample_id.shape == (X.shape[0],), paths[1],
               f"{X.shape[0]} document ids, as many as {paths[0].name} has rows"),
              (Y is not None and Y.shape[0] == X.shape[0] and Y.dtype.kind in "biu", paths[2],
               f"a {X.shape[0]}-row integer topic matrix"),
              (isinstance(names, np.ndarray) and names.ndim == 1 and Y is not None and names.size == Y.shape[1]
               and all(isinstance(t, str) for t in names.tolist()), paths[3],
               f"one topic name per column of {paths[2].name}")]
    for ok, path, expected in checks:
        if not ok:
            raise MlnbError(f"{path}: expected {expected}")
    X = check_features(X, str(paths[0]))  # a cache is data like any file: every value checked
    dataset = Dataset(X=X, Y=check_labels(Y, str(paths[2])), category_names=[str(t) for t in names],
                      train_index=np.arange(0), test_index=np.arange(0), name="rcv1",
                      origins=(RowOrigin(str(paths[0]), X.shape[0]),))
    return _split(dataset, min(LYRL_TRAIN, X.shape[0]), split, train_size, test_size, test_fraction, seed)


# -- the original LYRL2004 files -----------------------------------------------------------------
def _find(folder: Path, stem: str) -> Path | None:
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.exists():
            return existing_file(candidate, "LYRL2004 data")  # a folder of that name is an error, not absent
    return None


@contextmanager
def _open_text(path: Path) -> Iterator[Iterator[str]]:
    """The lines of a LYRL2004 text file, each read at most MAX_LINE_BYTES characters at a time: a longer
    one (a file without newlines) is refused on its line before it is held whole."""
    check_regular(path, "LYRL2004 data")
    with (gzip.open(path, "rt", encoding="ascii", errors="replace") if path.suffix == ".gz" else
          open(path, encoding="ascii", errors="replace")) as file:
        yield _bounded_lines(path, file)


def _bounded_lines(path: Path, file) -> Iterator[str]:
    number = 0
    while line := file.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(line) > MAX_LINE_BYTES:
            raise MlnbError(f"{path}:{number}: a line of more than {MAX_LINE_BYTES:,} characters; expected one "
                            "document or topic assignment per line")
        yield line


def _row_lines(path: Path):
    """row -> its line number in a vectors file (rows are its non-blank lines), found on demand."""
    def line_of(row: int) -> int:
        with _open_text(path) as lines:
            documents = (number for number, line in enumerate(lines, start=1) if line.strip())
            return next(number for i, number in enumerate(documents) if i == row)
    return line_of


def _describe_bad_vector_line(path: Path) -> str | None:
    with _open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            fields = line.split()
            if not fields:
                continue
            if not fields[0].isdigit():
                return f"{path}:{number}: expected a document id first, got {fields[0]!r}"
            previous = 0
            for field in fields[1:]:
                term, sep, weight = field.partition(":")
                if not sep or not term.isdigit():
                    return f"{path}:{number}: expected 'termid:weight', got {field!r}"
                try:
                    float(weight)
                except ValueError:
                    return f"{path}:{number}: expected a number after '{term}:', got {weight!r}"
                if not 1 <= int(term) <= N_FEATURES:
                    return f"{path}:{number}: term id {term} is outside 1..{N_FEATURES}"
                if int(term) <= previous:
                    what = "repeats" if int(term) == previous else f"comes after the larger term id {previous}"
                    return (f"{path}:{number}: term id {term} {what}; expected term ids in increasing order, "
                            "each once")
                previous = int(term)
    return None


def read_lyrl_vectors(path: Path) -> tuple[sp.csr_matrix, np.ndarray]:
    """(X, document ids) of one vectors file, through scikit-learn's svmlight reader
    (the document id stands where svmlight has its target)."""
    from sklearn.datasets import load_svmlight_file  # here: importing sklearn.datasets is slow

    try:
        X, ids = load_svmlight_file(str(path), n_features=N_FEATURES, zero_based=False, dtype=np.float32)
    except (ValueError, OSError, EOFError) as error:
        try:
            message = _describe_bad_vector_line(path)
        except (OSError, EOFError) as scan_error:
            message = f"{path}: not a readable file ({scan_error})"
        raise MlnbError(message or f"{path}: not a LYRL2004 vectors file ({error})") from None
    if X.shape[0] == 0:
        raise MlnbError(f"{path}: the file holds no documents")
    fractional = np.flatnonzero((ids != np.round(ids)) | (ids < 0))
    if fractional.size:
        raise MlnbError(f"{place(str(path), int(fractional[0]), row_lines=_row_lines(path))}: document id "
                        f"{ids[fractional[0]]:g}; expected whole non-negative document ids")
    return check_features(X, str(path), row_lines=_row_lines(path)), ids.astype(np.int64)


def _check_unique_ids(ids: np.ndarray, files: list[Path], rows_per_file: list[int]) -> None:
    """Every document id once over all vectors files, or one line naming the second occurrence."""
    order = np.argsort(ids, kind="stable")
    repeated = order[1:][ids[order[1:]] == ids[order[:-1]]]
    if not repeated.size:
        return
    row = int(repeated.min())  # the earliest row that repeats an id seen before it
    ends = np.cumsum(rows_per_file)
    f = int(np.searchsorted(ends, row, side="right"))
    local = row - (int(ends[f - 1]) if f else 0)
    raise MlnbError(f"{place(str(files[f]), local, row_lines=_row_lines(files[f]))}: document id {ids[row]} "
                    "occurs twice in the vectors files; expected each document once")


def read_qrels(path: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(topics, topic index per pair, document id per pair) from 'topic docid 1' lines."""
    topics: dict[str, int] = {}
    topic_of, doc_of = [], []
    with _open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 3 or not fields[1].isdigit():
                raise MlnbError(f"{path}:{number}: expected 'TOPIC DOCID 1', got {line.strip()!r}")
            topic_of.append(topics.setdefault(fields[0], len(topics)))
            doc_of.append(int(fields[1]))
    if not topic_of:
        raise MlnbError(f"{path}: no topic assignments")
    names = sorted(topics)
    remap = np.array([names.index(t) for t in topics])  # first-seen order -> alphabetical
    return names, remap[np.array(topic_of)], np.array(doc_of, dtype=np.int64)


def load_lyrl2004(folder, split: str = "lyrl2004", train_size: int = 0, test_size: int = 0,
                  test_fraction: float = 0.5, seed: int = 0) -> Dataset:
    """RCV1-v2 from the original LYRL2004 files in ``folder`` (train file first, then test parts)."""
    folder = existing_folder(folder, "data.lyrl2004.folder")
    train_file = _find(folder, "lyrl2004_vectors_train.dat")
    qrels = _find(folder, "rcv1-v2.topics.qrels")
    for found, stem in ((train_file, "lyrl2004_vectors_train.dat"), (qrels, "rcv1-v2.topics.qrels")):
        if found is None:
            raise MlnbError(f"{folder}: {stem} (or {stem}.gz) not found")
    test_files = [p for p in (_find(folder, f"lyrl2004_vectors_test_pt{i}.dat") for i in range(4)) if p]
    parts = [read_lyrl_vectors(p) for p in [train_file, *test_files]]
    X = sp.vstack([p[0] for p in parts], format="csr")
    ids = np.concatenate([p[1] for p in parts])
    _check_unique_ids(ids, [train_file, *test_files], [p[0].shape[0] for p in parts])
    topics, topic_of, doc_of = read_qrels(qrels)
    row_of = {doc: row for row, doc in enumerate(ids)}
    rows = np.fromiter((row_of.get(d, -1) for d in doc_of), dtype=np.int64, count=doc_of.size)
    known = rows >= 0  # qrels cover all 804,414 documents; we may hold only some
    Y = sp.csr_matrix((np.ones(int(known.sum()), dtype=np.int8), (rows[known], topic_of[known])),
                      shape=(X.shape[0], len(topics)))
    Y.sum_duplicates()
    Y.data[:] = 1
    origins = tuple(RowOrigin(str(p), part[0].shape[0], row_lines=_row_lines(p))
                    for p, part in zip([train_file, *test_files], parts))
    # ids as a source of several files numbers them: (file number << 40) + position in the file
    ids = np.concatenate([(k << FILE_ID_SHIFT) + np.arange(part[0].shape[0], dtype=np.int64)
                          for k, part in enumerate(parts)])
    dataset = Dataset(X=X, Y=Y, category_names=topics, train_index=np.arange(0), test_index=np.arange(0),
                      name="rcv1-lyrl2004", origins=origins, ids=ids)
    return _split(dataset, parts[0][0].shape[0], split, train_size, test_size, test_fraction, seed)
