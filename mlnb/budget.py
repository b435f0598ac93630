"""Memory a study needs, estimated before anything is allocated, against what the machine has.

A key such as ``data.synthetic.n_documents = 10**9`` or ``eval.roc_points = 10**5`` is valid on its
own (the config schema only bounds it far above any real corpus), yet the run it asks for may not
fit: it would end in a MemoryError traceback, or swap for hours. ``check_budget`` adds up the large
arrays of a run from the config (and, once the data are loaded, from their real shape) and refuses
with one line naming the key that drives the largest part, the estimate and the memory available.

The large arrays, in bytes (n documents, nnz stored values, V features, K categories, M models):

    X            16·nnz        CSR float32 values + int32 indices, about twice (the split and the
                               feature transform copy it)
    W            16·V·K·M      per model whose kind holds dense weights (``ModelKind.weights``): float32 W,
                               and its optimiser's or counts' arrays beside it
    sparse W     28·P + 24·V   per model whose kind holds sparse weights: each (word, category) pair that occurs
                               in training holds a counter (int64 key, float64 value) and a weight's correction
                               (float64, int32 index); each word its total, default weight and row pointer.
                               The pairs P are estimated as min(V·K, nnz_train): every stored training value
                               with one label (more labels per document make more, words shared by the
                               documents of a category fewer); unknown before the data are read: 0 (so a
                               streamed study, whose pairs go out of core beyond the kind's max_count_memory
                               when counted by ``StreamTrainer.count_pairs``, is never refused for them)
    solver       s·V·K         per model whose kind's solver holds s bytes per weight more (``state_per_weight``:
                               L-BFGS's 2·lbfgs_memory float64 vectors, s = 16·lbfgs_memory)
    scores       12·n_test·K·M per model: float32 test scores kept for the report, float64 in the metrics;
                 with engine.scores = 'top_k' each document's k = eval.ranking_k best categories instead,
                 12·n_test·k·M (int64 index in the metrics, float32 score), and one scoring block of rows ×
                 K scores (``SCORING_BLOCK_BYTES`` at most), with no ROC grids and no curve tables
    ROC grids    16·K·roc·M    per model: TPR and lift (float64) on the roc_points grid
    curve tables 90·C·roc·M    per model: the rows of curves/roc_grid.csv and lift_grid.csv as pandas holds them
                               while they are written (``CURVE_ROW_BYTES``), for the C categories with a test
                               positive and negative (the others have no curve), estimated as min(K, n_test):
                               one per test document (more labels per document can make more, a long tail's
                               repeated head categories fewer); unknown n_test: 0
    processes    150 MB·n_jobs per model kind fitting categories in parallel (one interpreter each)
    Dask         n_workers·(230 MB + 16·V·K·M) for a LocalCluster on this machine (each worker holds the
                 dense models' W and optimiser state), plus one more copy of the shared state here

When dense W is what does not fit, the refusal names the keys that make it smaller (features.max_features;
for text, hashing with features.hash_features) and, for a model whose kind has a sparse equivalent
(``ModelKind.dense_equivalent``), that kind.

Sizes that the data set rather than the config (an svmlight label or index, the labels of a text
file, a shard manifest, an .npy header, a line's length) pass :func:`check_data_sizes`: the same
``MAX_*`` bounds as the config keys that size the same arrays, and the same estimate for one model,
before anything of those sizes is allocated (a model holding sparse weights: W is counted by its per-word
arrays, not V × K, since a study may choose such a model); a refusal is one line naming the file.

The estimate is deliberately a lower bound of what a run needs (but for the sparse pairs, an estimate): when
it already exceeds the available memory the run cannot succeed, and a run it admits may still be refused later
by the real shapes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mlnb.data.registry import get_source
from mlnb.data.shape import RCV1_CATEGORIES, RCV1_FEATURES, DataShape
from mlnb.errors import MlnbError

#: bytes of dense scores one step of a spilled scoring pass makes at most (12 per document, category and model:
#: the float32 scores and what the running sums derive from them): ``mlnb.study.tasks.score_partitions``
#: scores a chunk in blocks of rows, so that 100k categories never make chunk_size × K scores at once
SCORING_BLOCK_BYTES = 512 * 2**20
#: what one worker process of joblib costs before it holds any data (numpy, scipy, scikit-learn)
WORKER_BYTES = 150 * 2**20
#: what one Dask worker process of a LocalCluster holds after its imports (numpy, scipy, scikit-learn,
#: numba, distributed; its RSS measured by hand, no script: experiments/README.md); its nanny comes on top
DASK_WORKER_BYTES = 230 * 2**20
#: bytes a model with sparse weights holds per (word, category) pair that occurs in training: its counter (int64
#: key, float64 value) and its weight's correction (float64 value, int32 index)
SPARSE_PAIR_BYTES = 28
#: ... and per word: its total over the training documents (float64), its default weight and its row pointer
SPARSE_WORD_BYTES = 24


@dataclass(frozen=True)
class Need:
    """One large array (or group of arrays) of a run: its size and the key that sets it."""

    what: str
    bytes: float
    key: str  # 'data.synthetic.n_documents = 1000000000'
    remedy: str = ""  # more keys that make it smaller, said after the key's own ('make W smaller: ...')


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation without swapping: Linux's MemAvailable, else
    the free physical pages (POSIX), else None (then nothing is refused)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def human(n_bytes: float) -> str:
    """1234567890 -> '1.1 GiB'."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n_bytes < 1024 or unit == "PiB":
            return f"{n_bytes:.0f} {unit}" if unit == "B" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:.1f} PiB"  # unreachable


