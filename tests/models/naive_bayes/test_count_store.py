"""Counters aggregated under a budget: out of core (DuckDB, Parquet) the same bits as in memory, and a
failed or killed run leaves nothing a later run would read."""

import os
import pickle
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import MlnbError
from mlnb.models.naive_bayes import count_store
from mlnb.models.naive_bayes.count_store import CountAggregator, CountStore, count_chunks, part_path
from mlnb.models.naive_bayes.sparse_counts import SparseCounts

V, K = 500, 11
TINY = 0.01  # MiB: 655 pairs, so a few chunks already go out of core
PROJECT = Path(__file__).resolve().parents[3]


def random_chunks(seed, integer=True, n_chunks=8, presence=False):
    rng = np.random.default_rng(seed)
    chunks = []
    for index in range(n_chunks):
        X = sp.random(int(rng.integers(30, 90)), V, density=0.05, random_state=rng, format="csr", dtype=np.float32)
        X.data = np.ceil(X.data * 6) if integer or index % 3 == 0 else (X.data * 10 + 0.01).astype(np.float32)
        Y = sp.csr_matrix((rng.random((X.shape[0], K)) < 0.25).astype(np.float32))
        chunks.append((X, Y))
    return chunks


def wide_pieces(seed, n_pieces=40, n_keys=300, integer_first=0, sizes=None):
    """SparseCounts with values of magnitudes 1e-5 to 1e16 (every order of addition rounds differently);
    the first ``integer_first`` pieces hold small integers."""
    rng = np.random.default_rng(seed)
    pieces = []
    for index in range(n_pieces):
        key = np.unique(rng.integers(0, n_keys, rng.integers(*(sizes or (n_keys // 2, n_keys)))))
        value = (rng.integers(1, 9, key.size).astype(np.float64) if index < integer_first
                 else rng.random(key.size) * 10.0 ** rng.integers(-5, 17, key.size))
        pieces.append(SparseCounts(key=key, value=value, t=rng.random(V), S=rng.random(K), N=rng.random(K), n=2))
    return pieces


def aggregate(pieces, **options):
    aggregator = CountAggregator(V, K, **options)
    for piece in pieces:
        aggregator.add(piece)
    return aggregator.finish()


def assert_same_counts(store, counts: SparseCounts):
    loaded = store.load() if isinstance(store, CountStore) else store
    assert loaded.shape == counts.shape and loaded.n == counts.n and loaded.presence == counts.presence
    for name in ("key", "value", "t", "S", "N"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(counts, name), err_msg=name)


def left_to_right(pieces):
    total = {}
    for piece in pieces:
        for key, value in zip(piece.key.tolist(), piece.value.tolist()):
            total[key] = total[key] + value if key in total else value
    keys = sorted(total)
    return np.array(keys, dtype=np.int64), np.array([total[k] for k in keys])


def openable(root: Path) -> list[Path]:
    found = []
    for entry in root.iterdir():
        try:
            CountStore.open(entry)
            found.append(entry)
        except MlnbError:
            pass
    return found


@pytest.mark.parametrize("kind", [dict(integer=True), dict(integer=False), dict(integer=True, presence=True)],
                         ids=["integers", "non-integers", "presence"])
def test_out_of_core_counts_equal_the_in_memory_counts_bit_for_bit(tmp_path, kind):
    chunks = random_chunks(1, **kind)
    presence = kind.get("presence", False)
    in_memory = count_chunks(chunks, V, K, presence=presence)
    out_of_core = count_chunks(chunks, V, K, presence=presence, max_count_memory=TINY, folder=tmp_path)
    assert isinstance(in_memory, SparseCounts) and isinstance(out_of_core, CountStore)
    assert out_of_core.n_pairs == in_memory.n_pairs > 3 * 655
    assert_same_counts(out_of_core, in_memory)
    assert_same_counts(in_memory, SparseCounts.merge([SparseCounts.from_chunk(X, Y, presence) for X, Y in chunks]))
    assert [p.name for p in tmp_path.iterdir()] == [out_of_core.folder.name]  # no temporary database left


@pytest.fixture
def rows_in_reverse_chunk_order(monkeypatch):
    """Every insert followed by a rewrite of the pairs table, last chunk first: a table is a set, and on
    a few rows DuckDB's plain sum happens to add them in insertion order, which would hide a wrong sum."""
    original = CountAggregator._insert

    def insert_then_reverse(self, pieces, **keywords):
        original(self, pieces, **keywords)
        self._connection.execute("CREATE OR REPLACE TABLE pairs AS SELECT * FROM pairs ORDER BY seq DESC, key")
    monkeypatch.setattr(CountAggregator, "_insert", insert_then_reverse)


@pytest.mark.parametrize("pieces", [dict(), dict(integer_first=15), dict(n_keys=400, sizes=(10, 40))],
                         ids=["wide values", "integers, then wide values", "several pieces a batch"])
def test_out_of_core_sums_are_left_to_right_in_chunk_order(tmp_path, rows_in_reverse_chunk_order, pieces):
    pieces = wide_pieces(2, **pieces)
    key, value = left_to_right(pieces)
    in_memory = aggregate(pieces, max_count_memory=0.05)  # several merges of the pending pieces
    out_of_core = aggregate(pieces, max_count_memory=0.004, folder=tmp_path)
    assert isinstance(in_memory, SparseCounts) and isinstance(out_of_core, CountStore)
    np.testing.assert_array_equal(in_memory.key, key)
    np.testing.assert_array_equal(in_memory.value, value)
    assert_same_counts(out_of_core, in_memory)


def test_integer_batches_are_merged_before_they_go_to_the_database(tmp_path, monkeypatch):
    inserted = []
    original = CountAggregator._insert
    monkeypatch.setattr(CountAggregator, "_insert", lambda self, pieces: (inserted.append(len(pieces)),
                                                                          original(self, pieces))[1])
    chunks = random_chunks(3, n_chunks=12)
    store = count_chunks(chunks, V, K, max_count_memory=TINY, folder=tmp_path)
    assert isinstance(store, CountStore) and len(inserted) > 2 and set(inserted) == {1}
    assert_same_counts(store, count_chunks(chunks, V, K))


def test_a_written_store_reopens_with_the_same_pairs(tmp_path):
    counts = count_chunks(random_chunks(4, integer=False), V, K)
    written = CountStore.write(tmp_path / "store", counts, n_parts=3)
    store = CountStore.open(tmp_path / "store")
    assert store.parts == [part_path(tmp_path / "store", i) for i in range(3)] == written.parts
    assert store.shape == counts.shape and store.n_pairs == counts.n_pairs and store.n == counts.n
    assert_same_counts(store, counts)
    rng = np.random.default_rng(5)
    for words in (np.unique(rng.integers(0, V, 40)), np.arange(V), np.array([V - 1]), np.array([], np.int64)):
        for got, expected in zip(store.pairs_of(words), counts.pairs_of(words)):
            np.testing.assert_array_equal(got, expected)
            assert got.dtype == expected.dtype
    batches = list(store.iter_pairs(batch_pairs=1000))
    assert [b[0].size for b in batches[:-1]] == [1000] * (len(batches) - 1) and 0 < batches[-1][0].size <= 1000
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), counts.key)
    np.testing.assert_array_equal(store.column_sums(batch_pairs=777), counts.column_sums())
    with pytest.raises(MlnbError, match="pairs_of"):
        store.pairs_of(np.array([4, 2]))
    travelled = pickle.loads(pickle.dumps(store))  # to a Dask worker: without its DuckDB connection
    np.testing.assert_array_equal(travelled.pairs_of(np.arange(10))[1], counts.pairs_of(np.arange(10))[1])
    with pytest.raises(MlnbError, match="empty or new folder"):
        CountStore.write(tmp_path / "store", counts)


def test_a_store_of_no_pairs(tmp_path):
    store = CountStore.write(tmp_path / "empty", SparseCounts.empty(V, K))
    assert store.n_pairs == 0 and store.load().n_pairs == 0 and store.pairs_of(np.arange(3))[0].size == 0
    assert list(store.iter_pairs(10)) == [] and not store.column_sums().any()


@pytest.mark.parametrize("damage", ["no marker", "no margins", "a gap in the parts", "a broken part",
                                    "a column missing", "keys out of order", "margins of another shape"])
def test_an_incomplete_or_damaged_store_is_refused_in_one_line(tmp_path, damage):
    counts = count_chunks(random_chunks(6), V, K)
    folder = tmp_path / "store"
    CountStore.write(folder, counts, n_parts=2)
    if damage == "no marker":
        (folder / "COMPLETE").unlink()
    elif damage == "no margins":
        (folder / "margins.npz").unlink()
    elif damage == "a gap in the parts":
        part_path(folder, 1).rename(part_path(folder, 2))
    elif damage == "a broken part":
        part_path(folder, 1).write_bytes(b"not parquet")
    elif damage == "a column missing":
        import duckdb
        duckdb.connect().execute(f"COPY (SELECT key, value FROM read_parquet('{part_path(folder, 1)}')) "
                                 f"TO '{tmp_path / 'x.parquet'}' (FORMAT parquet)")
        (tmp_path / "x.parquet").replace(part_path(folder, 1))
    elif damage == "keys out of order":
        part_path(folder, 0).rename(tmp_path / "first")
        part_path(folder, 1).rename(part_path(folder, 0))
        (tmp_path / "first").rename(part_path(folder, 1))
    else:
        np.savez(folder / "margins.npz", t=counts.t[:-1], S=counts.S, N=counts.N, n=1, presence=False, K=K, V=V)
    with pytest.raises(MlnbError) as caught:
        CountStore.open(folder)
    assert "\n" not in str(caught.value) and str(folder) in str(caught.value)
    if damage == "no marker":
        assert "COMPLETE" in str(caught.value) and "never finished" in str(caught.value)


def test_margins_are_read_without_executing_code(tmp_path):
    counts = count_chunks(random_chunks(6), V, K)
    folder = tmp_path / "store"
    CountStore.write(folder, counts)
    np.savez(folder / "margins.npz", t=np.array([object()] * V), S=counts.S, N=counts.N, n=1, presence=False, K=K,
             V=V)
    with pytest.raises(MlnbError, match="margins.npz"):
        CountStore.open(folder)


@pytest.mark.parametrize("step", ["group", "insert", "seal"])
def test_a_failure_during_the_database_step_leaves_no_store_and_no_database(tmp_path, monkeypatch, step):
    if step == "group":
        def fail(connection, store, n_categories, batch_rows):
            part_path(store, 0).write_bytes(b"a part")
            part_path(store, 1).with_suffix(".parquet.partial").write_bytes(b"half a part")
            raise RuntimeError("disk full")
        monkeypatch.setattr(count_store, "_write_sorted_parts", fail)
    elif step == "insert":
        original, calls = CountAggregator._insert, []

        def fail(self, pieces):
            calls.append(1)
            if len(calls) == 3:
                raise RuntimeError("disk full")
            original(self, pieces)
        monkeypatch.setattr(CountAggregator, "_insert", fail)
    else:
        monkeypatch.setattr(count_store, "_write_marker", lambda folder: (_ for _ in ()).throw(RuntimeError("full")))
    with pytest.raises(RuntimeError):
        count_chunks(random_chunks(7, n_chunks=12), V, K, max_count_memory=TINY, folder=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("step", ["insert", "finish"])
def test_a_database_error_is_one_line_naming_the_folder_and_the_budget(tmp_path, monkeypatch, step):
    def bad_sql(self_or_connection, *args):
        connection = getattr(self_or_connection, "_connection", self_or_connection)
        connection.execute("SELECT no_such_column FROM pairs")
    if step == "insert":
        monkeypatch.setattr(CountAggregator, "_insert_pending", bad_sql)
    else:
        monkeypatch.setattr(count_store, "_write_sorted_parts", bad_sql)
    with pytest.raises(MlnbError) as caught:
        count_chunks(random_chunks(7, n_chunks=12), V, K, max_count_memory=TINY, folder=tmp_path)
    message = str(caught.value)
    assert "\n" not in message and str(tmp_path) in message and "max_count_memory" in message
    assert list(tmp_path.iterdir()) == []


KILLED = textwrap.dedent("""
    import sys, time
    import numpy as np, scipy.sparse as sp
    from mlnb.models.naive_bayes import count_store
    step, folder = sys.argv[1], sys.argv[2]
    original = getattr(count_store, step)
    def paused(*args, **kwargs):
        if step != "_write_marker":  # the parts written and renamed; else the marker never written
            original(*args, **kwargs)
        print("paused", flush=True)
        time.sleep(60)
    setattr(count_store, step, paused)
    rng = np.random.default_rng(0)
    chunks = [(sp.random(60, 500, density=0.05, random_state=rng, format="csr", dtype=np.float32),
               sp.csr_matrix((rng.random((60, 11)) < 0.25).astype(np.float32))) for _ in range(6)]
    count_store.count_chunks(chunks, 500, 11, max_count_memory=0.01, folder=folder)
""")


@pytest.mark.slow
@pytest.mark.parametrize("step", ["_write_sorted_parts", "_write_marker"], ids=["after the parts", "before the marker"])
def test_a_run_killed_during_finish_leaves_no_store_that_opens(tmp_path, step):
    environment = dict(os.environ, PYTHONPATH=str(PROJECT))
    process = subprocess.Popen([sys.executable, "-c", KILLED, step, str(tmp_path)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=environment, cwd=PROJECT)
    try:
        line = process.stdout.readline()
        assert line.strip() == "paused", process.stderr.read()
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait(timeout=30)
    stores = [p for p in tmp_path.iterdir() if p.name.startswith(count_store.STORE_PREFIX)]
    assert len(stores) == 1 and any(stores[0].glob("pairs-00000.parquet"))  # the counts were on disk...
    assert openable(tmp_path) == []  # ...and are refused


@pytest.mark.parametrize("budget", [0, -1, "1024", True])
def test_a_budget_that_is_not_a_positive_number_is_refused_in_one_line(budget):
    with pytest.raises(MlnbError, match="max_count_memory") as caught:
        CountAggregator(V, K, max_count_memory=budget)
    assert "\n" not in str(caught.value)


def test_the_aggregator_refuses_other_counters_and_a_second_finish():
    aggregator = CountAggregator(V, K)
    with pytest.raises(MlnbError, match="cannot add counters"):
        aggregator.add(SparseCounts.empty(V, K + 1))
    assert aggregator.finish().n_pairs == 0
    with pytest.raises(MlnbError, match="finished"):
        aggregator.finish()
    with pytest.raises(MlnbError, match="finished"):
        aggregator.add(SparseCounts.empty(V, K))
