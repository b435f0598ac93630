r"""Evaluation of a test set scored chunk by chunk, never held whole in memory.

``evaluate`` wants the n × K scores at once. A streamed test set arrives as chunks (m × K
scores and labels); three pieces turn them into the same ``Evaluation``:

* ``RunningSums`` — everything ``evaluate`` reports that is a sum over documents, added chunk by
  chunk and mergeable by ``+`` (for Dask partitions): per category tp / predicted (from the
  threshold, or from decisions given chunk-wise), positives, the log loss, Brier and expected
  accuracy sums (from probability scores given chunk-wise, else the scores), the reliability
  bins, and the example-based sums Σ_i LRAP_i, Σ_i coverage_i, Σ_i loss_i and the precision@k
  hits, which average over documents. They need no second pass.
* ``ScoreSpill`` — the chunks' scores appended to a file in a folder, stored category-major
  (K × capacity, so one category's n scores are contiguous), and its labels. It keeps a
  ``RunningSums`` of what it was given. Chunks are written with ``os.pwrite`` (K row pieces per
  chunk) and a column is read back as a memory map of that row alone, so neither appending nor
  evaluating maps the whole file: the process's resident memory holds at most the columns in
  use, not the n × K file (whose pages stay in the system's page cache, reclaimable).
* ``evaluate_spilled`` — reads the spill one category at a time (in a thread pool) for the
  exact per-category rank metrics (AUC, average precision, ROC and gains grids, exact curves),
  exactly as ``evaluate`` computes them, and returns the same ``Evaluation``. A category without
  a test positive has none of them (NaN, as ``evaluate`` gives it): its column is not sorted, and
  is read only for the pooled histogram and a column-wise decision rule.

**What is exact and what is bounded.** Every per-category column, roc_tpr, gains, curves, the
calibration table, the baselines and every summary key equal ``evaluate`` on the whole
matrices (the sums only differ by float rounding, far below 1e-9), except the two pooled rank
metrics ``micro_auc`` and ``micro_average_precision``: they rank all n·K (document, category)
pairs together, which a column-at-a-time pass cannot do exactly in O(n) memory (an exact
value would need an external sort of all n·K scores). They come from a histogram of the pooled
scores on a fine grid over their observed finite range (``micro_bins``, default 2^20 bins of
equal width, ±inf in the end bins), with the largest possible error of the binning beside them
in the summary: ``micro_auc_max_error`` and ``micro_average_precision_max_error`` (the bounds
of ``binned``; the exact values lie within them). On RCV1-shaped model scores these bounds were
3e-7 to 2e-6 for the AUC and 2e-6 to 1e-5 for the AP (experiments/bench_roc_auc.py).

**Labels on disk.** The labels are stored sparse: while chunks arrive, each label as a
(document, category) pair appended to two files; at ``close`` they are sorted by category with
one counting pass into ``positives.bin`` (int64 document numbers, category after category) and
its (K + 1) offsets. Text categories are sparse (RCV1: 3.2 labels per document among 103), so
this is 8 bytes per label instead of K bytes per document for a dense int8 K × n matrix (≈ 4×
less disk and I/O on RCV1, more with more categories; 12 bytes per label while chunks arrive).
A bit-packed K × n matrix (K/8 bytes per document, 13 on RCV1) would be about half as large
there but needs bit-level appends for chunks whose size is not a multiple of 8, a decode per
column, and grows with K; the rank pass wants exactly a category's positive positions. The spill holds the ``decisions`` and ``probability_scores`` of
the chunks only as the running sums they feed.

**Settings fixed when the spill is made.** ``threshold``, ``top_k`` and ``exclude`` shape the
running sums (the cut for tp / predicted; the categories ranked by the example-based metrics),
so they are arguments of the spill, not of ``evaluate_spilled``. The scores are stored in the
spill's ``dtype`` (float32 by default, as mlnb's models score); chunks of another float type are
cast to it first, and every metric is that of the cast scores.

Multiclass evaluation (``evaluate_multiclass``) is not streamed here.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import numpy as np
import pandas as pd
import scipy.sparse as sp

from mlnb import progress
from mlnb._kernels.jit import map_threads
from mlnb.errors import MlnbError
from mlnb.metrics._inputs import score_array
from mlnb.metrics._pointwise import FIELDS, decision_counts, finite_range, pointwise_sums
from mlnb.metrics.binned import Grid, auc_from_histograms, average_precision_from_histograms, count_column
from mlnb.metrics.classification import logit
from mlnb.metrics.evaluation import (CALIBRATION_BINS, Evaluation, _calibration_table, _prevalence,
                                     _score_matrix, assemble_evaluation, caller_exclusions,
                                     precision_hits)
from mlnb.metrics.ranking import (LABEL_RANKING_NAMES, curve_parts, fpr_grid, label_ranking_sums, rank_curve,
                                  worker_threads)

MICRO_BINS = 1 << 20  # bins of the pooled histogram behind micro AUC / AP (16 MiB per thread)
SPILL_VERSION = 1
SCORES_FILE = "scores.bin"
LABEL_DOCUMENTS_FILE = "label_documents.bin"  # int64, one per label, while chunks arrive
LABEL_CATEGORIES_FILE = "label_categories.bin"  # int32, one per label, while chunks arrive
POSITIVES_FILE = "positives.bin"  # int64 document numbers, category after category (after close)
SUMS_FILE = "sums.npz"
MANIFEST_FILE = "spill.json"
INITIAL_CAPACITY = 1024  # documents per category row before the first growth
LABEL_BLOCK = 1 << 20  # labels per block when sorting them by category
GROWTH_BLOCK = 1 << 22  # scores per block when the file grows
WRITE_PIECE_VALUES = 1 << 18  # scores of a chunk per thread writing them, at least


def _pwrite_all(fd: int, values, offset: int) -> None:
    """Write all of ``values`` (a contiguous array or buffer) at byte ``offset`` of file ``fd``."""
    view = memoryview(values).cast("B")
    while view.nbytes:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


def _chunk_labels(Y, m: int, K: int, where: str) -> sp.csr_matrix:
    """Canonical CSR int8 0/1 labels (m × K) of a chunk, or MlnbError."""
    shape = tuple(Y.shape) if sp.issparse(Y) else np.shape(Y)
    if shape != (m, K):
        raise MlnbError(f"{where}: Y has shape {shape} but the scores have shape {(m, K)}")
    Y = sp.csr_matrix(Y, copy=True)
    Y.sum_duplicates()
    Y.eliminate_zeros()
    if not np.all(Y.data == 1):
        raise MlnbError(f"{where}: Y must hold only 0/1 (or booleans)")
    return sp.csr_matrix((np.ones(Y.nnz, dtype=np.int8), Y.indices, Y.indptr), shape=(m, K))


def _chunk_scores(scores, K: int, dtype, where: str) -> np.ndarray:
    """The chunk's scores as an (m × K) C-ordered array of ``dtype``, or MlnbError."""
    if sp.issparse(scores):
        raise MlnbError(f"{where}: scores must be a dense m × K array, got a sparse matrix")
    S = score_array(scores, f"{where}: scores")  # real numbers without NaN, exact as float64 (``_inputs``)
    if S.ndim != 2 or S.shape[1] != K:
        raise MlnbError(f"{where}: scores must have shape (m, {K}), got {S.shape}")
    return np.ascontiguousarray(S, dtype=dtype)