def data_shape(config) -> tuple[DataShape, dict]:
    """The data's shape as far as the config tells before reading anything, and for each of
    n_documents / n_features / n_categories / nnz the key that set it (for the message): what the source
    declares (``SourceKind.shape``), its features at most features.max_features."""
    data = config.data
    source = get_source(data.source)
    shape, keys = source.shape(getattr(data, source.name), data, config.features)
    if config.features.max_features and shape.n_features:
        shape = shape._replace(n_features=min(shape.n_features, config.features.max_features))
    return shape, keys


def estimate(config, shape: DataShape, keys: dict | None = None) -> list[Need]:
    """The large arrays of a run of ``config`` on data of ``shape`` (see the module docstring)."""
    keys = keys or {}
    models = config.study_models()
    dense = [spec for spec in models if spec.weights()[0] == "dense"]
    ranked = _ranked_only(config)
    needs = _array_needs(shape, len(models), None if ranked else config.eval.roc_points, keys, _held_scores(config),
                         ranked=ranked)
    needs += _dense_weights(shape, dense, keys, _fewer_weights(config, dense))
    needs += _sparse_weights([spec for spec in models if spec not in dense], shape, keys)
    needs += _solver_needs(models, shape)
    for spec in models:
        processes, key = spec.processes()
        if processes > 1:
            needs.append(Need(f"{processes} worker processes of {spec.name}", float(WORKER_BYTES * processes),
                              f"models.{spec.name}.{key}"))
    engine = getattr(config, "engine", None)
    if engine is not None and engine.kind == "dask" and config.data.streaming:
        state = 16.0 * (shape.n_features or 0) * (shape.n_categories or 1) * len(dense)  # W and its optimiser's
        local = 0 if engine.address else engine.n_workers  # a cluster elsewhere holds its copies there
        needs.append(Need(f"{local} Dask worker processes and the shared model state",
                          float(local * (DASK_WORKER_BYTES + state) + state), f"engine.n_workers = {engine.n_workers}"))
    return needs


def _ranked_only(config) -> int:
    """k = eval.ranking_k where the study keeps only each test document's k best categories (engine.scores =
    'top_k', multilabel), else 0."""
    engine = getattr(config, "engine", None)
    if engine is None or engine.scores != "top_k" or config.task == "multiclass":
        return 0
    return int(config.eval.ranking_k)


def _held_scores(config) -> float | None:
    """The most bytes of test scores a run of ``config`` holds at once: None (all of them) in memory or with
    engine.scores = 'memory'; a streamed multilabel study that may spill them holds at most
    engine.max_score_memory ('auto') and one scoring step's block (``SCORING_BLOCK_BYTES``)."""
    engine = getattr(config, "engine", None)
    if engine is None or not config.data.streaming or engine.scores == "memory" or config.task == "multiclass":
        return None
    block = float(SCORING_BLOCK_BYTES)
    return max(block, engine.max_score_memory * 2**20) if engine.scores == "auto" else block


def _fewer_weights(config, dense) -> str:
    """What makes dense W smaller besides the data's own key, and the sparse kinds of the models that have one:
    'make W smaller: features.max_features, ... or kind = 'sparse_naive_bayes' in models.nb (sparse weights)'."""
    ways = [] if config.data.streaming else ["features.max_features"]  # streamed: no pass to choose them
    ways.append("features.vectorizer = 'hashing' with fewer features.hash_features (text sources)")
    for spec in dense:
        _, sparse = spec.weights(config.task)
        if sparse:
            ways.append(f"kind = {' or '.join(map(repr, sparse))} in models.{spec.name} (sparse weights)")
    listed = ", ".join(ways[:-1]) + f"{',' * (len(ways) > 2)} or {ways[-1]}" if len(ways) > 1 else ways[0]
    return f"make W smaller: {listed}"


