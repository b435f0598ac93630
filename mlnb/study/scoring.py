r"""Every model's scores of documents: held in memory, or spilled to disk when they do not fit.

Scores are one (n × K) float32 matrix per model, in the documents' order (their ids ascending
within each file, files in order: the same order in memory, streamed and on Dask). Where they
are held is decided here, once, and is the only thing that differs between sizes; what follows asks
the ``ScoreStore`` it gives (``mlnb.study.stores``):

    memory : ``ScoresInMemory``, the matrices themselves (and the labels Y, CSR). Everything
             downstream — decision rules, calibration, every metric, bootstrap and DeLong intervals,
             the scores file for ``mlnb compare`` — runs on them exactly as on any in-memory study.
    spill  : ``SpilledScores``, one ``ScoreSpill`` per model (``mlnb.metrics.streaming``),
             category-major on disk, with the running sums of every pointwise metric; the decisions
             and calibrated probabilities are applied chunk by chunk while scoring (pcut's when
             evaluated, from each category's column: ``evaluate_spilled``). What needs all scores at
             once is refused here or bounded there, and the report says which (``SPILL_LIMITS``).

``engine.scores = "auto"`` holds them in memory when their estimate fits
``engine.max_score_memory`` (and the memory available), else spills them (``score_evaluation``).
``engine.scores = "top_k"`` keeps each document's ``eval.ranking_k`` best categories instead, ranked a block of
rows at a time while scoring, in memory, streamed and on Dask (``TopKScores``, ``mlnb.study.top_k``): n × k.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb.backends.spill import spill_prefix
from mlnb.budget import available_memory
from mlnb.config import StudyConfig
from mlnb.errors import MlnbError
from mlnb.metrics.at_k_study import ranking_cutoffs
from mlnb.metrics.streaming import ScoreSpill
from mlnb.models.registry import get_kind
from mlnb.study.documents import Documents
from mlnb.study.stores import ScoresInMemory, ScoreStore, SpilledScores
from mlnb.study.tasks import (Ranking, Reading, Scoring, merge_spills, rank_partitions, score_partitions,
                              scoring_groups)
from mlnb.study.top_k import TopKScores, index_dtype, rank_rows, ranks_by_itself

#: bytes of scores per document, category and model while they are evaluated in memory: the float32
#: scores, a float64 copy in the rank metrics
SCORE_BYTES = 12


def score_in_memory(models: dict, documents: Documents) -> ScoresInMemory:
    """Every model's scores of ``documents``, held in memory (read chunk by chunk when streamed)."""
    if documents.in_memory:
        scored = ScoresInMemory(documents.n_documents, Y=documents.Y, ids=documents.ids)
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
        return ScoresInMemory(0, Y=sp.csr_matrix((0, K), dtype=np.int8), ids=np.zeros(0, dtype=np.int64),
                              scores={name: np.zeros((0, K), dtype=np.float32) for name in models}, seconds=seconds)
    return ScoresInMemory(sum(y.shape[0] for y in Y), Y=sp.vstack(Y, format="csr"), ids=np.concatenate(ids),
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
                  top_k: int, exclude, prior, untrainable, spill_folder: str = "") -> SpilledScores:
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
        return SpilledScores(n, spills, root, seconds=dict.fromkeys(models, seconds))
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def in_memory(store: ScoreStore) -> ScoresInMemory:
    """Spilled scores read back into memory (the spills are deleted); scores in memory as they are."""
    if isinstance(store, ScoresInMemory):
        return store
    Y = store.labels
    n, K = Y.shape
    scores = {}
    for name, spill in store.spills.items():
        S = np.empty((n, K), dtype=spill.dtype)
        for k in range(K):
            S[:, k] = spill.scores_column(k)
        scores[name] = S
    store.close()
    return ScoresInMemory(n, Y=Y, scores=scores, seconds=store.seconds)


