r"""Every model's scores of documents: held in memory, or spilled to disk when they do not fit.

Scores are one (n × K) float32 matrix per model, in the documents' order (their ids ascending
within each file, files in order: the same order in memory, streamed and on Dask). Where they
are held is the only thing that differs between sizes:

    memory : the matrices themselves (and the labels Y, CSR). Everything downstream — decision
             rules, calibration, every metric, bootstrap and DeLong intervals, the scores file
             for ``mlnb compare`` — runs on them exactly as on any in-memory study.
    spill  : one ``ScoreSpill`` per model (``mlnb.metrics.streaming``), category-major on disk,
             with the running sums of every pointwise metric; the decisions and calibrated
             probabilities are applied chunk by chunk while scoring (pcut's when evaluated, from each
             category's column: ``evaluate_spilled``). What needs all scores at
             once is refused or bounded there, and the report says which (``SPILL_LIMITS``).

``engine.scores = "auto"`` holds them in memory when their estimate fits
``engine.max_score_memory`` (and the memory available), else spills them.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb.backends.spill import spill_prefix
from mlnb.budget import available_memory
from mlnb.engine.documents import Documents
from mlnb.engine.tasks import Reading, Scoring, merge_spills, score_partitions, scoring_groups
from mlnb.errors import MlnbError
from mlnb.metrics.streaming import ScoreSpill

#: bytes of scores per document, category and model while they are evaluated in memory: the float32
#: scores, a float64 copy in the rank metrics
SCORE_BYTES = 12
#: what an evaluation from spilled scores cannot do, each as the report states it
SPILL_LIMITS = ("bootstrap intervals of the summary metrics (those of the ranking metrics at k are kept: they "
                "resample each document's k best categories) and the scores file for `mlnb compare` (the scores stay "
                "on disk only during the run); micro AUC/AP are binned, with their largest possible error in the "
                "summary")


@dataclass(eq=False)
class Scored:
    """Every model's scores of one set of documents, in memory (``Y``, ``scores``) or spilled."""

    n_documents: int
    Y: sp.csr_matrix | None = None  # (n, K) 0/1, in memory
    ids: np.ndarray | None = None  # (n,) int64 document ids, in memory
    scores: dict = field(default_factory=dict)  # name -> (n, K) float32, in memory
    spills: dict = field(default_factory=dict)  # name -> closed ScoreSpill
    seconds: dict = field(default_factory=dict)  # name -> scoring seconds
    folder: Path | None = None  # the spills' folder (deleted by ``close``)

    @property
    def in_memory(self) -> bool:
        return not self.spills

    def close(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def score_in_memory(models: dict, documents: Documents, backend=None) -> Scored:
    """Every model's scores of ``documents``, held in memory (read chunk by chunk when streamed)."""
    if documents.in_memory:
        scored = Scored(documents.n_documents, Y=documents.Y, ids=documents.ids)
        for name, model in models.items():
            started = time.perf_counter()
            scored.scores[name] = model.decision_function(documents.X)  # (n, K)
            scored.seconds[name] = time.perf_counter() - started
        return scored
    seconds = dict.fromkeys(models, 0.0)
    Y, ids, parts = [], [], {name: [] for name in models}
    for chunk in documents.chunks():
        Y.append(chunk.Y)
        ids.append(chunk.ids)
        for name, model in models.items():
            started = time.perf_counter()
            parts[name].append(model.decision_function(chunk.X))
            seconds[name] += time.perf_counter() - started
    K = documents.n_categories
    if not Y:
        return Scored(0, Y=sp.csr_matrix((0, K), dtype=np.int8), ids=np.zeros(0, dtype=np.int64),
                      scores={name: np.zeros((0, K), dtype=np.float32) for name in models}, seconds=seconds)
    return Scored(sum(y.shape[0] for y in Y), Y=sp.vstack(Y, format="csr"), ids=np.concatenate(ids),
                  scores={name: np.vstack(part) for name, part in parts.items()}, seconds=seconds)


def fits_in_memory(n_documents: int | None, n_categories: int, n_models: int, limit_bytes: int) -> bool:
    """Whether n × K × models scores (``SCORE_BYTES`` each) fit ``limit_bytes`` and half the memory
    available now; unknown n does not."""
    if n_documents is None:
        return False
    need = n_documents * n_categories * max(n_models, 1) * SCORE_BYTES
    available = available_memory()
    return need <= limit_bytes and (available is None or need <= available // 2)


def score_spilled(models: dict, documents: Documents, backend, *, rules: dict, calibrations: dict, threshold: float,
                  top_k: int, exclude, prior, untrainable, spill_folder: str = "") -> Scored:
    """Every model's scores of streamed ``documents`` spilled to disk, one ``ScoreSpill`` per model
    (one per partition and model on Dask, merged after), with the decisions of ``rules`` and the
    probabilities of ``calibrations`` added to the running sums chunk by chunk."""
    if spill_folder and not Path(spill_folder).is_dir():
        raise MlnbError(f"engine.spill_folder = {spill_folder!r}: no such folder")
    # named by this process and machine, so that a later run removes it if this one is killed
    root = Path(tempfile.mkdtemp(prefix=spill_prefix(), dir=spill_folder or None))
    try:
        source = documents.source
        scoring = Scoring(Reading(source, documents.chunk_size), models, rules, threshold, top_k, exclude, prior,
                          untrainable, calibrations)
        started = time.perf_counter()
        partitions = source.partitions()
        # one spill per model, written in order, when the tasks run one after another here; else one per
        # partition and model, written at once by the workers, merged below
        groups = scoring_groups(source, [partitions] if backend.sequential else [[p] for p in partitions])
        backend.map(score_partitions, groups, scoring, str(root), description="scoring the test documents")
        spills = {}
        for name in models:
            parts = sorted(root.glob(f"part-*/{name}"))
            spills[name] = merge_spills(parts, root / name) if len(parts) > 1 else ScoreSpill.open(parts[0])
        seconds = (time.perf_counter() - started) / max(len(models), 1)
        n = next(iter(spills.values())).n_documents if spills else 0
        return Scored(n, spills=spills, seconds=dict.fromkeys(models, seconds), folder=root)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def in_memory(scored: Scored) -> Scored:
    """Spilled scores read back into memory (the spills are deleted)."""
    if scored.in_memory:
        return scored
    some = next(iter(scored.spills.values()))
    n, K = some.n_documents, some.n_categories
    columns = [some.positives(k) for k in range(K)]
    rows = np.concatenate(columns) if columns else np.zeros(0, dtype=np.int64)
    categories = np.repeat(np.arange(K), [c.size for c in columns])
    Y = sp.csr_matrix((np.ones(rows.size, dtype=np.int8), (rows, categories)), shape=(n, K))
    Y.sort_indices()
    scores = {}
    for name, spill in scored.spills.items():
        S = np.empty((n, K), dtype=spill.dtype)
        for k in range(K):
            S[:, k] = spill.scores_column(k)
        scores[name] = S
    scored.close()
    return Scored(n, Y=Y, scores=scores, seconds=scored.seconds)