def _dense_weights(shape: DataShape, dense, keys: dict, remedy: str = "") -> list[Need]:
    """W of the models ``dense`` whose kinds hold V × K weights (K unknown: 1, a lower bound)."""
    V, K = shape.n_features, shape.n_categories
    if not V or not dense:
        return []
    larger = "n_features" if not K or (V / RCV1_FEATURES) >= (K / RCV1_CATEGORIES) else "n_categories"
    names = ", ".join(spec.name for spec in dense)
    return [Need(f"W ({V} features × {K or 1} categories × {len(dense)} models: {names})",
                 16.0 * V * (K or 1) * len(dense), keys.get(larger) or f"the data's {larger.replace('n_', '')}",
                 remedy)]


def _sparse_weights(sparse, shape: DataShape, keys: dict) -> list[Need]:
    """The counters and weights of the models ``sparse`` whose kinds hold them by the (word, category) pairs
    that occur: SPARSE_PAIR_BYTES·P + SPARSE_WORD_BYTES·V each, P = min(V·K, nnz_train) (module docstring)."""
    n_train, n_test, V, K, nnz = shape
    if not V:
        return []
    nnz_train = nnz * n_train / (n_train + n_test) if nnz and n_train and n_test is not None else nnz or 0
    pairs = min(float(V) * (K or 1), float(nnz_train))
    if SPARSE_PAIR_BYTES * pairs > SPARSE_WORD_BYTES * V:  # the pairs drive it: the data's size
        key = keys.get("nnz") or "the data's size"
    else:
        key = keys.get("n_features") or "the data's features"
    return [Need(f"{spec.name}'s sparse counters and weights (~{pairs:,.0f} pairs, {V} features)",
                 SPARSE_PAIR_BYTES * pairs + SPARSE_WORD_BYTES * V, key) for spec in sparse]


def _solver_needs(models, shape: DataShape) -> list[Need]:
    """What a model's solver holds per weight besides W (its kind's ``state_per_weight``, e.g. L-BFGS's
    16·m bytes), times V·K (K unknown: 1, a lower bound)."""
    needs = []
    for spec in models:
        per_weight, key = spec.solver_state()
        if per_weight and shape.n_features:
            K = shape.n_categories or 1
            needs.append(Need(f"{spec.name}'s solver state ({key} × {shape.n_features} features × {K} categories)",
                              per_weight * shape.n_features * K, f"models.{spec.name}.{key}"))
    return needs


#: bytes per row of the curve tables (``mlnb.report.tables.curve_frames``: one row per model, category and grid
#: point in each of roc_grid.csv and lift_grid.csv) at the peak of writing them: 56 held (the two tables share
#: their model, category and grid columns; 4 float64 curve columns), and a copy of one table's columns while
#: it is written (experiments/README.md, "A study of 100k categories")
CURVE_ROW_BYTES = 90


def _array_needs(shape: DataShape, M: int, roc_points: int | None, keys: dict,
                 held_scores: float | None = None, ranked: int = 0) -> list[Need]:
    """The data-driven arrays of the module docstring for ``M`` models (``roc_points`` None: no grid), but
    their weights (``_dense_weights``, ``_sparse_weights``); ``held_scores``: the most bytes of test scores
    held at once (a streamed study that spills them: ``_held_scores``), None: all of them; ``ranked`` = k > 0:
    only each test document's k best categories are kept (engine.scores = 'top_k')."""
    n_train, n_test, V, K, nnz = shape
    needs = []

    def key(name: str, fallback: str) -> str:
        return keys.get(name) or fallback

    if nnz:
        needs.append(Need(f"X ({nnz} stored values)", 16.0 * nnz, key("nnz", "the data's size")))
    if ranked and K:  # n × k kept per model, and one block of rows × K scores while ranking them
        kept = 12.0 * (n_test or 0) * ranked * M
        block = min(float(SCORING_BLOCK_BYTES), 12.0 * (n_test or SCORING_BLOCK_BYTES) * K)
        needs.append(Need(f"each test document's {ranked} best categories ({n_test or 'unknown'} documents × "
                          f"{ranked} × {M} models) and a scoring block of {K} categories", kept + block,
                          f"eval.ranking_k = {ranked}"))
    elif n_test and K:
        all_scores = 12.0 * n_test * K * M
        if held_scores is None or held_scores >= all_scores:
            needs.append(Need(f"test scores ({n_test} documents × {K} categories × {M} models)", all_scores,
                              key("n_documents", "the number of test documents")))
        else:  # spilled to disk: what one scoring step and the scores held in memory take
            needs.append(Need(f"test scores held while scoring ({n_test} documents × {K} categories × {M} models "
                              "spilled to disk)", held_scores, "engine.max_score_memory"))
    if K and roc_points:
        needs.append(Need(f"ROC grids ({K} categories × {roc_points} points × {M} models)",
                          16.0 * K * roc_points * M, f"eval.roc_points = {roc_points}"))
    if K and roc_points and n_test:  # the categories with a curve, estimated as min(K, n_test) (module docstring)
        curved = min(K, n_test)
        needs.append(Need(f"curve tables (~{curved} categories with a test positive × {roc_points} points × "
                          f"{M} models)", float(CURVE_ROW_BYTES) * curved * roc_points * M,
                          f"eval.roc_points = {roc_points}"))
    return needs