def score_evaluation(config: StudyConfig, models: dict, evaluation: Documents, backend, rules: dict,
                     calibrations: dict, exclude, prior, untrainable) -> ScoreStore:
    """Every model's scores of the evaluation documents: in memory, or spilled when they do not fit
    (``engine.scores``, ``engine.max_score_memory``); what a spilled evaluation cannot do is refused
    in one line before it is attempted (multiclass; the bootstrap without ranking metrics at k); with
    engine.scores = "top_k", each document's k best categories instead, for any documents (``score_top_k``)."""
    if config.engine.scores == "top_k":
        return score_top_k(config, models, evaluation, backend, prior, untrainable)
    if evaluation.in_memory:
        return score_in_memory(models, evaluation)
    engine, ev = config.engine, config.eval
    limit = engine.max_score_memory * 2**20
    K = evaluation.n_categories
    if engine.scores == "memory" or (engine.scores == "auto" and fits_in_memory(
            evaluation.source.expected_documents, K, len(models), limit)):
        if backend.sequential:  # read here anyway: no spill to write and read back
            return score_in_memory(models, evaluation)
    # pcut ranks each category's documents at once: it decides from the spill's columns (``SpilledScores.evaluate``)
    chunkwise = {name: rule for name, rule in rules.items() if rule.rule != "pcut"}

    def refuse_spilled(n_documents) -> None:
        """What the spilled evaluation cannot do, refused by what it needs (all scores at once)."""
        why = (f"the test scores were spilled to disk ({'' if n_documents is None else f'{n_documents:,} '}documents "
               f"× {K} categories × {len(models)} models: more than engine.max_score_memory = "
               f"{engine.max_score_memory} MiB, or engine.scores = 'disk')")
        if config.task == "multiclass":
            raise MlnbError(f"task = 'multiclass' evaluates every class of a document at once; {why}")
        # the ranking metrics' intervals resample each document's k best categories (n × k), not its scores;
        # the summary metrics' intervals are what a spill leaves out (SPILL_LIMITS)
        if ev.bootstrap and not ranking_cutoffs(ev.ranking_k):
            raise MlnbError(f"eval.bootstrap = {ev.bootstrap} resamples every test document at once; {why}: raise "
                            "engine.max_score_memory, set eval.bootstrap = 0, or measure the ranking metrics "
                            "(eval.ranking_k > 0), whose intervals a spill keeps")

    if engine.scores == "disk":
        refuse_spilled(None)  # before any work
    store = score_spilled(models, evaluation, backend, rules=chunkwise, calibrations=calibrations,
                          threshold=ev.threshold, top_k=ev.top_k, exclude=exclude, prior=prior,
                          untrainable=untrainable, spill_folder=engine.spill_folder)
    if engine.scores == "memory" or (engine.scores == "auto" and fits_in_memory(store.n_documents, K, len(models),
                                                                                 limit)):
        return in_memory(store)
    try:
        refuse_spilled(store.n_documents)
    except MlnbError:
        store.close()
        raise
    return store


def score_top_k(config: StudyConfig, models: dict, documents: Documents, backend, prior,
                untrainable: np.ndarray) -> TopKScores:
    """Every model's ``eval.ranking_k`` best categories of each of ``documents``, ranked a block of rows at a
    time while scoring (``mlnb.study.top_k``): in memory here; streamed, one ``rank_partitions`` task per
    partition (here or on Dask), concatenated in partition order. ``prior``: the by-prior rule's replacement of
    the ``untrainable`` categories' scores, or None."""
    k, K = config.eval.ranking_k, documents.n_categories
    by_itself = frozenset(name for name, model in models.items()
                          if ranks_by_itself(model, get_kind(config.models[name].kind).ranks_top_k, untrainable,
                                             prior))
    if documents.in_memory:
        store = TopKScores(documents.n_documents, Y=documents.Y, k=k, ids=documents.ids)
        for name, model in models.items():
            started = time.perf_counter()
            store.categories[name], store.values[name] = rank_rows(model, documents.X, k, K,
                                                                   by_itself=name in by_itself, prior=prior,
                                                                   untrainable=untrainable)
            store.seconds[name] = time.perf_counter() - started
        return store
    source = documents.source
    ranking = Ranking(Reading(source, documents.chunk_size), models, k, by_itself, prior, untrainable)
    groups = scoring_groups(source, [[partition] for partition in source.partitions()])
    parts = backend.map(rank_partitions, groups, ranking, description="ranking the test documents")
    if not parts or not sum(part.ids.size for part in parts):
        raise MlnbError("no test documents: every document went to the training part")
    Y = sp.vstack([part.Y for part in parts], format="csr")
    store = TopKScores(Y.shape[0], Y=Y, k=k, ids=np.concatenate([part.ids for part in parts]))
    for name in models:
        store.categories[name] = np.concatenate([part.categories[name] for part in parts]).astype(
            index_dtype(K), copy=False)
        store.values[name] = np.concatenate([part.values[name] for part in parts])
        store.seconds[name] = sum(part.seconds[name] for part in parts)
    return store
