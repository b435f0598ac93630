r"""Naive Bayes event counters aggregated under a memory budget: in memory while they fit, out of core by
DuckDB beyond it, kept on disk as Parquet.

A store is a folder:

    pairs-00000.parquet, pairs-00001.parquet, ...   columns word BIGINT, category BIGINT (or INTEGER),
                                                    key BIGINT (= word · K + category), value DOUBLE;
                                                    sorted by key, each part a contiguous key range
                                                    after the previous one
    margins.npz                                     t (V,), S (K,), N (K,), n, presence, K, V
                                                    (np.savez; read with allow_pickle=False)
    COMPLETE                                        written last: a folder without it is the remains
                                                    of a killed or failed run and is refused

API (what the estimator, the Dask group-by and the benchmarks code against):

    CountAggregator(n_features, n_categories, presence=False, max_count_memory=1024, folder=None,
                    threads=None)
        .add(chunk: SparseCounts)       chunks in corpus order
        .finish() -> SparseCounts | CountStore
    count_chunks(chunks, n_features, n_categories, presence=False, max_count_memory=1024, folder=None)
    CountStore.open(folder)             a finished store, or MlnbError in one line
    CountStore.write(folder, counts, n_parts=1)       SparseCounts to a store
    CountStore.seal(folder, t, S, N, n, presence)     parts written by someone else (the Dask group-by:
                                                      ``part_path(folder, i)``) made a store
    store.t, .S, .N, .n, .presence, .shape, .n_pairs, .folder, .parts
    store.pairs_of(words) -> (key, value)   store.iter_pairs(batch_pairs)   store.load() -> SparseCounts
    store.column_sums() -> (V,)

The aggregator keeps the chunks' pairs in memory, merging the pending ones (in chunk order, as
``SparseCounts.merge``) when they pass an eighth of ``max_count_memory`` (MiB). The budget bounds the
pairs' working memory: a merge holds ``MERGE_PAIR_BYTES`` (56) per pair, so the pairs stay in memory while
56 bytes each fit the budget (about 19 Mi pairs per GiB); the margins t, S, N are always summed in memory,
in chunk order. When a merge would pass the budget, the merged pairs (a slice at a time) and every later
chunk's pairs go to a DuckDB database in a fresh temporary folder under ``folder`` (default: the system's temporary folder), each batch of rows with its sequence
number ``seq``. ``finish`` has DuckDB sort the rows by (key, seq), an external sort spilling to the
database's folder under a memory limit of half the budget (at least ``MIN_DUCKDB_MEMORY``: DuckDB needs
buffers of its own), and streams them out in batches; numpy adds each key's run of values left to right
(a run cut by a batch boundary is carried into the next batch) and each batch is written as one part,
``pairs-00000.parquet``, ``pairs-00001.parquet``, ..., under a temporary name, renamed, in a fresh
``mlnb-counts-*`` folder under ``folder``; then the margins, then ``COMPLETE``. Whatever fails or is
killed, no folder that ``CountStore.open`` accepts is left; on a failure the temporary database is
removed too (a SIGKILL leaves its ``.mlnb-count-db-*`` folder, which holds no counts).

Bit for bit: the same chunks give the same counts in memory and out of core, for any values. In memory
the value of a pair is its chunks' values added left to right in chunk order; out of core the sorted
runs are added in the same order (rows of one key in ``seq`` order), by the same numpy code. While every
value seen is an integer and all of them add up to less than 2^52, every order of addition is exact, so
the pending chunks are merged in memory before they are inserted (fewer rows for DuckDB to sort); after
a non-integer value each chunk is inserted as it is, with its own ``seq``. DuckDB's own
``sum(value ORDER BY seq)`` with a GROUP BY would give the same bits, but is slower than the
sort-and-stream (``experiments/bench_counters.py``), and ``sum(value)`` adds in no defined order.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from mlnb.errors import MlnbError
from mlnb.models.naive_bayes.sparse_counts import (SparseCounts, check_compatible, checked_words, merge_pairs,
                                                   merge_pairs_sorted)

MARKER = "COMPLETE"
MARGINS = "margins.npz"
PART = "pairs-{:05d}.parquet"
_PART_NAME = re.compile(r"pairs-(\d{5})\.parquet")
STORE_PREFIX = "mlnb-counts-"
DATABASE_PREFIX = ".mlnb-count-db-"
#: DuckDB's memory limit is never set below this, whatever the budget (its sort needs buffers)
MIN_DUCKDB_MEMORY = 128 << 20
#: sums of integers below this are exact in float64 in every order (2^53 with a factor 2 of margin)
EXACT_INTEGER_SUM = float(2 ** 52)
_PAIR_BYTES = 16
#: bytes per pair while pairs are merged in memory: the pieces (key and value, 16), their concatenation (16),
#: the stable sort's order (8) and the sorted copy (16); the budget bounds this, so max_count_memory MiB hold
#: about max_count_memory / 56 Mi pairs in memory
MERGE_PAIR_BYTES = 56
_COLUMNS = {"word": ("BIGINT", "INTEGER"), "category": ("BIGINT", "INTEGER"), "key": ("BIGINT",),
            "value": ("DOUBLE",)}


def part_path(folder: str | os.PathLike, index: int) -> Path:
    """The path of a store's part ``index`` (0, 1, ...): ``pairs-00000.parquet``, ..."""
    return Path(folder) / PART.format(index)


