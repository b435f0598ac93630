r"""The work of a streaming study, one partition at a time: the same functions on every backend.

A streaming study makes three kinds of pass over the data, each a map over partitions and a
reduction. The executors of ``mlnb.backends`` run these functions and reduce what they return
(``LocalBackend`` the partitions here in order, ``DaskBackend`` on its workers) without knowing
any model; the functions are module-level, so that Dask can pickle them:

1. **counting** (training documents, once): per partition the label counts N (K,) and n, and
   for every model that needs them the Naive Bayes counts (``NBCounts``: Yᵀ·X, 1ᵀ·X, ...). All
   are sums, so the reduction is ``+`` and the result is the in-memory fit's counts exactly:

       N = Σ_p N_p,   n = Σ_p n_p,   counts = Σ_p counts_p

   Naive Bayes is finished from them (log-odds once); NB-LR takes its ratios R from them.
2. **logistic regression** (training documents, ``npasses`` times). On one process the engine
   steps through the chunks of every partition in order, exactly as it would through the
   documents in memory (up to the shuffle, which stays within ``data.shuffle_buffer`` chunks).
   On Dask each worker runs a pass over its partition from the same start state θ and the
   states are averaged, weighted by documents (parameter mixing, Zinkevich et al. 2010 /
   McDonald et al. 2010):

       θ ← Σ_p n_p·θ_p / Σ_p n_p            θ = (W, b, AdaGrad sums, step count)

3. **scoring** (test documents, once): every model scores every chunk; the scores go to a spill
   file per partition and to running sums and histograms (``mlnb.metrics.streaming``), from
   which the evaluation is exact per category. With engine.scores = "top_k" (4. **ranking**) each
   partition's task returns its documents' labels and every model's k best categories instead
   (``rank_partitions``), concatenated in partition order: n × k, never a spill.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone

from mlnb.backends.reduce import tree_reduce
from mlnb.budget import SCORING_BLOCK_BYTES
from mlnb.data.stream import Chunk, ChunkSource, Partition
from mlnb.errors import MlnbError
from mlnb.models.naive_bayes import NaiveBayes
from mlnb.models.naive_bayes.counts import NBCounts
from mlnb.models.naive_bayes.sparse_counts import SparseCounts
from mlnb.study.top_k import index_dtype, rank_rows


@dataclass(frozen=True)
class Reading:
    """How a task reads its partition: the source and the chunk size (small and picklable)."""

    source: ChunkSource
    chunk_size: int

    def chunks(self, partition: Partition):
        return self.source.read(partition, self.chunk_size)


# -- 1. counting ----------------------------------------------------------------------------------
@dataclass(eq=False)
class TrainingCounts:
    """What the counting pass gives: label counts and the NB counts of the models that need them."""

    positives: np.ndarray  # (K,) float64, N_k
    n: int  # training documents
    nnz: int  # non-zero feature values in them
    nb: dict[str, NBCounts] = field(default_factory=dict)  # counter name -> counts (absent: no documents)

    def __add__(self, other: TrainingCounts) -> TrainingCounts:
        nb = dict(self.nb)
        for name, counts in other.nb.items():
            nb[name] = nb[name] + counts if name in nb else counts
        return TrainingCounts(self.positives + other.positives, self.n + other.n, self.nnz + other.nnz, nb)


@dataclass(frozen=True)
class Counter:
    """A Naive Bayes estimator (unfitted) whose counts a model needs, and the features it counts."""

    estimator: NaiveBayes
    binarize_input: bool = False  # NB-LR: count 1{x > 0} rather than x

    def features(self, X):
        return presence(X) if self.binarize_input else X


def presence(X):
    """x̂ = 1{x > 0}, as CSR float32 (a copy: X is the chunk's)."""
    X = X.copy()
    X.data = (X.data > 0).astype(np.float32)
    return X


def count_partition(partition: Partition, reading: Reading, counters: dict[str, Counter]) -> TrainingCounts:
    """Label counts and every counter's NB counts over the partition's training documents."""
    K = reading.source.n_categories
    fitting = {name: clone(counter.estimator) for name, counter in counters.items()}
    positives, n, nnz = np.zeros(K, dtype=np.float64), 0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # untrainable categories are reported by the study, once
        for chunk in reading.chunks(partition):
            positives += np.asarray(chunk.Y.sum(axis=0), dtype=np.float64).ravel()
            n += chunk.n_documents
            nnz += chunk.X.nnz
            for name, estimator in fitting.items():
                try:
                    estimator.partial_fit(counters[name].features(chunk.X), chunk.Y)
                except MlnbError as error:
                    raise MlnbError(f"{chunk.where}: {error}") from None
    return TrainingCounts(positives, n, nnz, {name: estimator.counts_ for name, estimator in fitting.items()
                                         if "counts_" in estimator.__dict__})


def finished_naive_bayes(estimator: NaiveBayes, counts: NBCounts | None, n_features: int) -> NaiveBayes:
    """``estimator`` fitted from ``counts`` summed over every chunk: what ``fit`` on all the
    documents at once gives (the log-odds are computed from the counts, lazily, once)."""
    if counts is None:
        raise MlnbError("no training documents: every document went to the test part")
    estimator = clone(estimator)
    estimator.counts_, estimator.n_features_in_ = counts, n_features
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.weights_  # noqa: B018  (builds W and b now, so fit time includes them)
    return estimator


def sum_partition(partition: Partition, reading: Reading, binarize_input: bool, function, args: tuple):
    """Σ over the partition's chunks of ``function(X, Y, *args)``, pairwise in chunk order (None: no chunk)."""
    parts = (function(presence(chunk.X) if binarize_input else chunk.X, chunk.Y, *args)
             for chunk in reading.chunks(partition))
    # lazily: at most log2(chunks) partial sums held; None first, as a partition a split left empty adds nothing
    return tree_reduce(chain([None], parts), add_or_none)


def chunk_pairs(X, Y, presence: bool) -> SparseCounts:
    """One chunk's Naive Bayes counters of the (word, category) pairs that occur (module level: picklable for
    Dask, a ``sum_partition`` function)."""
    return SparseCounts.from_chunk(X, Y, presence=presence)


@dataclass(frozen=True)
class PartitionMatrices:
    """The training documents of partition ``i`` as one (X, Y) (CSR float32 m × V, CSR int8 m × K), read on a
    worker: the ``make_chunk`` of ``sparse_dask.count_on_dask``, one chunk a partition (picklable)."""

    reading: Reading
    partitions: tuple

    def __call__(self, i: int):
        chunks = list(self.reading.chunks(self.partitions[i]))
        source = self.reading.source
        if not chunks:  # a partition a split left empty counts nothing
            return (sp.csr_matrix((0, source.n_features), dtype=np.float32),
                    sp.csr_matrix((0, source.n_categories), dtype=np.int8))
        return (sp.vstack([chunk.X for chunk in chunks], format="csr"),
                sp.vstack([chunk.Y for chunk in chunks], format="csr"))


def add_or_none(a, b):
    """a + b, where None (nothing to add) is the identity."""
    return b if a is None else a if b is None else a + b


# -- 2. logistic regression -----------------------------------------------------------------------
@dataclass(frozen=True)
class LogisticJob:
    """What a logistic-regression pass over a partition needs (besides the start state)."""

    reading: Reading
    estimator: object  # an unfitted mlnb LogisticRegression with the model's options
    binarize_input: bool  # NB-LR trains on x̂ = 1{x > 0}
    scale: np.ndarray | None  # NB-LR's R (V × K); None for plain LR
    buffer_chunks: int

    def chunks(self, partitions):
        for partition in partitions:
            for chunk in self.reading.chunks(partition):
                yield chunk if not self.binarize_input else Chunk(presence(chunk.X), chunk.Y, chunk.ids,
                                                                  chunk.where, chunk.first_line, chunk.lines)


def fit_logistic_here(job: LogisticJob, partitions, counts: TrainingCounts, coef_init=None, intercept_init=None):
    """The engine over every partition's chunks in order, ``npasses`` times: the single-machine
    streaming fit (``LogisticRegression.fit_stream``)."""
    engine = clone(job.estimator)
    source = job.reading.source
    engine.fit_stream(lambda: job.chunks(partitions), source.n_features, source.n_categories,
                      category_counts=(counts.positives, counts.n), coef_init=coef_init,
                      intercept_init=intercept_init, scale=job.scale, buffer_chunks=job.buffer_chunks)
    return engine


@dataclass(eq=False)
class WeightedState:
    """A trainer's state and the documents it saw in the pass (the weight of its average)."""

    state: dict
    documents: int


def worker_groups(partitions: list, n_workers: int) -> list[tuple[int, list]]:
    """The partitions in ``n_workers`` runs of consecutive partitions (as even as whole partitions
    allow), numbered: what each trainer of a parameter-mixing pass reads."""
    bounds = np.linspace(0, len(partitions), min(n_workers, len(partitions)) + 1).round().astype(int)
    return [(i, partitions[a:b]) for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]


def fit_logistic_on_worker(partitions: list, job: LogisticJob, counts: TrainingCounts, coef_init=None,
                           intercept_init=None):
    """``fit_logistic_here`` as a task (on a Dask worker): the one-machine minibatch solver over every partition."""
    return fit_logistic_here(job, partitions, counts, coef_init, intercept_init)


def lr_pass_partition(group: tuple, job: LogisticJob, start: dict, pass_number: int) -> WeightedState:
    """One pass of the engine over a group (number, partitions[, round]) of training partitions, from
    ``start`` (a round of iterative parameter mixing: a piece of a pass)."""
    number, partitions, *rest = group
    engine = clone(job.estimator)
    # each group shuffles with its own seeded generator (the same in every run)
    engine.set_params(random_state=[int(engine.random_state), pass_number, number, *rest])
    engine.set_state({**start, "rng": None})
    seen = [0]

    def chunks():
        for chunk in job.chunks(partitions):
            seen[0] += chunk.n_documents
            yield chunk

    source = job.reading.source
    engine.fit_stream(chunks, source.n_features, source.n_categories, scale=job.scale,
                      buffer_chunks=job.buffer_chunks, npasses=1, resume=True)
    return WeightedState(engine.get_state(), seen[0])


def mix(a: WeightedState, b: WeightedState) -> WeightedState:
    """The document-weighted mean of two states (a partition without documents has no say)."""
    from mlnb.models.logistic.minibatch import average_states

    if not b.documents:
        return a
    if not a.documents:
        return b
    return WeightedState(average_states([a.state, b.state], [a.documents, b.documents]), a.documents + b.documents)


# -- 3. scoring -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scoring:
    """How every model's test scores become spills: the settings the running sums need, and each
    model's decision rule and calibration (fitted before scoring, from held-out scores)."""

    reading: Reading
    models: dict  # name -> fitted estimator
    rules: dict  # name -> fitted decision rule that decides chunk by chunk (absent: none is applied)
    threshold: float
    top_k: int
    exclude: np.ndarray | None  # categories left out of every average (eval.untrainable = 'exclude')
    prior: np.ndarray | None  # (K,) prior log-odds that replace untrainable categories' scores ('prior')
    untrainable: np.ndarray  # (indices)
    calibrations: dict = field(default_factory=dict)  # name -> fitted calibration (absent: none)


#: room a spill reserves beyond the documents expected of its partitions (a split's share is an estimate)
SPILL_RESERVE = 0.05


def scoring_groups(source, groups: list[list]) -> list[tuple[int, list, int]]:
    """(number, partitions, documents expected of them) of each group of ``source``'s partitions, for
    ``score_partitions``: the source's expected count (a split's share estimated) shared among the
    groups by their partitions' documents; 0 where not known."""
    total = source.expected_documents
    sizes = [[p.n_documents for p in group] for group in groups]
    known = bool(total) and all(size is not None for group in sizes for size in group)
    every = sum(sum(group) for group in sizes) if known else 0
    return [(number, group, int(round(total * sum(size) / every)) if every else 0)
            for number, (group, size) in enumerate(zip(groups, sizes))]


def score_partitions(group: tuple[int, list, int], scoring: Scoring, root: str) -> dict[str, str]:
    """Every model's scores of a group (number, partitions, documents expected) of test partitions, spilled to
    ``root``/part-<number>/<model>: one ``ScoreSpill`` per model (scores on disk, running sums of
    every pointwise metric). On Dask ``root`` must be a folder the workers and the client share."""
    from mlnb.metrics.streaming import ScoreSpill

    number, partitions, expected = group  # (``scoring_groups``)
    source = scoring.reading.source
    # room for them reserved up front (holes in the file until written), so that the spill grows (moves
    # every category's scores written so far) only where the estimate falls short
    reserve = int(expected * (1 + SPILL_RESERVE)) + scoring.reading.chunk_size if expected else 0
    spills = {name: ScoreSpill(f"{root}/part-{number:05d}/{name}", source.n_categories, threshold=scoring.threshold,
                               top_k=scoring.top_k, exclude=scoring.exclude, expected_documents=reserve)
              for name in scoring.models}
    try:
        for partition in partitions:
            for chunk in scoring.reading.chunks(partition):
                for X, Y in scoring_blocks(chunk, source.n_categories):
                    for name, model in scoring.models.items():
                        scores = model.decision_function(X)  # (m, K); presence models binarise inside
                        if scoring.prior is not None and scoring.untrainable.size:
                            scores[:, scoring.untrainable] = scoring.prior[scoring.untrainable]
                        calibration = scoring.calibrations.get(name)
                        probabilities = None if calibration is None else calibration.transform(scores)
                        rule = scoring.rules.get(name)  # None: a rule that cannot decide chunk by chunk (pcut)
                        decisions = None if rule is None else rule.decide(rule.reads(scores, probabilities))
                        spills[name].append(Y, scores, decisions=decisions, probability_scores=probabilities)
                        del scores, probabilities, decisions
        for spill in spills.values():
            spill.close()
    except BaseException:
        for spill in spills.values():
            spill.__exit__(RuntimeError, None, None)  # release the files, leave them unusable
        raise
    return {name: str(spill.folder) for name, spill in spills.items()}


def scoring_blocks(chunk: Chunk, n_categories: int):
    """(X, Y) of the chunk's rows in blocks of at most max(1, SCORING_BLOCK_BYTES // (12 · K)) documents: what
    one scoring step turns into dense m × K scores (the whole chunk when it fits)."""
    rows = max(1, SCORING_BLOCK_BYTES // (12 * max(n_categories, 1)))
    n = chunk.n_documents
    if n <= rows:
        yield chunk.X, chunk.Y
        return
    for start in range(0, n, rows):
        yield chunk.X[start:start + rows], chunk.Y[start:start + rows]


def merge_spills(parts, folder):
    """One ``ScoreSpill`` of the test documents of several (closed) spills, in their order (what
    each task of a Dask scoring pass wrote becomes the one spill ``evaluate_spilled`` reads)."""
    from mlnb.metrics.streaming import ScoreSpill

    parts = [part for part in (ScoreSpill.open(path) for path in parts) if part.n_documents]
    if not parts:
        raise MlnbError("no test documents: every document went to the training part")
    return ScoreSpill.concatenate(parts, folder)


# -- 4. ranking (engine.scores = "top_k") ---------------------------------------------------------
@dataclass(frozen=True)
class Ranking:
    """How every model's test scores become each document's k best categories (``mlnb.study.top_k``): the
    models, k, which of them rank themselves (``ranks_by_itself``) and the by-prior rule's replacement."""

    reading: Reading
    models: dict  # name -> fitted estimator
    k: int  # eval.ranking_k
    by_itself: frozenset  # names of the models that rank themselves (``ModelKind.ranks_top_k``, checked)
    prior: np.ndarray | None  # (K,) prior log-odds that replace untrainable categories' scores ('prior', 'keep')
    untrainable: np.ndarray  # (indices)


@dataclass(eq=False)
class PartitionRanking:
    """What ``rank_partitions`` gives for a group of partitions: their documents' labels and ids, and every
    model's k best categories and their scores (n_group × k each), in the documents' order."""

    Y: object  # CSR int8 (m, K)
    ids: np.ndarray  # (m,) int64
    categories: dict  # name -> (m, k)
    values: dict  # name -> (m, k) float32
    seconds: dict  # name -> seconds of scoring and ranking


def rank_partitions(group: tuple[int, list, int], ranking: Ranking) -> PartitionRanking:
    """Every model's k best categories of each test document of a group (number, partitions, documents
    expected) of partitions, chunk by chunk, each chunk a block of rows at a time (``rank_rows``): what a
    scoring task returns instead of spill files with engine.scores = "top_k" (n × k, never n × K)."""
    _, partitions, _ = group
    K = ranking.reading.source.n_categories
    Y, ids = [], []
    categories, values = {name: [] for name in ranking.models}, {name: [] for name in ranking.models}
    seconds = dict.fromkeys(ranking.models, 0.0)
    for partition in partitions:
        for chunk in ranking.reading.chunks(partition):
            Y.append(chunk.Y)
            ids.append(chunk.ids)
            for name, model in ranking.models.items():
                started = time.perf_counter()
                best, scores = rank_rows(model, chunk.X, ranking.k, K, by_itself=name in ranking.by_itself,
                                         prior=ranking.prior, untrainable=ranking.untrainable)
                seconds[name] += time.perf_counter() - started
                categories[name].append(best)
                values[name].append(scores)
    if not Y:  # a partition a split left empty
        return PartitionRanking(sp.csr_matrix((0, K), dtype=np.int8), np.zeros(0, dtype=np.int64),
                                {name: np.zeros((0, ranking.k), dtype=index_dtype(K)) for name in ranking.models},
                                {name: np.zeros((0, ranking.k), dtype=np.float32) for name in ranking.models},
                                seconds)
    return PartitionRanking(sp.vstack(Y, format="csr"), np.concatenate(ids),
                            {name: np.concatenate(parts) for name, parts in categories.items()},
                            {name: np.concatenate(parts) for name, parts in values.items()}, seconds)
