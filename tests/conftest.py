"""Shared fixtures: a small synthetic corpus and the real data beside the project."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from mlnb.data.synthetic import make_rcv1_like

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
RCV1_SUBSET = SHARED_DATA / "rcv1subset" / "rcv1subset1.svm.gz"

# The fast tier, `pytest -m "not slow"`, leaves out these groups (node-id prefixes), which alone took
# over half of the suite's time (`pytest --durations=0` on the 2-core machine); `pytest` still runs
# them. Every module keeps fast tests beside them. A test can also be marked `@pytest.mark.slow` in
# its own file.
SLOW = {
    # the eval-key command matrix: a CLI run, sweep or curve per [eval] key (~70 runs)
    "tests/test_study.py::test_every_command_honours_every_eval_key": "every eval key × every command",
    "tests/test_study.py::test_four_model_study_runs_end_to_end": "four models on the quickstart corpus",
    # the study contract's `results` fixture runs every streaming kind in memory, streamed and on a Dask
    # LocalCluster (its slowest fixture); the tests of it, and of sweep/curve/compare streamed
    "tests/test_study_contract.py::test_the_same_documents_on_every_engine": "the three-engine fixture",
    "tests/test_study_contract.py::test_every_kind_and_event_model_gives_the_in_memory_answer": "the same",
    "tests/test_study_contract.py::test_scut_decisions_equal_on_every_engine": "the same",
    "tests/test_study_contract.py::test_sweep_and_curve_accept_a_streamed_corpus": "a sweep and a curve, twice",
    "tests/test_study_contract.py::test_compare_pairs_a_streamed_run_with_an_in_memory_one": "two runs",
    # a Dask LocalCluster per fixture or test (worker processes start in seconds each)
    "tests/test_study_streaming.py::test_dask_": "the Dask fixture: a study on a LocalCluster",
    "tests/test_study_streaming.py::test_a_corrupt_shard_is_one_line_and_leaves_no_results[dask]": "a LocalCluster",
    # numba compiles its kernels afresh into an empty cache in a subprocess
    "tests/models/test_logistic.py::test_a_fresh_compilation_and_numbas_cache_give_the_same_bits": "a fresh "
    "numba compilation",
    # fresh interpreters with NUMBA_NUM_THREADS = 1, 2 (or 3), each importing numba and loading its kernels
    "tests/models/test_logistic.py::test_same_results_for_one_and_two_numba_threads": "subprocesses",
    "tests/metrics/test_uncertainty.py::test_bootstrap_plan_same_for_one_and_two_numba_threads": "subprocesses",
    "tests/metrics/test_delong_kernel.py::test_same_numbers_for_one_and_two_numba_threads": "subprocesses",
    "tests/test_threads.py::test_every_stage_gives_the_same_bits_on_one_and_three_threads": "subprocesses",
    # every config of a real corpus in ../shared/data, run whole (each source has fast tests of its own)
    "tests/test_real_configs.py::test_config_runs_on_real_data": "eight real-data studies",
    # many studies in one test: a bench over corpora (its tables and configs have fast tests)
    "tests/studies/test_bench.py::test_bench_writes_ranks_friedman_and_per_corpus_folders": "a bench of studies",
    "tests/studies/test_bench.py::test_bench_curves_give_a_crossover_row_per_corpus_and_pair": "curves per corpus",
    # a fresh interpreter runs a whole study to see what it imports
    "tests/engine/test_array_engine.py::test_importing_mlnb_and_a_cpu_study_never_import_cupy": "a study in a "
    "subprocess",
    "tests/report/test_tracking.py::test_mlflow_is_never_imported_unless_configured": "a study in a subprocess",
    # Dask faults: killed workers and schedulers, and servers waited on until engine.timeout (the backend's
    # map/reduce and a worker replaced mid-pass stay in the fast tier)
    "tests/backends/test_dask_backend.py::test_a_task_that_kills_every_worker_is_given_up_in_one_line": "kills "
    "workers until the retries run out",
    "tests/hostile/test_cli_hardening.py::test_a_worker_killed_while_the_shared_arguments_travel": "a cluster",
    "tests/hostile/test_cli_hardening.py::test_a_killed_scheduler_is_one_line_within_engine_timeout": "a cluster",
    "tests/hostile/test_cli_hardening.py::test_a_server_that_is_not_dask_is_given_up_after": "waits engine.timeout",
    "tests/engine/test_mixing.py::test_mixing_rarer_than_asked_is_one_warning": "a study on a LocalCluster",
    # a signal to a real `mlnb run` process: SIGINT stays in the fast tier, SIGTERM takes the same path
    "tests/hostile/test_outputs_and_signals.py::test_signal_during_a_run_in_a_real_process[15-143]": "a process",
    "tests/hostile/test_outputs_and_signals.py::test_signal_while_the_folder_is_written_removes_the_staging_folder"
    "[15-143]": "a whole run",
    "tests/hostile/test_outputs_and_signals.py::test_category_names_from_data_cannot_become_formulas[multiclass]":
    "a whole run (the multilabel case stays)",
    # fits repeated to compare two ways of computing the same thing (each way has fast tests of its own)
    "tests/models/test_lbfgs.py::test_a_streamed_fit_reaches_the_in_memory_optimum": "full-batch fits, streamed",
    # SVRG to the optimum beside L-BFGS's, with l1 (the multilabel case stays), and on 16k documents
    "tests/models/test_svrg.py::test_reaches_the_optimum_of_lbfgs[multilabel-0.0001]": "two fits to tol, with l1",
    "tests/models/test_svrg.py::test_a_rare_category_saturated_at_a_snapshot_does_not_throw_its_bias_out": "16k "
    "documents",
    "tests/models/test_linear_svm.py::test_parallel_equals_serial": "worker processes",
    "tests/models/test_sklearn_logistic.py::test_same_seed_same_model_and_parallel_equals_serial": "worker processes",
    "tests/backends/test_dask_backend.py::test_a_second_cluster_in_one_process_starts": "a second LocalCluster",
    # the array engine's LR against the CPU engine, option by option on numpy (the default options stay)
    "tests/engine/test_array_engine.py::test_logistic_passes_match_the_cpu_engine[array-numpy-l": "LR fits",
    "tests/engine/test_array_engine.py::test_logistic_passes_match_the_cpu_engine[array-numpy-updater": "LR fits",
    "tests/engine/test_array_engine.py::test_logistic_passes_match_the_cpu_engine[array-numpy-shuffle": "LR fits",
    "tests/models/test_nb_logistic.py::test_numba_and_scipy_kernels_agree_with_a_scale": "both kernels, many passes",
    "tests/hostile/test_scores_hardening.py::test_roc_auc_2d_with_a_subnormal_spread_is_exact": "large arrays",
    # whole runs on real data, and pairs of whole runs (compare's other tests stay)
    "tests/test_multiclass_study.py::test_tweets_configs": "two real-data studies",
    "tests/studies/test_compare.py::test_compare_refuses_different_test_documents": "two runs",
    "tests/studies/test_compare.py::test_compare_two_runs_and_within_one": "two runs",
    "tests/studies/test_compare.py::test_compare_leaves_out_what_the_run_left_out": "two runs",
    "tests/studies/test_compare.py::test_explicit_pairs_of_several_models": "a run of four models",
    "tests/test_multiclass_study.py::test_compare_two_saved_multiclass_runs_pairs_their_decisions": "two runs",
    "tests/test_cli.py::test_lr_warm_start_from_nb_and_sklearn_engine": "two runs",
    "tests/test_cli.py::test_same_config_and_seed_give_the_same_numbers": "two runs",
    "tests/test_study.py::test_curve_micro_f1_follows_the_threshold": "two learning curves",
    # statistics on large or many score columns (the kernels' hand-worked and oracle tests stay)
    "tests/metrics/test_delong_kernel.py::test_tables_equal_per_category_tests_and_column_by_column": "many columns",
    "tests/hostile/test_scores_hardening.py::test_delong_with_a_subnormal_spread_is_exact": "large arrays",
    "tests/report/test_lazy_imports.py::test_importing_the_plots_leaves_the_users_backend_alone": "a subprocess",
}


def pytest_collection_modifyitems(config, items):
    """Mark the groups of ``SLOW`` slow (see there why each is); when the whole suite is collected, warn
    of a prefix that names no test (a test renamed: the fast tier would quietly grow)."""
    matched = set()
    for item in items:
        prefix = next((prefix for prefix in SLOW if item.nodeid.startswith(prefix)), None)
        if prefix is not None:
            item.add_marker(pytest.mark.slow)
            matched.add(prefix)
    for prefix in sorted(set(SLOW) - matched) if _whole_suite(config) else ():
        warnings.warn(pytest.PytestWarning(f"tests/conftest.py SLOW: {prefix!r} names no test"), stacklevel=1)


#: a whole-suite session of at least this many selected tests compiles every kernel first (pytest_collection_finish)
PRECOMPILE_FROM_TESTS = 100


def _whole_suite(config) -> bool:
    """Whether pytest was given no paths, or the tests folder itself (``-m`` and ``-k`` may still select)."""
    return not config.args or [Path(arg).resolve() for arg in config.args] == [Path(config.rootpath, "tests")]


def pytest_collection_finish(session):
    """When the whole suite runs, compile every listed kernel combination into numba's cache before the first
    test, in parallel processes, as the first `mlnb run` does (``mlnb.precompile.ensure_compiled``; nothing
    to do where the cache already holds them). On a cold cache (a fresh CI checkout) the tests before the
    first CLI study would otherwise compile their kernels one at a time in this process, on one core, each
    inside whichever test first calls it. Targeted runs (a file, a few tests picked with -k) compile on use,
    as before: the whole list would take longer than the kernels they call."""
    if (not _whole_suite(session.config) or len(session.items) < PRECOMPILE_FROM_TESTS
            or session.config.option.collectonly):
        return
    from mlnb import precompile

    marker = precompile.ready_marker()
    if marker is not None and not marker.exists():
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"compiling mlnb's kernels into numba's cache first, in "
                                f"{precompile.worker_processes()} processes (once per change of the kernels)")
    precompile.ensure_compiled()


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


# a small quickstart study with progress on (its results folder written), then LR fitted and fingerprinted
# (multilabel with l1, multiclass) with progress off: its output's last line is JSON
FRESH_AND_WARM_SCRIPT = """
import hashlib, json, sys
import numpy as np
from mlnb import progress
from mlnb.config import load_config
from mlnb.data.synthetic import make_rcv1_like
from mlnb.models.logistic import LogisticRegression
from mlnb.report.results import write_results
from mlnb.study import run_study
progress.enable(True)
config = load_config("configs/quickstart.toml", ["data.synthetic.n_documents=2000", "data.synthetic.n_features=2000",
                                                  "eval.bootstrap=0", "report.plots=false"])
