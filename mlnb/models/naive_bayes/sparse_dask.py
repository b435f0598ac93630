r"""Naive Bayes event counters on a Dask cluster: a distributed group-by of the (word, category) pairs,
partitioned by word.

With chunks c = 0 … C−1 (in the order of ``chunk_ids``) and word ranges [e_p, e_{p+1}), p = 0 … P−1:

    map      on a worker, per chunk c:  (X_c, Y_c) = make_chunk(c);  F_c, t_c, S_c, N_c, n_c = SparseCounts.from_chunk
             its pairs split by word: piece (c, p) = the pairs with e_p ≤ word < e_{p+1}, and t_c[e_p : e_{p+1}]
    reduce   on a worker, per partition p:  F_kw = (…((F_0,kw + F_1,kw) + F_2,kw) + …)  over the chunks that
             have the pair, in chunk order;  t_w likewise, over every chunk
    margins  S = (…(S_0 + S_1) + …) + S_{C−1},  N and n likewise, folded in chunk order on the workers

Those are the additions, in that order, of ``SparseCounts.merge`` of the chunks' counters (left to right
in list order), so the counters equal the in-memory ones bit for bit whatever the values. The partitions'
key ranges [e_p·K, e_{p+1}·K) follow one another, so the partitions' sorted pairs, one after the other,
are the sorted pairs of the whole corpus: gathered into one ``SparseCounts``, or, with ``folder``, each
partition written by its own worker as one Parquet part of a ``CountStore`` (the margins and the
``COMPLETE`` marker by the client, last), so no process ever holds every pair.
"""

from __future__ import annotations

import operator
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from mlnb.errors import MlnbError
from mlnb.models.naive_bayes.sparse_counts import SparseCounts, merge_pairs

#: partitions per worker thread, by default: more than one, so that a slow partition (a frequent word
#: range) does not leave the other workers idle at the end
PARTITIONS_PER_THREAD = 4


