"""RCV1-v2 (Lewis, Yang, Rose & Li, JMLR 2004): scikit-learn's cache or the original LYRL2004 files.

Both give 804,414 documents × 47,236 terms (cosine-normalised log TF-IDF, the
"ltc" weights of LYRL2004) × 103 topics, with three splits:

* ``lyrl2004``: the paper's chronological split, the first 23,149 documents
  train and the other 781,265 test;
* ``swapped``: train on the 781,265 and test on the 23,149 (the "full
  training set" studies);
* ``random``: a seeded random split with ``train_size`` / ``test_size``.

``source = "rcv1"`` reads scikit-learn's ``fetch_rcv1`` cache (downloading it
only when allowed); ``source = "lyrl2004"`` reads the distribution files
``lyrl2004_vectors_train.dat``, ``lyrl2004_vectors_test_pt0..3.dat`` (lines
``docid  termid:weight ...``, optionally .gz) and ``rcv1-v2.topics.qrels``
(lines ``topic docid 1``).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from mlnb.data.dataset import Dataset
from mlnb.errors import MlnbError

N_FEATURES = 47_236
LYRL_TRAIN = 23_149
SPLITS = ("lyrl2004", "swapped", "random")


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
    return Dataset(X=dataset.X, Y=dataset.Y, category_names=dataset.category_names, train_index=train,
                   test_index=test, feature_names=dataset.feature_names, name=dataset.name)


# -- scikit-learn's cache ------------------------------------------------------------------------
def _cache_files(data_home: str | None) -> tuple[Path, list[str]]:
    from sklearn.datasets import get_data_home
    from sklearn.datasets._base import _pkl_filepath  # the cache's file names, as fetch_rcv1 writes them

    folder = Path(get_data_home(data_home=data_home or None)) / "RCV1"
    names = [Path(_pkl_filepath(str(folder), n)).name
             for n in ("samples.pkl", "sample_id.pkl", "sample_topics.pkl", "topics_names.pkl")]
    return folder, names


def load_rcv1(data_home: str | None = None, download_if_missing: bool = False, split: str = "lyrl2004",
              train_size: int = 0, test_size: int = 0, test_fraction: float = 0.5, seed: int = 0) -> Dataset:
    """RCV1-v2 through ``sklearn.datasets.fetch_rcv1``; category names are the topic codes."""
    from sklearn.datasets import fetch_rcv1

    folder, names = _cache_files(data_home)
    try:
        bunch = fetch_rcv1(data_home=data_home or None, download_if_missing=download_if_missing)
    except Exception as error:  # OSError when not cached, URLError / HTTPError without network
        how = ("and data.rcv1.download_if_missing is false" if not download_if_missing
               else f"and the download failed ({type(error).__name__}: {error})")
        raise MlnbError(f"RCV1 is not in scikit-learn's cache at {folder} (files {', '.join(names)}) {how}; "
                        "run once with network and download_if_missing = true, copy that cache there, "
                        "or use data.source = 'lyrl2004' with the original files") from None
    X = sp.csr_matrix(bunch.data, dtype=np.float32)
    Y = sp.csr_matrix(bunch.target, dtype=np.int8)
    dataset = Dataset(X=X, Y=Y, category_names=[str(t) for t in bunch.target_names],
                      train_index=np.arange(0), test_index=np.arange(0), name="rcv1")
    return _split(dataset, min(LYRL_TRAIN, X.shape[0]), split, train_size, test_size, test_fraction, seed)


# -- the original LYRL2004 files -----------------------------------------------------------------
def _find(folder: Path, stem: str) -> Path | None:
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    return None


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="ascii", errors="replace") if path.suffix == ".gz" else \
        open(path, encoding="ascii", errors="replace")


def _describe_bad_vector_line(path: Path) -> str | None:
    with _open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            fields = line.split()
            if not fields:
                continue
            if not fields[0].isdigit():
                return f"{path}:{number}: expected a document id first, got {fields[0]!r}"
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
    return None


def read_lyrl_vectors(path: Path) -> tuple[sp.csr_matrix, np.ndarray]:
    """(X, document ids) of one vectors file, through scikit-learn's svmlight reader
    (the document id stands where svmlight has its target)."""
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
    fractional = np.flatnonzero(ids != np.round(ids))
    if fractional.size:
        raise MlnbError(f"{path}: document {fractional[0] + 1} has the id {ids[fractional[0]]:g}; "
                        "expected whole-number document ids")
    return sp.csr_matrix(X), ids.astype(np.int64)


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
    folder = Path(folder)
    if not folder.is_dir():
        raise MlnbError(f"{folder}: no such folder (data.lyrl2004.folder)")
    train_file = _find(folder, "lyrl2004_vectors_train.dat")
    qrels = _find(folder, "rcv1-v2.topics.qrels")
    for found, stem in ((train_file, "lyrl2004_vectors_train.dat"), (qrels, "rcv1-v2.topics.qrels")):
        if found is None:
            raise MlnbError(f"{folder}: {stem} (or {stem}.gz) not found")
    test_files = [p for p in (_find(folder, f"lyrl2004_vectors_test_pt{i}.dat") for i in range(4)) if p]
    parts = [read_lyrl_vectors(p) for p in [train_file, *test_files]]
    X = sp.vstack([p[0] for p in parts], format="csr")
    ids = np.concatenate([p[1] for p in parts])
    topics, topic_of, doc_of = read_qrels(qrels)
    row_of = {doc: row for row, doc in enumerate(ids)}
    rows = np.fromiter((row_of.get(d, -1) for d in doc_of), dtype=np.int64, count=doc_of.size)
    known = rows >= 0  # qrels cover all 804,414 documents; we may hold only some
    Y = sp.csr_matrix((np.ones(int(known.sum()), dtype=np.int8), (rows[known], topic_of[known])),
                      shape=(X.shape[0], len(topics)))
    Y.sum_duplicates()
    Y.data[:] = 1
    dataset = Dataset(X=X, Y=Y, category_names=topics, train_index=np.arange(0), test_index=np.arange(0),
                      name="rcv1-lyrl2004")
    return _split(dataset, parts[0][0].shape[0], split, train_size, test_size, test_fraction, seed)