@dataclass
class RunningSums:
    """The sums over documents behind ``evaluate``'s pointwise and example-based metrics.

    pointwise      : {field: (K,) float64} of ``_pointwise.FIELDS`` (predicted and tp at the cut)
    reliability    : (3, CALIBRATION_BINS) [count, Σp, Σy] of the probability bins
    decided        : (2, K) int64 [predicted, tp] of the decisions given, or None
    ranking        : (3,) Σ_i LRAP_i, Σ_i coverage_i, Σ_i ranking loss_i over the pooled categories
    precision_hits : Σ_i |true_i ∩ top_k(i)| over the pooled categories
    labels_histogram : (K + 1,) documents with 0, 1, …, K labels among the pooled categories
    score_range    : [lowest, highest] finite score of the pooled categories (inf, −inf if none)
    uncalibrated   : (3, CALIBRATION_BINS) reliability bins of the scores themselves, kept when
                     probability scores are given (the "before calibration" table), else None
    """

    n_categories: int
    threshold: float = 0.5
    top_k: int = 2
    reasons: dict = field(default_factory=dict)
    n_documents: int = 0
    pointwise: dict = None
    reliability: np.ndarray = None
    decided: np.ndarray | None = None
    ranking: np.ndarray = None
    precision_hits: int = 0
    labels_histogram: np.ndarray = None
    score_range: np.ndarray = None
    uncalibrated: np.ndarray | None = None
    with_decisions: bool | None = None  # None until the first chunk
    with_probabilities: bool | None = None

    def __post_init__(self):
        K = self.n_categories
        if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
            raise MlnbError(f"n_categories must be a positive integer, got {K!r}")
        top_k = self.top_k
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
            raise MlnbError(f"top_k must be a positive integer, got {top_k!r}")
        if not 0.0 < float(self.threshold) < 1.0:
            raise MlnbError(f"threshold must be a probability strictly between 0 and 1, got {self.threshold!r}")
        self.n_categories, self.top_k, self.threshold = int(K), int(top_k), float(self.threshold)
        self.reasons = caller_exclusions(self.reasons, K)  # indices or {index: reason}, as ``exclude``
        if self.pointwise is None:
            self.pointwise = {f: np.zeros(K) for f in FIELDS}
        if self.reliability is None:
            self.reliability = np.zeros((3, CALIBRATION_BINS))
        if self.ranking is None:
            self.ranking = np.zeros(3)
        if self.labels_histogram is None:
            self.labels_histogram = np.zeros(K + 1, dtype=np.int64)
        if self.score_range is None:
            self.score_range = np.array([np.inf, -np.inf])

    @classmethod
    def start(cls, n_categories: int, threshold: float = 0.5, top_k: int = 2, exclude=None) -> RunningSums:
        """Empty sums; ``exclude`` as in ``evaluate`` (indices, or {index: reason})."""
        return cls(n_categories, threshold, top_k, exclude)

    @property
    def pooled(self) -> np.ndarray:
        """(K,) bool: the categories in the micro averages and example-based metrics."""
        pooled = np.ones(self.n_categories, dtype=bool)
        pooled[list(self.reasons)] = False
        return pooled

    def add(self, Y, scores, *, decisions=None, probability_scores=None, dtype=np.float64,
            where: str = "chunk") -> RunningSums:
        """Add one chunk (m × K labels and log-odds scores, cast to ``dtype``) in place; returns self."""
        S = _chunk_scores(scores, self.n_categories, dtype, where)
        self._add_checked(_chunk_labels(Y, S.shape[0], self.n_categories, where), S, decisions,
                          probability_scores, where)
        return self

    def _add_checked(self, Y: sp.csr_matrix, S: np.ndarray, decisions, probability_scores, where: str) -> None:
        """Add a validated chunk; nothing changes if it raises."""
        m, K = S.shape
        for flag, given, name in ((self.with_decisions, decisions is not None, "decisions"),
                                  (self.with_probabilities, probability_scores is not None, "probability_scores")):
            if flag is not None and flag != given:
                raise MlnbError(f"{where}: {name} {'missing' if flag else 'given'}; give them with every chunk "
                                "or with none")
        if probability_scores is not None:
            try:
                probability_scores = _score_matrix(probability_scores, S.shape, "probability_scores")
            except MlnbError as error:
                raise MlnbError(f"{where}: {error}") from None
        decided = None
        if decisions is not None:
            try:
                decided = np.vstack(decision_counts(Y, decisions))
            except MlnbError as error:
                raise MlnbError(f"{where}: {error}") from None
        pooled = self.pooled
        columns = None if pooled.all() else np.flatnonzero(pooled)
        sums, reliability = pointwise_sums(Y, S, logit(self.threshold), CALIBRATION_BINS,
                                           probability_scores=probability_scores)
        uncalibrated = None
        if probability_scores is not None:
            uncalibrated = pointwise_sums(Y, S, 0.0, CALIBRATION_BINS)[1]
        ranking = label_ranking_sums(Y, S, columns) if pooled.any() else np.zeros(3)
        # whole numbers, the same in any order: blocks of documents on every thread
        hits = precision_hits(Y, S, self.top_k, columns, n_threads=None) if pooled.any() else 0
        labels = np.diff((Y if columns is None else Y[:, columns]).indptr)  # per document, pooled
        low, high = finite_range(S, columns) if pooled.any() else (np.inf, -np.inf)
        # all computed: now change the state
        self.with_decisions = decisions is not None
        self.with_probabilities = probability_scores is not None
        self.n_documents += m
        for f in FIELDS:
            self.pointwise[f] += sums[f]
        self.reliability += reliability
        if decided is not None:
            self.decided = decided if self.decided is None else self.decided + decided
        if uncalibrated is not None:
            self.uncalibrated = uncalibrated if self.uncalibrated is None else self.uncalibrated + uncalibrated
        self.ranking += ranking
        self.precision_hits += int(hits)
        self.labels_histogram += np.bincount(labels, minlength=K + 1)
        self.score_range = np.array([min(self.score_range[0], low), max(self.score_range[1], high)])

    def __add__(self, other: RunningSums) -> RunningSums:
        """The sums of both sets of documents (e.g. two Dask partitions)."""
        if not isinstance(other, RunningSums):
            return NotImplemented
        for name in ("n_categories", "threshold", "top_k", "reasons"):
            if getattr(self, name) != getattr(other, name):
                raise MlnbError(f"RunningSums: cannot add sums with different {name} "
                                f"({getattr(self, name)!r} and {getattr(other, name)!r})")
        flags = {}
        for name in ("with_decisions", "with_probabilities"):
            a, b = getattr(self, name), getattr(other, name)
            if a is not None and b is not None and a != b:
                raise MlnbError(f"RunningSums: cannot add sums where only one side was given "
                                f"{name.removeprefix('with_')}")
            flags[name] = a if a is not None else b

        def both(a, b):
            return b if a is None else a if b is None else a + b
        return RunningSums(
            self.n_categories, self.threshold, self.top_k, dict(self.reasons),
            n_documents=self.n_documents + other.n_documents,
            pointwise={f: self.pointwise[f] + other.pointwise[f] for f in FIELDS},
            reliability=self.reliability + other.reliability, decided=both(self.decided, other.decided),
            ranking=self.ranking + other.ranking, precision_hits=self.precision_hits + other.precision_hits,
            labels_histogram=self.labels_histogram + other.labels_histogram,
            score_range=np.array([min(self.score_range[0], other.score_range[0]),
                                  max(self.score_range[1], other.score_range[1])]),
            uncalibrated=both(self.uncalibrated, other.uncalibrated), **flags)

    def pooled_metrics(self) -> dict:
        """precision_at_k and the label ranking metrics, as ``evaluate`` reports them."""
        n, ranked = self.n_documents, bool(self.pooled.any())
        nan = float("nan")
        return {"precision_at_k": self.precision_hits / (n * self.top_k) if n and ranked else nan,
                **{name: float(total / n) if n and ranked else nan
                   for name, total in zip(LABEL_RANKING_NAMES, self.ranking)}}

    def uncalibrated_table(self) -> pd.DataFrame | None:
        """The reliability table of the scores themselves (``evaluation.reliability_table``) when
        probability scores were given, else None."""
        return None if self.uncalibrated is None else _calibration_table(self.uncalibrated)

    def save(self, path) -> None:
        """Write the sums to an .npz (read back with ``RunningSums.load``, without pickle)."""
        settings = {"n_categories": self.n_categories, "threshold": self.threshold, "top_k": self.top_k,
                    "reasons": [[k, r] for k, r in sorted(self.reasons.items())],
                    "n_documents": self.n_documents, "precision_hits": self.precision_hits,
                    "with_decisions": self.with_decisions, "with_probabilities": self.with_probabilities}
        arrays = {f"pointwise_{f}": self.pointwise[f] for f in FIELDS}
        arrays.update(reliability=self.reliability, ranking=self.ranking, labels_histogram=self.labels_histogram,
                      score_range=self.score_range)
        if self.decided is not None:
            arrays["decided"] = self.decided
        if self.uncalibrated is not None:
            arrays["uncalibrated"] = self.uncalibrated
        np.savez(path, settings=np.array(json.dumps(settings)), **arrays)

    @classmethod
    def load(cls, path) -> RunningSums:
        try:
            with np.load(path, allow_pickle=False) as saved:
                settings = json.loads(str(saved["settings"]))
                arrays = {name: saved[name] for name in saved.files if name != "settings"}
        except (OSError, ValueError, KeyError) as error:
            raise MlnbError(f"{path}: not a RunningSums file ({error})") from None
        return cls(settings["n_categories"], settings["threshold"], settings["top_k"],
                   {int(k): r for k, r in settings["reasons"]}, n_documents=settings["n_documents"],
                   pointwise={f: arrays[f"pointwise_{f}"] for f in FIELDS}, reliability=arrays["reliability"],
                   decided=arrays.get("decided"), ranking=arrays["ranking"],
                   precision_hits=settings["precision_hits"], labels_histogram=arrays["labels_histogram"],
                   score_range=arrays["score_range"], uncalibrated=arrays.get("uncalibrated"),
                   with_decisions=settings["with_decisions"], with_probabilities=settings["with_probabilities"])