def _sql_string(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _fsync(path: Path) -> None:
    """Flush a file (or a folder's entries) to disk, so that the marker written after it never precedes it."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _write_margins(folder: Path, t, S, N, n: int, presence: bool) -> None:
    K, V = int(np.shape(S)[0]), int(np.shape(t)[0])
    temporary = folder / (MARGINS + ".partial")
    with open(temporary, "wb") as handle:
        np.savez(handle, t=np.asarray(t, dtype=np.float64), S=np.asarray(S, dtype=np.float64),
                 N=np.asarray(N, dtype=np.float64), n=np.int64(n), presence=np.bool_(presence),
                 K=np.int64(K), V=np.int64(V))
    os.replace(temporary, folder / MARGINS)


def _write_marker(folder: Path) -> None:
    """Flush the parts and margins, then write ``COMPLETE`` (under a temporary name, renamed)."""
    parts = sorted(p.name for p in folder.iterdir() if _PART_NAME.fullmatch(p.name))
    for name in parts + [MARGINS]:
        _fsync(folder / name)
    _fsync(folder)
    temporary = folder / (MARKER + ".partial")
    temporary.write_text(json.dumps({"parts": parts}) + "\n", encoding="utf-8")
    _fsync(temporary)
    os.replace(temporary, folder / MARKER)
    _fsync(folder)


def _write_part(connection, frame, path: Path) -> None:
    """One part from a DataFrame of word, category, key, value (already in key order), via a temporary name."""
    temporary = path.with_name(path.name + ".partial")
    connection.register("part_pairs", frame)
    try:
        connection.execute(f"COPY (SELECT word, category, key, value FROM part_pairs) TO {_sql_string(temporary)} "
                           "(FORMAT parquet)")
    finally:
        connection.unregister("part_pairs")
    os.replace(temporary, path)


class CountStore:
    """Finished event counters on disk (the module docstring): the margins in memory, the pairs in Parquet."""

    def __init__(self, folder: Path, parts: list[Path], t: np.ndarray, S: np.ndarray, N: np.ndarray, n: int,
                 presence: bool, n_pairs: int):
        self.folder = folder
        self.parts = parts
        self.t, self.S, self.N, self.n, self.presence = t, S, N, n, presence
        self.n_pairs = n_pairs
        self._connection = None

    def __getstate__(self):  # a DuckDB connection does not travel (Dask): the next query opens one
        state = dict(self.__dict__)
        state["_connection"] = None
        return state

    def __repr__(self) -> str:
        return (f"CountStore({str(self.folder)!r}: {self.shape[0]} categories × {self.shape[1]} features, "
                f"{self.n_pairs} pairs)")

    @property
    def shape(self) -> tuple[int, int]:
        """(K, V): categories × features, as ``SparseCounts.shape``."""
        return self.S.shape[0], self.t.shape[0]

    # --- opening and writing ------------------------------------------------------------------------
    @classmethod
    def open(cls, folder: str | os.PathLike) -> CountStore:
        """The finished store in ``folder``, or MlnbError in one line: no ``COMPLETE`` marker (a killed or
        failed run), margins or parts missing or of the wrong shape, columns or key ranges wrong."""
        folder = Path(folder)
        if not folder.is_dir():
            raise MlnbError(f"{folder}: no such folder of Naive Bayes counts")
        if not (folder / MARKER).is_file():
            raise MlnbError(f"{folder}: no {MARKER} marker: these counts were never finished (a killed or failed "
                            "run); count again")
        t, S, N, n, presence = cls._read_margins(folder)
        parts = cls._find_parts(folder)
        n_pairs = cls._check_parts(parts, K=S.shape[0], V=t.shape[0])
        return cls(folder, parts, t, S, N, n, presence, n_pairs)

    @staticmethod
    def _read_margins(folder: Path):
        path = folder / MARGINS
        try:
            with np.load(path, allow_pickle=False) as saved:
                arrays = {name: saved[name] for name in ("t", "S", "N", "n", "presence", "K", "V")}
        except KeyError as error:
            raise MlnbError(f"{path}: expected the arrays t, S, N, n, presence, K, V; {error} is missing") from None
        except (OSError, ValueError) as error:
            raise MlnbError(f"{path}: not readable margins of Naive Bayes counts ({error})") from None
        K, V = int(arrays["K"]), int(arrays["V"])
        for name, length in (("t", V), ("S", K), ("N", K)):
            if arrays[name].shape != (length,) or arrays[name].dtype != np.float64:
                raise MlnbError(f"{path}: expected {name} of {length} float64 values, got shape "
                                f"{arrays[name].shape} of {arrays[name].dtype}")
        return arrays["t"], arrays["S"], arrays["N"], int(arrays["n"]), bool(arrays["presence"])

    @staticmethod
    def _find_parts(folder: Path) -> list[Path]:
        numbers = sorted(int(m.group(1)) for m in map(_PART_NAME.fullmatch, os.listdir(folder)) if m)
        if numbers != list(range(len(numbers))) or not numbers:
            raise MlnbError(f"{folder}: expected parts {PART.format(0)}, {PART.format(1)}, ... numbered from 0 "
                            f"without a gap, found {len(numbers)} numbered {numbers[:5]}")
        return [part_path(folder, i) for i in numbers]

    @staticmethod
    def _check_parts(parts: list[Path], K: int, V: int) -> int:
        """The number of pairs; MlnbError unless every part has the columns and its keys (from the Parquet
        statistics) lie in [0, K·V) after the previous part's."""
        import duckdb

        connection = duckdb.connect()
        total, previous_max = 0, -1
        try:
            for path in parts:
                try:
                    columns = dict(row[:2] for row in connection.execute(
                        f"DESCRIBE SELECT * FROM read_parquet({_sql_string(path)})").fetchall())
                    rows, low, high = connection.execute(
                        "SELECT sum(num_values), min(TRY_CAST(stats_min_value AS BIGINT)), "
                        f"max(TRY_CAST(stats_max_value AS BIGINT)) FROM parquet_metadata({_sql_string(path)}) "
                        "WHERE path_in_schema = 'key'").fetchone()
                except duckdb.Error as error:
                    raise MlnbError(f"{path}: not a readable Parquet part of counts "
                                    f"({str(error).splitlines()[0]})") from None
                for name, types in _COLUMNS.items():
                    if columns.get(name) not in types:
                        raise MlnbError(f"{path}: expected a column {name} of type {' or '.join(types)}, "
                                        f"found columns {columns}")
                rows = int(rows or 0)
                if rows and (low is None or high is None or low <= previous_max or high >= K * V):
                    raise MlnbError(f"{path}: its keys [{low}, {high}] do not follow the previous part's "
                                    f"(up to {previous_max}) within [0, {K * V})")
                previous_max = high if rows else previous_max
                total += rows
        finally:
            connection.close()
        return total

    @classmethod
    def write(cls, folder: str | os.PathLike, counts: SparseCounts, n_parts: int = 1) -> CountStore:
        """Write ``counts`` as a store in ``folder`` (made if absent; refused unless empty), its pairs cut into
        ``n_parts`` contiguous key ranges of about equal size."""
        import duckdb
        import pandas as pd

        folder = Path(folder)
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise MlnbError(f"{folder}: expected an empty or new folder for the counts")
        if n_parts < 1:
            raise MlnbError(f"CountStore.write: expected n_parts ≥ 1, got {n_parts}")
        made = not folder.exists()
        folder.mkdir(parents=True, exist_ok=True)
        try:
            connection = duckdb.connect()
            try:
                cuts = np.linspace(0, counts.n_pairs, n_parts + 1).astype(np.int64)
                words, categories = counts.words(), counts.categories()
                for index in range(n_parts):
                    piece = slice(cuts[index], cuts[index + 1])
                    frame = pd.DataFrame({"word": words[piece], "category": categories[piece],
                                          "key": counts.key[piece], "value": counts.value[piece]})
                    _write_part(connection, frame, part_path(folder, index))
            finally:
                connection.close()
            return cls.seal(folder, counts.t, counts.S, counts.N, counts.n, counts.presence)
        except BaseException:
            if made:
                shutil.rmtree(folder, ignore_errors=True)
            else:
                for entry in folder.iterdir():
                    entry.unlink()
            raise

    @classmethod
    def seal(cls, folder: str | os.PathLike, t: np.ndarray, S: np.ndarray, N: np.ndarray, n: int,
             presence: bool) -> CountStore:
        """Finish a store whose parts (``part_path(folder, i)``, sorted by key) are written: write the margins,
        flush, write ``COMPLETE``, and open it (which checks the parts)."""
        folder = Path(folder)
        _write_margins(folder, t, S, N, n, presence)
        parts = cls._find_parts(folder)
        cls._check_parts(parts, K=np.shape(S)[0], V=np.shape(t)[0])
        _write_marker(folder)
        return cls.open(folder)

    # --- reading ------------------------------------------------------------------------------------
    def _query(self):
        if self._connection is None:
            import duckdb

            self._connection = duckdb.connect()
        return self._connection

    def _all_parts(self) -> str:
        return "read_parquet([" + ", ".join(_sql_string(p) for p in self.parts) + "])"

    def pairs_of(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(key, value) of the pairs whose word is in ``words`` (sorted, unique, in [0, V)), in key order: a
        join of the parts with the requested words (as ``SparseCounts.pairs_of``)."""
        import pandas as pd

        words = checked_words(words, self.shape[1])
        if words.size == 0 or self.n_pairs == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        connection = self._query().cursor()
        try:
            connection.register("requested_words", pd.DataFrame({"word": words}))
            found = connection.execute(
                f"SELECT p.key, p.value FROM {self._all_parts()} AS p SEMI JOIN requested_words AS w "
                "ON p.word = w.word ORDER BY p.key").fetchnumpy()
        finally:
            connection.close()
        return (np.asarray(found["key"], dtype=np.int64), np.asarray(found["value"], dtype=np.float64))

    def iter_pairs(self, batch_pairs: int = 1 << 20) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Every pair in key order, as (key, value) batches of ``batch_pairs`` pairs (the last one fewer)."""
        if batch_pairs < 1:
            raise MlnbError(f"iter_pairs: expected batch_pairs ≥ 1, got {batch_pairs}")
        keys, values, held = [], [], 0
        vectors = max(1, -(-batch_pairs // 2048))  # DuckDB hands results over in vectors of 2048 rows
        for path in self.parts:
            connection = self._query().cursor()
            try:
                connection.execute(f"SELECT key, value FROM read_parquet({_sql_string(path)})")
                while True:
                    frame = connection.fetch_df_chunk(vectors)
                    if len(frame) == 0:
                        break
                    keys.append(frame["key"].to_numpy(dtype=np.int64))
                    values.append(frame["value"].to_numpy(dtype=np.float64))
                    held += len(frame)
                    while held >= batch_pairs:
                        key, value = np.concatenate(keys), np.concatenate(values)
                        yield key[:batch_pairs], value[:batch_pairs]
                        keys, values, held = [key[batch_pairs:]], [value[batch_pairs:]], key.shape[0] - batch_pairs
            finally:
                connection.close()
        if held:
            yield np.concatenate(keys), np.concatenate(values)

    def load(self) -> SparseCounts:
        """The whole store in memory (16 bytes per pair and the margins)."""
        keys, values = [], []
        connection = self._query().cursor()
        try:
            for path in self.parts:
                found = connection.execute(f"SELECT key, value FROM read_parquet({_sql_string(path)})").fetchnumpy()
                keys.append(np.asarray(found["key"], dtype=np.int64))
                values.append(np.asarray(found["value"], dtype=np.float64))
        finally:
            connection.close()
        key = np.concatenate(keys) if keys else np.empty(0, dtype=np.int64)
        if key.size > 1 and np.any(key[1:] <= key[:-1]):
            raise MlnbError(f"{self.folder}: the pairs are not sorted by unique key")
        return SparseCounts(key=key, value=np.concatenate(values) if values else np.empty(0, dtype=np.float64),
                            t=self.t.copy(), S=self.S.copy(), N=self.N.copy(), n=self.n, presence=self.presence)

    def column_sums(self, batch_pairs: int = 1 << 22) -> np.ndarray:
        """(V,) float64: Σ_k F_kw for each word, summed in key order (the bits of ``SparseCounts.column_sums``)."""
        K, V = self.shape
        total = np.zeros(V, dtype=np.float64)
        for key, value in self.iter_pairs(batch_pairs):
            np.add.at(total, key // K, value)  # in element order, across batch boundaries alike
        return total


class CountAggregator:
    """Adds chunks' counters under a memory budget: in memory, or out of core by DuckDB beyond it (the
    module docstring says how, and why the counts are the same bits either way)."""

    def __init__(self, n_features: int, n_categories: int, presence: bool = False,
                 max_count_memory: float = 1024, folder: str | os.PathLike | None = None, threads: int | None = None):
        if not isinstance(max_count_memory, (int, float)) or isinstance(max_count_memory, bool) \
                or not max_count_memory > 0:
            raise MlnbError(f"max_count_memory = {max_count_memory!r}: expected a positive number of MiB")
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise MlnbError(f"threads = {threads!r}: expected a positive number of DuckDB threads, or None")
        self.shape = (int(n_categories), int(n_features))
        self.presence = presence
        self.budget_bytes = int(max_count_memory * (1 << 20))
        self.root = Path(folder) if folder is not None else Path(tempfile.gettempdir())
        self.threads = threads
        empty = SparseCounts.empty(n_features, n_categories, presence)
        self._t, self._S, self._N, self._n = empty.t, empty.S, empty.N, 0
        self._merged: tuple[np.ndarray, np.ndarray] | None = None
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_bytes = 0
        self._integer = True  # every value so far an integer, their total below EXACT_INTEGER_SUM
        self._value_total = 0.0
        self._database_folder: Path | None = None
        self._connection = None
        self._sequence = 0
        self._finished = False

    @property
    def out_of_core(self) -> bool:
        """Whether the pairs went to DuckDB."""
        return self._connection is not None

    def add(self, chunk: SparseCounts) -> None:
        """Count one chunk (chunks in corpus order: the sums follow it)."""
        if self._finished:
            raise MlnbError("CountAggregator.add: the aggregator is finished; make a new one")
        check_compatible(self.shape, self.presence, chunk.shape, chunk.presence)
        self._t += chunk.t
        self._S += chunk.S
        self._N += chunk.N
        self._n += chunk.n
        if self._integer and chunk.n_pairs:
            self._value_total += float(np.abs(chunk.value).sum())
            self._integer = self._value_total < EXACT_INTEGER_SUM and bool(
                np.array_equal(chunk.value, np.trunc(chunk.value)))
        if chunk.n_pairs == 0:
            return
        self._pending.append((chunk.key, chunk.value))
        self._pending_bytes += chunk.n_pairs * _PAIR_BYTES
        if self._pending_bytes > self.budget_bytes // 8:
            self._flush()

    def _held_pairs(self) -> int:
        return (self._merged[0].shape[0] if self._merged is not None else 0) + self._pending_bytes // _PAIR_BYTES

    def _flush(self) -> None:
        """Merge the pending pairs into the merged ones (in memory, while the merge's working memory fits the
        budget) or insert them into the database."""
        if not self._pending:
            return
        try:
            if not self.out_of_core and self._held_pairs() * MERGE_PAIR_BYTES > self.budget_bytes:
                self._start_database()  # the merged pairs first: the chunks before the pending ones
            if self.out_of_core:
                self._insert_pending()
            else:
                pieces = ([self._merged] if self._merged is not None else []) + self._pending
                self._pending, self._pending_bytes = [], 0
                self._merged = None
                self._merged = merge_pairs([k for k, _ in pieces], [v for _, v in pieces])
        except BaseException as error:
            self._finished = True  # its pairs are lost: refuse further use rather than count a part
            self._discard_database()
            self._raise_as_one_line(error)
            raise

    def _raise_as_one_line(self, error: BaseException) -> None:
        """A DuckDB error (disk full, memory) as MlnbError naming the folder and the budget."""
        if _is_duckdb_error(error):
            raise MlnbError(f"counting out of core in {self.root} (max_count_memory = "
                            f"{self.budget_bytes / 2**20:g} MiB) failed: {str(error).splitlines()[0]}") from None

    def _start_database(self) -> None:
        import duckdb

        self._database_folder = Path(tempfile.mkdtemp(prefix=DATABASE_PREFIX, dir=self.root))
        self._connection = duckdb.connect(str(self._database_folder / "pairs.duckdb"))
        memory = max(self.budget_bytes // 2, MIN_DUCKDB_MEMORY)
        self._connection.execute(f"SET memory_limit = '{memory // 1024}KiB'")
        self._connection.execute(f"SET temp_directory = {_sql_string(self._database_folder / 'spill')}")
        self._connection.execute("SET preserve_insertion_order = false")
        if self.threads is not None:
            self._connection.execute(f"SET threads = {int(self.threads)}")
        self._connection.execute("CREATE TABLE pairs (key BIGINT, value DOUBLE, seq INTEGER)")
        if self._merged is not None:  # one piece (one seq), inserted a slice at a time: no copy of it all at once
            key, value = self._merged
            self._merged = None
            rows = self._batch_rows()
            for start in range(0, key.shape[0], rows):
                self._insert([(key[start:start + rows], value[start:start + rows])], same_sequence=start > 0)

    def _insert_pending(self) -> None:
        if self._integer:  # integer sums are exact in every grouping: merge the batch before inserting it
            self._pending = [merge_pairs([k for k, _ in self._pending], [v for _, v in self._pending])]
        self._insert(self._pending)
        self._pending, self._pending_bytes = [], 0

    def _insert(self, pieces: list[tuple[np.ndarray, np.ndarray]], same_sequence: bool = False) -> None:
        """Insert pieces, each with the next sequence number (``same_sequence``: the first with the last one
        used, the rest of a piece inserted a slice at a time)."""
        import pandas as pd

        self._sequence -= bool(same_sequence)
        sequence = np.repeat(np.arange(self._sequence, self._sequence + len(pieces), dtype=np.int32),
                             [k.shape[0] for k, _ in pieces])
        self._sequence += len(pieces)
        frame = pd.DataFrame({"key": np.concatenate([k for k, _ in pieces]),
                              "value": np.concatenate([v for _, v in pieces]), "seq": sequence})
        self._connection.register("batch_pairs", frame)
        try:
            self._connection.execute("INSERT INTO pairs SELECT key, value, seq FROM batch_pairs")
        finally:
            self._connection.unregister("batch_pairs")

    def _batch_rows(self) -> int:
        """Rows of the sorted stream handled at once: a quarter of the budget at about 40 bytes a row
        (key, value and pandas' copies), at least one DuckDB vector."""
        return max(2048, self.budget_bytes // 4 // 40)

    def finish(self) -> SparseCounts | CountStore:
        """The counts of every chunk added: ``SparseCounts`` when they fit the budget, else a ``CountStore``
        in a new ``mlnb-counts-*`` folder under ``folder``."""
        if self._finished:
            raise MlnbError("CountAggregator.finish: the aggregator is finished already")
        self._flush()
        self._finished = True
        margins = dict(t=self._t, S=self._S, N=self._N, n=self._n, presence=self.presence)
        if not self.out_of_core:
            key, value = self._merged if self._merged is not None else (np.empty(0, np.int64), np.empty(0))
            self._merged = None
            return SparseCounts(key=key, value=value, **margins)
        store = None
        try:
            store = Path(tempfile.mkdtemp(prefix=STORE_PREFIX, dir=self.root))
            _write_sorted_parts(self._connection, store, self.shape[0], self._batch_rows())
            self._connection.close()
            self._connection = None
            return CountStore.seal(store, **margins)
        except BaseException as error:
            if store is not None:
                shutil.rmtree(store, ignore_errors=True)
            self._raise_as_one_line(error)
            raise
        finally:
            self._discard_database()

    def _discard_database(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            finally:
                self._connection = None
        if self._database_folder is not None:
            shutil.rmtree(self._database_folder, ignore_errors=True)
            self._database_folder = None


def _is_duckdb_error(error: BaseException) -> bool:
    module = type(error).__module__ or ""
    return module.split(".")[0] in ("duckdb", "_duckdb")


def _write_sorted_parts(connection, store: Path, n_categories: int, batch_rows: int) -> None:
    """The pairs table sorted by (key, seq) and streamed out: each key's values added left to right, one
    part per batch (a key's run cut by the batch's end is carried into the next batch)."""
    import duckdb
    import pandas as pd

    rows = connection.cursor()
    writer = duckdb.connect()
    try:
        rows.execute("SELECT key, value FROM pairs ORDER BY key, seq")
        vectors = max(1, batch_rows // 2048)  # DuckDB hands results over in vectors of 2048 rows
        held_key, held_value = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        n_parts, K = 0, int(n_categories)
        while True:
            frame = rows.fetch_df_chunk(vectors)
            last = len(frame) == 0
            key = np.concatenate([held_key, frame["key"].to_numpy(dtype=np.int64)])
            value = np.concatenate([held_value, frame["value"].to_numpy(dtype=np.float64)])
            if not last:
                cut = int(np.searchsorted(key, key[-1], side="left"))  # the last key's run may go on
                held_key, held_value, key, value = key[cut:], value[cut:], key[:cut], value[:cut]
            if key.size or (last and n_parts == 0):
                key, value = merge_pairs_sorted(key, value)
                frame = pd.DataFrame({"word": key // K, "category": key % K, "key": key, "value": value})
                _write_part(writer, frame, part_path(store, n_parts))
                n_parts += 1
            if last:
                return
    finally:
        writer.close()
        rows.close()


def count_chunks(chunks: Iterable[tuple], n_features: int, n_categories: int, presence: bool = False,
                 max_count_memory: float = 1024, folder: str | os.PathLike | None = None,
                 threads: int | None = None) -> SparseCounts | CountStore:
    """The counters of (X, Y) chunks (``SparseCounts.from_chunk`` each) added by a ``CountAggregator``."""
    aggregator = CountAggregator(n_features, n_categories, presence=presence, max_count_memory=max_count_memory,
                                 folder=folder, threads=threads)
    try:
        for X, Y in chunks:
            aggregator.add(SparseCounts.from_chunk(X, Y, presence=presence))
    except BaseException:
        aggregator._discard_database()
        raise
    return aggregator.finish()