folder = write_results(run_study(config), sys.argv[1])
progress.enable(False)
data = make_rcv1_like(n_documents=2000, n_features=1000, n_categories=20, seed=7)
fits = [LogisticRegression(npasses=2, batch_size=300, l1=1e-6).fit(data.X_train, data.Y_train),
        LogisticRegression(npasses=2, batch_size=300, task="multiclass").fit(
            data.X_train, np.asarray(data.Y_train.argmax(axis=1)).ravel())]
parts = [m.weights_.tobytes() + m.bias_.tobytes() for m in fits]
parts += [fits[0].predict_proba(data.X_test).tobytes(), fits[0].predict_proba(data.X_test[:5]).tobytes()]
print(json.dumps({"folder": str(folder), "fingerprint": hashlib.sha256(b"".join(parts)).hexdigest(),
                  "losses": [r["train_loss"] for m in fits for r in m.history_]}))
"""


@pytest.fixture(scope="session")
def first_and_warm_process(tmp_path_factory):
    """Two processes, one after the other, on one NUMBA_CACHE_DIR that is empty before the first, each running
    ``FRESH_AND_WARM_SCRIPT`` (the study first, so that the first process's study compiles what it calls):
    the first compiles every kernel it calls, the second loads them all from the cache. Shared by
    tests/test_timings.py (a first run's compiling apart) and tests/models/test_logistic.py (fresh and cached
    machine code give the same bits), so that the suite compiles these kernels afresh once, not once each.
    -> {"cache": the cache folder, "first" | "warm": (the script's JSON line as a dict, its stderr)}."""
    folder = tmp_path_factory.mktemp("fresh-numba-cache")
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(folder / "numba-cache")}
    found = {"cache": folder / "numba-cache"}
    for name in ("first", "warm"):
        done = subprocess.run([sys.executable, "-c", FRESH_AND_WARM_SCRIPT, str(folder / name)], capture_output=True,
                              text=True, timeout=1200, env=environment, cwd=Path(__file__).resolve().parents[1],
                              check=False)
        assert done.returncode == 0, done.stderr
        found[name] = (json.loads(done.stdout.strip().splitlines()[-1]), done.stderr)
    return found