def count_on_dask(client, make_chunk: Callable, chunk_ids: Iterable[int], n_features: int, n_categories: int,
                  presence: bool = False, n_partitions: int | None = None, folder: str | os.PathLike | None = None):
    """The counters of every chunk ``make_chunk(i)`` (i in ``chunk_ids``, in that order), counted on the
    workers of the ``distributed.Client`` ``client`` and reduced there by word range (module docstring).

    make_chunk : picklable; make_chunk(i) -> (X (n × n_features) CSR, values ≥ 0; Y (n × n_categories) 0/1),
        run on a worker (e.g. a ``LongTailCorpus``'s bound ``chunk`` method, or a loader)
    presence : count [X > 0] (Bernoulli) rather than X
    n_partitions : word ranges, each reduced by one task (default: 4 per worker thread, at most n_features)
    folder : write the pairs as a ``CountStore`` there (one Parquet part per partition, written by the
        worker that reduced it) and return it; without it, return one ``SparseCounts``
    """
    chunk_ids = [_chunk_id(i) for i in chunk_ids]
    if not chunk_ids:
        raise MlnbError("count_on_dask: chunk_ids is empty; expected at least one chunk to count")
    for key, value in (("n_features", n_features), ("n_categories", n_categories)):
        if not (isinstance(value, (int, np.integer)) and value >= 1):
            raise MlnbError(f"count_on_dask: {key} must be a positive integer, got {value!r}")
    V, K = int(n_features), int(n_categories)
    if V * K >= 2**63:
        raise MlnbError(f"count_on_dask: n_features × n_categories = {V * K} does not fit an int64 key")
    if n_partitions is None:
        threads = sum(client.nthreads().values()) or 1
        n_partitions = PARTITIONS_PER_THREAD * threads
    if not (isinstance(n_partitions, (int, np.integer)) and n_partitions >= 1):
        raise MlnbError(f"count_on_dask: n_partitions must be a positive integer, got {n_partitions!r}")
    P = min(int(n_partitions), V)
    edges = np.array([p * V // P for p in range(P + 1)], dtype=np.int64)  # word ranges [e_p, e_{p+1})
    store, made = (None, False) if folder is None else _prepare_store(folder)
    submitted = []
    try:
        counted = submitted = [client.submit(_count_and_split, make_chunk, i, V, K, presence, edges, pure=False)
                   for i in chunk_ids]
        margins = client.submit(operator.itemgetter(1), counted[0], pure=False)
        for chunk in counted[1:]:  # folded in chunk order, one addition at a time, as merge adds them
            margins = client.submit(_add_margins, margins, client.submit(operator.itemgetter(1), chunk, pure=False),
                                    pure=False)
        reduced = []
        for p in range(P):
            pieces = [client.submit(_piece, chunk, p, pure=False) for chunk in counted]
            reduced.append(client.submit(_reduce_partition, pieces, p, int(edges[p + 1] - edges[p]), K,
                                         None if store is None else str(store), pure=False))
        submitted = reduced + [margins]
        del counted, pieces  # each chunk's result is released once every piece of it is taken
        S, N, n = margins.result()
        partitions = client.gather(reduced)
        del reduced
        t = np.concatenate([part[-1] for part in partitions])
        if store is None:
            key = np.concatenate([part[0] for part in partitions])
            value = np.concatenate([part[1] for part in partitions])
            return SparseCounts(key=key, value=value, t=t, S=S, N=N, n=n, presence=presence)
        from mlnb.models.naive_bayes.count_store import CountStore

        return CountStore.seal(store, t=t, S=S, N=N, n=n, presence=presence)
    except BaseException:
        client.cancel(submitted)  # a task already running still ends; its part is never sealed
        if store is not None:
            _discard_store(store, made)
        raise


def _chunk_id(i) -> int:
    if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
        raise MlnbError(f"count_on_dask: chunk ids must be integers, got {i!r}")
    return int(i)


def _count_and_split(make_chunk, i: int, V: int, K: int, presence: bool, edges: np.ndarray):
    """On a worker: chunk i's counters, its pairs and t cut at the word edges:
    ([(key, value, t's non-zero words in the range less its first word, their t) of each range], (S, N, n))."""
    X, Y = make_chunk(i)
    if X.shape[1] != V or Y.shape[1] != K:
        raise MlnbError(f"count_on_dask: chunk {i} has X of {X.shape[1]} features and Y of {Y.shape[1]} categories; "
                        f"expected {V} and {K} (n_features, n_categories)")
    counts = SparseCounts.from_chunk(X, Y, presence)
    cuts = np.searchsorted(counts.key, edges * K)  # keys are sorted: each word range is one run
    # t travels as its non-zero words only: a chunk of 10⁴ documents has ~10⁶ of a 10⁷-word vocabulary
    seen = np.flatnonzero(counts.t)
    seen_cuts = np.searchsorted(seen, edges)
    pieces = [(counts.key[cuts[p]:cuts[p + 1]].copy(), counts.value[cuts[p]:cuts[p + 1]].copy(),
               seen[seen_cuts[p]:seen_cuts[p + 1]] - edges[p], counts.t[seen[seen_cuts[p]:seen_cuts[p + 1]]])
              for p in range(edges.size - 1)]
    return pieces, (counts.S, counts.N, counts.n)


def _piece(counted, p: int):
    return counted[0][p]


def _add_margins(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


def _reduce_partition(pieces, p: int, width: int, K: int, store: str | None):
    """On a worker: partition p's pairs summed in chunk order and its t; with ``store``, the pairs written
    as its Parquet part, and (pairs, t) returned instead of (key, value, t)."""
    key, value = merge_pairs([piece[0] for piece in pieces], [piece[1] for piece in pieces])
    # t_w = (…(t_0,w + t_1,w) + …) in chunk order: adding a chunk's non-zero words only leaves every
    # other word's sum as it was (x + 0.0 = x), so this is the dense chunk-order sum, bit for bit
    t = np.zeros(width, dtype=np.float64)
    for piece in pieces:
        t[piece[2]] += piece[3]  # a chunk's words are unique: no index repeats
    del pieces
    if store is None:
        return key, value, t
    _write_part(Path(store), p, key, value, K)
    return int(key.size), t


# -- the CountStore's folder -----------------------------------------------------------------------

def _prepare_store(folder) -> tuple[Path, bool]:
    """``folder`` made ready for a store's parts: (the folder, whether this call made it)."""
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise MlnbError(f"count_on_dask: folder {folder}: expected an empty or new folder for the counts")
    made = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    return folder, made


def _write_part(folder: Path, p: int, key: np.ndarray, value: np.ndarray, K: int) -> None:
    """Part p of the store: the pairs' word, category, key, value in key order (under a temporary name, renamed)."""
    import duckdb
    import pandas as pd

    from mlnb.models.naive_bayes import count_store

    frame = pd.DataFrame({"word": key // K, "category": key % K, "key": key, "value": value})
    connection = duckdb.connect()
    try:
        count_store._write_part(connection, frame, count_store.part_path(folder, p))
    finally:
        connection.close()


def _discard_store(folder: Path, made: bool) -> None:
    """What a failed run wrote: the folder if this run made it, else its entries (there was nothing before)."""
    if made:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for entry in folder.iterdir():
        shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