class ScoreSpill:
    """A streamed test set on disk: scores category-major in a file (each category's row read
    back memory-mapped), labels as sparse positions, and the ``RunningSums`` of every chunk
    (module docstring).

        with ScoreSpill(folder, K, exclude=untrainable) as spill:
            for chunk in source.chunks(10_000):
                spill.append(chunk.Y, model.decision_function(chunk.X))
        evaluation = evaluate_spilled(spill, category_names)

    folder : created if missing; must not hold a spill already (``ScoreSpill.open`` reads one)
    threshold, top_k, exclude : as in ``evaluate`` (they shape the running sums)
    dtype : the stored scores' type (float32 or float64)
    expected_documents : room reserved per category before the file must grow (growing rewrites
                         it; the unused tail of each row is a hole in the file on most systems)
    """

    def __init__(self, folder, n_categories: int, *, threshold: float = 0.5, top_k: int = 2, exclude=None,
                 dtype=np.float32, expected_documents: int = 0):
        self.folder = Path(folder)
        self.sums = RunningSums.start(n_categories, threshold, top_k, exclude)
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise MlnbError(f"ScoreSpill: dtype must be float32 or float64, got {self.dtype}")
        if isinstance(expected_documents, bool) or not isinstance(expected_documents, (int, np.integer)) \
                or expected_documents < 0:
            raise MlnbError(f"ScoreSpill: expected_documents must be a non-negative integer, got {expected_documents!r}")
        if self.folder.exists() and not self.folder.is_dir():
            raise MlnbError(f"ScoreSpill: {self.folder} exists and is not a folder")
        self.folder.mkdir(parents=True, exist_ok=True)
        if (self.folder / MANIFEST_FILE).exists() or (self.folder / SCORES_FILE).exists():
            raise MlnbError(f"ScoreSpill: {self.folder} already holds a spill (ScoreSpill.open reads it)")
        self.n_documents = 0
        self.n_labels = 0
        self.closed = False
        self._broken = None  # why appending stopped, after a failed write
        self._chunks = 0
        self._capacity = int(expected_documents) or INITIAL_CAPACITY
        self._scores = open(self.folder / SCORES_FILE, "w+b")  # noqa: SIM115 - open while chunks come
        self._scores.truncate(self.n_categories * self._capacity * self.dtype.itemsize)  # a hole until written
        self._label_documents = open(self.folder / LABEL_DOCUMENTS_FILE, "wb")  # noqa: SIM115
        self._label_categories = open(self.folder / LABEL_CATEGORIES_FILE, "wb")  # noqa: SIM115
        self._positives_indptr = None

    @property
    def n_categories(self) -> int:
        return self.sums.n_categories

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if kind is None:
            self.close()
        else:  # leave the files as they are, unusable, and let the error through
            self._release()

    def append(self, Y, scores, *, decisions=None, probability_scores=None) -> None:
        """Add the next chunk: Y (m × K 0/1, sparse or dense) and scores (m × K log-odds), plus
        the chunk's ``decisions`` (m × K 0/1) and calibrated ``probability_scores`` (m × K) if the
        evaluation should use them (with every chunk or with none)."""
        if self.closed:
            raise MlnbError(f"ScoreSpill {self.folder}: closed; no more chunks can be appended")
        if self._broken:
            raise MlnbError(f"ScoreSpill {self.folder}: unusable after an earlier failure ({self._broken})")
        where = f"ScoreSpill chunk {self._chunks + 1} (from document {self.n_documents})"
        S = _chunk_scores(scores, self.n_categories, self.dtype, where)
        m = S.shape[0]
        Y = _chunk_labels(Y, m, self.n_categories, where)
        sums = RunningSums(self.n_categories, self.sums.threshold, self.sums.top_k, dict(self.sums.reasons),
                           with_decisions=self.sums.with_decisions,
                           with_probabilities=self.sums.with_probabilities)
        sums._add_checked(Y, S, decisions, probability_scores, where)  # the chunk's sums alone
        try:
            self._write(Y, S)
        except OSError as error:
            self._broken = f"writing chunk {self._chunks + 1} failed: {error}"
            raise MlnbError(f"ScoreSpill {self.folder}: {self._broken}") from None
        self.sums = self.sums + sums
        self._chunks += 1

    def _write(self, Y: sp.csr_matrix, S: np.ndarray) -> None:
        m = S.shape[0]
        start = self.n_documents
        self._check_room(m)
        self._ensure_capacity(start + m)
        fd, itemsize, K = self._scores.fileno(), self.dtype.itemsize, self.n_categories

        def write(categories: tuple[int, int]) -> None:
            first, stop = categories
            rows = np.ascontiguousarray(S[:, first:stop].T)  # category k's m scores go after its first n
            for k in range(first, stop):
                _pwrite_all(fd, rows[k - first], (k * self._capacity + start) * itemsize)

        # blocks of categories transposed and written on every thread (the transposition is most of the
        # time; the file's writes take turns; measured by experiments/bench_scale.py)
        pieces = max(1, min(worker_threads(), K, S.size // WRITE_PIECE_VALUES))
        bounds = np.linspace(0, K, pieces + 1).astype(int)
        map_threads(write, list(zip(bounds[:-1], bounds[1:])))
        documents = np.repeat(np.arange(start, start + m, dtype=np.int64), np.diff(Y.indptr))
        self._label_documents.write(documents.astype("<i8").tobytes())
        self._label_categories.write(Y.indices.astype("<i4").tobytes())
        self.n_documents += m
        self.n_labels += int(Y.nnz)

    def _check_room(self, m: int) -> None:
        """Refuse the next ``m`` documents' scores, before a byte of them is written or moved, where
        the disk has no room for them (the rows are holes in the file until written, whether
        reserved by ``expected_documents`` or grown)."""
        itemsize = self.dtype.itemsize
        coming = self.n_categories * m * itemsize
        free = shutil.disk_usage(self.folder).free
        if coming > free:
            written = self.n_categories * self.n_documents * itemsize
            raise MlnbError(f"ScoreSpill {self.folder}: the next {m:,} documents' scores need "
                            f"{coming / 2**20:,.1f} MiB beside the {written / 2**20:,.1f} MiB written, but the disk "
                            f"has {free / 2**20:,.1f} MiB free (engine.spill_folder sets where the scores go)")

    def _ensure_capacity(self, needed: int) -> None:
        """Grow every category row to at least ``needed`` documents, at least doubling.

        The file is lengthened in place and rows moved from the last to the second: row k goes
        from k·old to k·new ≥ k·old + old ≥ k·old + n, so it never overlaps its old place, nor the
        old place of a row not moved yet (j < k ends by j·old + n ≤ k·old). Moved in blocks of
        ``GROWTH_BLOCK`` scores, so memory stays bounded.
        """
        old = self._capacity
        if needed <= old:
            return
        new = max(needed, 2 * old)
        n, itemsize, fd = self.n_documents, self.dtype.itemsize, self._scores.fileno()
        self._scores.truncate(self.n_categories * new * itemsize)
        for k in range(self.n_categories - 1, 0, -1):
            for first in range(0, n, GROWTH_BLOCK):
                size = min(GROWTH_BLOCK, n - first) * itemsize
                block = os.pread(fd, size, (k * old + first) * itemsize)
                if len(block) != size:
                    raise OSError(f"short read while growing {self.folder / SCORES_FILE}")
                _pwrite_all(fd, memoryview(block), (k * new + first) * itemsize)
        self._capacity = new

    def _release(self) -> None:
        for handle in (self._scores, self._label_documents, self._label_categories):
            if handle is not None and not handle.closed:
                handle.close()

    def close(self) -> None:
        """Finish the spill: flush the scores, sort the labels by category, write the sums and
        the manifest. Idempotent; ``evaluate_spilled`` calls it."""
        if self.closed:
            return
        if self._broken:
            raise MlnbError(f"ScoreSpill {self.folder}: unusable after an earlier failure ({self._broken})")
        self._release()
        indptr = self._index_labels()
        self.sums.save(self.folder / SUMS_FILE)
        manifest = {"version": SPILL_VERSION, "n_categories": self.n_categories, "n_documents": self.n_documents,
                    "n_labels": self.n_labels, "capacity": self._capacity, "dtype": self.dtype.name,
                    "positives_indptr": [int(v) for v in indptr]}
        (self.folder / MANIFEST_FILE).write_text(json.dumps(manifest))
        for name in (LABEL_DOCUMENTS_FILE, LABEL_CATEGORIES_FILE):  # their content is in positives.bin now
            (self.folder / name).unlink()
        self.closed = True
        self._map_for_reading(indptr)

    def _index_labels(self) -> np.ndarray:
        """Write positives.bin: the labels' documents sorted by category (ascending within one,
        as the documents arrived in order), by a counting sort in blocks; returns the (K + 1,)
        offsets."""
        K, nnz = self.n_categories, self.n_labels
        counts = np.zeros(K, dtype=np.int64)
        if nnz == 0:
            (self.folder / POSITIVES_FILE).write_bytes(b"")
            return np.zeros(K + 1, dtype=np.int64)
        categories = np.memmap(self.folder / LABEL_CATEGORIES_FILE, dtype="<i4", mode="r", shape=(nnz,))
        documents = np.memmap(self.folder / LABEL_DOCUMENTS_FILE, dtype="<i8", mode="r", shape=(nnz,))
        for start in range(0, nnz, LABEL_BLOCK):
            counts += np.bincount(categories[start:start + LABEL_BLOCK], minlength=K)
        indptr = np.r_[0, np.cumsum(counts)]
        positives = np.memmap(self.folder / POSITIVES_FILE, dtype="<i8", mode="w+", shape=(nnz,))
        cursor = indptr[:-1].copy()  # next free place of each category
        for start in range(0, nnz, LABEL_BLOCK):
            block_categories = np.asarray(categories[start:start + LABEL_BLOCK])
            order = np.argsort(block_categories, kind="stable")
            sorted_categories = block_categories[order]
            block_counts = np.bincount(block_categories, minlength=K)
            rank = np.arange(order.size) - (np.cumsum(block_counts) - block_counts)[sorted_categories]
            positives[cursor[sorted_categories] + rank] = documents[start:start + LABEL_BLOCK][order]
            cursor += block_counts
        positives.flush()
        del categories, documents, positives
        return indptr

    def _map_for_reading(self, indptr) -> None:
        self._positives_indptr = np.asarray(indptr, dtype=np.int64)

    @classmethod
    def open(cls, folder) -> ScoreSpill:
        """A closed spill written earlier (by this or another process), read-only."""
        folder = Path(folder)
        try:
            manifest = json.loads((folder / MANIFEST_FILE).read_text())
        except (OSError, ValueError) as error:
            raise MlnbError(f"ScoreSpill.open: {folder} holds no finished spill ({error})") from None
        if manifest.get("version") != SPILL_VERSION:
            raise MlnbError(f"ScoreSpill.open: {folder / MANIFEST_FILE} has version {manifest.get('version')!r}, "
                            f"expected {SPILL_VERSION}")
        spill = cls.__new__(cls)
        spill.folder = folder
        spill.sums = RunningSums.load(folder / SUMS_FILE)
        spill.dtype = np.dtype(manifest["dtype"])
        spill.n_documents, spill.n_labels = int(manifest["n_documents"]), int(manifest["n_labels"])
        spill._capacity = int(manifest["capacity"])
        spill.closed, spill._broken, spill._chunks = True, None, 0
        spill._scores = spill._label_documents = spill._label_categories = None
        expected = spill.n_categories * spill._capacity * spill.dtype.itemsize
        if spill.sums.n_documents != spill.n_documents or (folder / SCORES_FILE).stat().st_size != expected:
            raise MlnbError(f"ScoreSpill.open: {folder} is inconsistent (its files do not match {MANIFEST_FILE})")
        spill._map_for_reading(manifest["positives_indptr"])
        return spill

    @classmethod
    def concatenate(cls, parts, folder) -> ScoreSpill:
        """One closed spill in ``folder`` of the documents of several closed spills (or their
        folders), in order: e.g. the parts that Dask tasks wrote. Rows are copied one category
        of one part at a time (memory O(largest part)); the running sums are added."""
        parts = [part if isinstance(part, ScoreSpill) else cls.open(part) for part in parts]
        if not parts:
            raise MlnbError("ScoreSpill.concatenate: no spills given")
        for part in parts:
            part._require_closed()
            if part.n_categories != parts[0].n_categories or part.dtype != parts[0].dtype:
                raise MlnbError(f"ScoreSpill.concatenate: {part.folder} has {part.n_categories} categories of "
                                f"{part.dtype}, {parts[0].folder} {parts[0].n_categories} of {parts[0].dtype}")
        sums = parts[0].sums
        for part in parts[1:]:
            sums = sums + part.sums  # checks that threshold, top_k and the exclusions agree
        first = parts[0].sums
        merged = cls(folder, first.n_categories, threshold=first.threshold, top_k=first.top_k, exclude=first.reasons,
                     dtype=parts[0].dtype, expected_documents=max(1, sum(part.n_documents for part in parts)))
        fd, itemsize = merged._scores.fileno(), merged.dtype.itemsize
        offset = 0
        for part in parts:
            for k in range(merged.n_categories):
                if part.n_documents:
                    _pwrite_all(fd, part.scores_column(k), (k * merged._capacity + offset) * itemsize)
                documents = np.asarray(part.positives(k), dtype=np.int64) + offset
                merged._label_documents.write(documents.astype("<i8").tobytes())
                merged._label_categories.write(np.full(documents.size, k, dtype="<i4").tobytes())
                merged.n_labels += documents.size
            offset += part.n_documents
        merged.n_documents = offset
        merged.sums = sums
        merged.close()
        return merged

    def _require_closed(self) -> None:
        if not self.closed:
            raise MlnbError(f"ScoreSpill {self.folder}: close() it before reading it")

    def scores_column(self, k: int) -> np.ndarray:
        """Category k's n scores: a read-only memory map of that row of the file alone (nothing is
        copied; the mapping, and the pages it brought in, go when the array does)."""
        self._require_closed()
        if not 0 <= k < self.n_categories:
            raise MlnbError(f"ScoreSpill: category {k} is out of range 0..{self.n_categories - 1}")
        if self.n_documents == 0:
            return np.zeros(0, dtype=self.dtype)
        return np.memmap(self.folder / SCORES_FILE, dtype=self.dtype, mode="r",
                         offset=k * self._capacity * self.dtype.itemsize, shape=(self.n_documents,))

    @property
    def positive_counts(self) -> np.ndarray:
        """(K,) int64: each category's number of positive documents."""
        self._require_closed()
        return np.diff(self._positives_indptr)

    def positives(self, k: int) -> np.ndarray:
        """Ascending numbers of category k's positive documents (memory-mapped)."""
        self._require_closed()
        first, last = int(self._positives_indptr[k]), int(self._positives_indptr[k + 1])
        if first == last:
            return np.zeros(0, dtype=np.int64)
        return np.memmap(self.folder / POSITIVES_FILE, dtype="<i8", mode="r", offset=first * 8, shape=(last - first,))

    def label_column(self, k: int) -> np.ndarray:
        """(n,) bool: category k's labels."""
        y = np.zeros(self.n_documents, dtype=bool)
        y[self.positives(k)] = True
        return y


def _label_column(n: int, positions: np.ndarray) -> np.ndarray:
    """(n,) bool, True at ``positions``."""
    y = np.zeros(n, dtype=bool)
    y[positions] = True
    return y


def _covering_grid(low: float, high: float, bins: int) -> Grid:
    """A linear grid over every finite pooled score [low, high], widened where float64 cannot cut that
    range into ``bins`` (one value, none, or a spread of a few ulps such as 0 and 5e-324): any grid
    that holds every value gives a correct binned AUC and bound, only a looser one."""
    if not low < high:  # one finite value, or none: any grid holds it in one bin
        low, high = (low - 1.0, low + 1.0) if np.isfinite(low) else (-1.0, 1.0)
    for pad in (0.0, 1.0, 2.0 ** 64):
        try:
            return Grid(low - pad, high + pad, bins, spacing="linear")
        except MlnbError:  # too narrow for float64, or widened beyond it
            continue
    largest = float(np.finfo(np.float64).max)
    return Grid(-largest, largest, bins, spacing="linear")


def evaluate_spilled(spill: ScoreSpill, category_names=None, roc_points: int = 101, curve_categories=(),
                     n_threads: int | None = None, *, train_prevalence=None,
                     micro_bins: int = MICRO_BINS, decided_in_column=None) -> Evaluation:
    """``evaluate`` of a spilled test set, one category column at a time (module docstring).

    The arguments are those of ``evaluate`` that do not shape the running sums (threshold,
    top_k, exclude, decisions and probability_scores were given to the spill). Differences:
    ``curve_categories`` defaults to none (every exact curve would hold ~n points per category,
    O(n·K) memory); ``summary`` has two more keys, ``micro_auc_max_error`` and
    ``micro_average_precision_max_error``, the bounds of the binned micro AUC and AP.
    ``decided_in_column(k, scores)``, if given, decides each category from its whole column (the
    documents it accepts, e.g. ``DecisionRule.decided_in_column`` of pcut, which ranks a category's
    documents at once): precision, recall and F1 count its decisions instead of the spill's.
    Memory: O(n) per thread for one column (its sort and curve) + 2·(micro_bins + 2) counts per
    thread; the scores are read from the memory-mapped file.
    """
    if not isinstance(spill, ScoreSpill):
        raise MlnbError(f"evaluate_spilled: expected a ScoreSpill, got {type(spill).__name__}")
    if isinstance(micro_bins, bool) or not isinstance(micro_bins, (int, np.integer)) or micro_bins < 1:
        raise MlnbError(f"evaluate_spilled: micro_bins must be a positive integer, got {micro_bins!r}")
    spill.close()
    sums = spill.sums
    n, K = spill.n_documents, spill.n_categories
    if n == 0:
        raise MlnbError(f"evaluate_spilled: the spill in {spill.folder} holds no documents")
    names = list(category_names) if category_names is not None else [str(k) for k in range(K)]
    if len(names) != K:
        raise MlnbError(f"evaluate_spilled: category_names has {len(names)} names for {K} categories")
    keep = set(range(K)) if curve_categories is None else {int(k) for k in curve_categories}
    q = _prevalence(train_prevalence, K)
    pooled = sums.pooled
    grid = fpr_grid(roc_points)
    micro_grid = _covering_grid(*sums.score_range, int(micro_bins))
    histograms = {}  # thread id -> (positives, negatives) of the pooled scores
    lock = threading.Lock()
    predicted, tp = np.zeros(K, dtype=np.int64), np.zeros(K, dtype=np.int64)  # decided_in_column's counts
    positive_counts = spill.positive_counts
    undefined = np.full(grid.shape, np.nan)  # one read-only row shared by the categories without a positive
    undefined.flags.writeable = False
    without_positive = (float("nan"), undefined, undefined, None, float("nan"))

    def work(k: int):
        to_rank = positive_counts[k] > 0 or k in keep
        if not (to_rank or pooled[k] or decided_in_column is not None):
            return without_positive  # nothing of this column is counted: it is not read
        z = spill.scores_column(k)
        positions = np.asarray(spill.positives(k))
        y = _label_column(n, positions) if to_rank or decided_in_column is not None else None
        if decided_in_column is not None:  # each k written by one thread only
            accepted = decided_in_column(k, z)
            predicted[k], tp[k] = accepted.size, np.count_nonzero(y[accepted])
        # a category without a test positive has no AUC, AP, ROC or gains (NaN, as ``rank_parts`` gives them
        # to ``evaluate``): its column is not sorted; at 100k long-tailed categories, 4 in 5 of them.
        # A curve holds ~n points: keep only the few asked for, or K of them would rival the scores
        result = curve_parts(rank_curve(y, z), grid, k in keep) if to_rank else without_positive
        if pooled[k]:
            with lock:  # one pair of histograms per thread: integer counts, so any split adds up the same
                if threading.get_ident() not in histograms:
                    histograms[threading.get_ident()] = (np.zeros(micro_bins + 2, np.int64),
                                                         np.zeros(micro_bins + 2, np.int64))
                mine = histograms[threading.get_ident()]
            count_column(*mine, micro_grid, z, positions)
        return result

    pool = ThreadPoolExecutor(max_workers=worker_threads(n_threads))  # numba's thread count, as ``evaluate``
    try:
        ranked = list(progress.track(pool.map(work, range(K)), total=K, description="ROC / lift per category"))
    finally:  # an error or an interrupt: the columns not started are not read first
        pool.shutdown(wait=True, cancel_futures=True)
    pos, neg = np.zeros(micro_bins + 2, np.int64), np.zeros(micro_bins + 2, np.int64)
    for thread_pos, thread_neg in histograms.values():
        pos += thread_pos
        neg += thread_neg
    histograms.clear()
    occupied = np.flatnonzero(pos + neg)  # empty bins change neither value nor bound
    pos, neg = pos[occupied], neg[occupied]
    micro_auc, micro_auc_error = (float(v) for v in auc_from_histograms(pos, neg))
    micro_ap, micro_ap_error = (float(v) for v in average_precision_from_histograms(pos, neg))
    pooled_metrics = {"micro_auc": micro_auc, "micro_average_precision": micro_ap, **sums.pooled_metrics()}
    labels_per_document = np.repeat(np.arange(K + 1), sums.labels_histogram)
    decided = None if sums.decided is None else (sums.decided[0], sums.decided[1])
    if decided_in_column is not None:
        decided = (predicted, tp)
    evaluation = assemble_evaluation(n, names, sums.pointwise, decided, ranked, keep, grid, sums.reliability,
                                     pooled_metrics, sums.reasons, pooled, q, labels_per_document, sums.top_k)
    evaluation.summary["micro_auc_max_error"] = micro_auc_error
    evaluation.summary["micro_average_precision_max_error"] = micro_ap_error
    return evaluation
