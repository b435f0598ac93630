"""Shared fixtures: a small synthetic corpus and the real data beside the project.

A test that takes more than a few seconds is marked ``@pytest.mark.slow`` where it is defined (the fast tier,
``pytest -m "not slow"``, leaves it out); nothing here marks tests from afar."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlnb.data.synthetic import make_rcv1_like

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
RCV1_SUBSET = SHARED_DATA / "rcv1subset" / "rcv1subset1.svm.gz"


#: a whole-suite session of at least this many selected tests compiles every kernel first (pytest_collection_finish)
PRECOMPILE_FROM_TESTS = 100


def _whole_suite(config) -> bool:
    """Whether pytest was given no paths, or the tests folder itself (``-m`` and ``-k`` may still select)."""
    return not config.args or [Path(arg).resolve() for arg in config.args] == [Path(config.rootpath, "tests")]


def _precompile(config) -> None:
    """Compile every listed kernel combination into numba's cache, in parallel processes, as the first
    `mlnb run` does (``mlnb.precompile.ensure_compiled``; nothing to do where the cache already holds them)."""
    from mlnb import precompile

    marker = precompile.ready_marker()
    if marker is not None and not marker.exists():
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"compiling mlnb's kernels into numba's cache first, in "
                                f"{precompile.worker_processes()} processes (once per change of the kernels)")
    precompile.ensure_compiled()


def _parallel_controller(config) -> bool:
    """Whether this process hands the tests to pytest-xdist workers (``-n N``) and runs none itself."""
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))


#: the test files of the most seconds in a whole-suite run (`--durations=0`, longest first: a fresh numba
#: compile, the tutorials, a reference table, whole runs): under pytest-xdist (a file per process, in this order:
#: `--no-loadscope-reorder` in pyproject.toml) they are handed out first, so that no process is left running one
#: of them alone at the end while the others wait
LONGEST_FILES = ("tests/test_precompile.py", "tests/test_init.py", "tests/test_study_contract.py", "tests/test_docs.py",
                 "tests/test_study.py", "tests/test_cli.py", "tests/models/test_sklearn_checks.py",
                 "tests/test_real_configs.py", "tests/test_reference_results.py")


def pytest_collection_modifyitems(config, items):
    """The tests of ``LONGEST_FILES`` first, every file's tests in their own order."""
    def longest_first(item) -> int:
        path = Path(str(item.fspath)).resolve()
        return next((rank for rank, name in enumerate(LONGEST_FILES) if path == Path(config.rootpath, name)),
                    len(LONGEST_FILES))
    items.sort(key=longest_first)  # a stable sort: the order within each group is kept


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """Under pytest-xdist, the controller compiles the kernels before it starts the workers: the workers
    would otherwise each compile the whole list at once, into the same cache."""
    config = session.config
    if _parallel_controller(config) and _whole_suite(config) and not config.option.collectonly:
        _precompile(config)


def pytest_collection_finish(session):
    """When the whole suite runs in this process, compile every kernel before the first test (``_precompile``).
    On a cold cache (a fresh CI checkout) the tests before the first CLI study would otherwise compile their
    kernels one at a time, on one core, each inside whichever test first calls it. Targeted runs (a file, a
    few tests picked with -k) compile on use, as before: the whole list would take longer than the kernels
    they call. An xdist worker finds them compiled by its controller (``pytest_sessionstart``)."""
    config = session.config
    if (hasattr(config, "workerinput") or not _whole_suite(config) or len(session.items) < PRECOMPILE_FROM_TESTS
            or config.option.collectonly):
        return
    _precompile(config)


def _write_svmlight_shards(folder: Path, corpus, parts: int) -> str:
    """``corpus``'s documents, in order, as ``parts`` multilabel svmlight files part-0.svm, part-1.svm, ... in
    ``folder``; their glob (for ``[data.svmlight] path``)."""
    import numpy as np
    from sklearn.datasets import dump_svmlight_file

    for i, rows in enumerate(np.array_split(np.arange(corpus.X.shape[0]), parts)):
        dump_svmlight_file(corpus.X[rows], corpus.Y[rows].toarray(), str(folder / f"part-{i}.svm"), multilabel=True,
                           zero_based=False)
    return f"{folder}/part-*.svm"


@pytest.fixture(scope="session")
def svmlight_shards():
    """``svmlight_shards(folder, corpus, parts)``: write a synthetic corpus as svmlight shards, for the tests of
    streamed studies; -> their glob."""
    return _write_svmlight_shards


def _write_svmlight_study(folder: Path, corpus, parts: int, rest: str, chunk_size: int) -> Path:
    """``corpus`` as ``parts`` svmlight shards in ``folder`` and ``folder``/study.toml reading them (``[data]`` with
    ``chunk_size``, ``[data.svmlight]`` with the corpus's shape) followed by ``rest`` (the models, eval and report
    tables); -> the config's path."""
    glob = _write_svmlight_shards(folder, corpus, parts)
    V, K = corpus.X.shape[1], corpus.Y.shape[1]
    config = folder / "study.toml"
    config.write_text(f'[data]\nsource = "svmlight"\nchunk_size = {chunk_size}\n[data.svmlight]\npath = "{glob}"\n'
                      f"n_features = {V}\nn_categories = {K}\n{rest.lstrip()}")
    return config


@pytest.fixture(scope="session")
def svmlight_study():
    """``svmlight_study(folder, corpus, parts, rest, chunk_size=200)``: a synthetic corpus as svmlight shards and a
    study config that reads them, ``rest`` (its models, eval and report tables) after the data tables; -> its path."""
    return lambda folder, corpus, parts, rest, chunk_size=200: _write_svmlight_study(folder, corpus, parts, rest,
                                                                                     chunk_size)


@pytest.fixture(scope="session")
def dask_address():
    """The scheduler address of one Dask LocalCluster of 2 worker processes of 1 thread (what a study with
    ``engine.n_workers = 2`` starts: ``mlnb.backends.dask.DaskBackend``), started when a test first asks and shared
    by the session's tests that run studies on Dask through ``engine.address`` (tests of starting, losing or
    killing a cluster start their own). Each cluster costs its workers' start, imports and kernel loads; a study
    on an address runs the same tasks on the same 2 workers."""
    pytest.importorskip("distributed")
    import logging

    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.CRITICAL, env={"NUMBA_NUM_THREADS": "1"})
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def small_corpus():
    """3,000 documents, 2,000 words, 20 categories: seconds to fit anything."""
    return make_rcv1_like(n_documents=3000, n_features=2000, n_categories=20, seed=7)


@pytest.fixture(scope="session")
def rcv1_subset():
    """The real RCV1-v2 subset (6,000 documents) from ../shared/data, or a skip."""
    if not RCV1_SUBSET.is_file():
        pytest.skip(f"real data not found at {RCV1_SUBSET} (../shared/data is beside the project "
                    "only in the development checkout)")
    from mlnb.data.svmlight import load_svmlight_dataset

    return load_svmlight_dataset(RCV1_SUBSET, n_features=47236, seed=0)


@pytest.fixture(scope="session")
def output_with_numba_threads():
    """``run(script, threads, *args)`` -> the script's stdout split on whitespace, from a subprocess
    started with NUMBA_NUM_THREADS = threads (it takes effect only at start-up). The scripts print
    numba.get_num_threads() first, then digests of what must not depend on it."""

    def run(script: str, threads: int, *args: str) -> list[str]:
        env = {**os.environ, "NUMBA_NUM_THREADS": str(threads)}
        done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    return run