def check_budget(config, shape: DataShape | None = None, available: int | None = None) -> None:
    """Refuse, in one line, a run whose estimated memory exceeds the memory available.

    ``shape`` = None: the shape the config states (before any data is read); pass the loaded data's
    shape for the exact check. ``available`` = None: ``available_memory()``; when that is unknown
    nothing is refused.
    """
    keys = {}
    if shape is None:
        shape, keys = data_shape(config)
    available = available_memory() if available is None else available
    if available is None:
        return
    needs = estimate(config, shape, keys)
    total = sum(need.bytes for need in needs)
    if total <= available:
        return
    largest = max(needs, key=lambda need: need.bytes)
    parts = ", ".join(f"{need.what} {human(need.bytes)}" for need in sorted(needs, key=lambda need: -need.bytes)[:3])
    name, _, value = largest.key.partition(" = ")
    ways = ([f"lower {name}"] if value.split(" ")[0].isdigit() else []) + [largest.remedy] * bool(largest.remedy)
    remedy = "; " + ", or ".join(ways) if ways else ""
    raise MlnbError(f"{largest.key}: the run needs at least {human(total)} of memory ({parts}), more than the "
                    f"{human(available)} available{remedy}")


# -- sizes that the data set --------------------------------------------------------------------------
#: bytes a category costs besides W and the scores: its name (a str), its column's bookkeeping
CATEGORY_BYTES = 100


def check_data_sizes(where: str, *, n_documents: int | None = None, n_features: int | None = None,
                     n_categories: int | None = None, nnz: int | None = None, extra_bytes: float = 0.0,
                     what: str = "", available: int | None = None) -> None:
    """Refuse, in one line naming ``where`` (the file, manifest or header that set them), sizes that a
    data file states before anything of those sizes is allocated: beyond the bounds of the config keys
    that size the same arrays (``MAX_*`` of :mod:`mlnb.data.registry`), or needing more memory than is
    available by the estimate of :func:`check_budget` (for one model: a lower bound of any study of the
    data), plus ``extra_bytes`` that the reader itself would allocate (``what`` says for what).

    The one guard of every size set by data: svmlight labels and indices (via the scanned dimensions),
    shard manifests and their .npy headers, over-long lines.
    """
    from mlnb.data.limits import MAX_CATEGORIES, MAX_DOCUMENTS, MAX_FEATURES

    for value, bound, name in ((n_documents, MAX_DOCUMENTS, "documents"), (n_features, MAX_FEATURES, "features"),
                               (n_categories, MAX_CATEGORIES, "categories")):
        if value is not None and not 0 <= value <= bound:
            raise MlnbError(f"{where}: {value:,} {name}; expected at most {bound:,} (the bound of the config keys "
                            f"that set the number of {name})")
    if nnz is not None and not 0 <= nnz <= MAX_DOCUMENTS * 10**4:
        raise MlnbError(f"{where}: {nnz:,} stored values; expected at most {MAX_DOCUMENTS * 10**4:,}")
    needs = _array_needs(DataShape(None, None, n_features, n_categories, nnz), 1, None, {})
    if n_features:  # the least weights a study of the data may hold: a model's sparse weights, with no pair yet
        needs.append(Need(f"a model's weights (sparse: {n_features} features)", float(SPARSE_WORD_BYTES) * n_features,
                          ""))
    if n_categories:
        needs.append(Need(f"{n_categories} category names", float(CATEGORY_BYTES) * n_categories, ""))
    if extra_bytes:
        needs.append(Need(what or "reading", float(extra_bytes), ""))
    available = available_memory() if available is None else available
    total = sum(need.bytes for need in needs)
    if available is None or total <= available:
        return
    parts = ", ".join(f"{need.what} {human(need.bytes)}" for need in sorted(needs, key=lambda need: -need.bytes)[:3])
    raise MlnbError(f"{where}: the sizes it sets need at least {human(total)} of memory ({parts}), more than the "
                    f"{human(available)} available; expected a smaller corpus (or a corrupt file?)")
