"""Scores that once gave silently wrong statistics with exit 0, or a traceback: extreme spreads
(0 and 5e-324) in the compiled AUC kernels, NaN in micro_auc, int64 scores beyond 2^53, odd dtypes,
labels other than 0/1, one bootstrap resample, Gaussian NB on constant columns, colliding plot files.

Every score array now enters the metrics through ``mlnb.metrics._inputs`` and every kernel picks
its buckets with a scale that is finite whatever the spread (``ranking._bucket_scale``)."""

from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.metrics import roc_auc_score
from sklearn.naive_bayes import GaussianNB
from typer.testing import CliRunner

from mlnb import NaiveBayes
from mlnb.cli import app
from mlnb.errors import MlnbError
from mlnb.metrics import (BinnedScores, Grid, ScoreSpill, auc_confidence_intervals, bootstrap_intervals,
                          evaluate, evaluate_spilled, label_ranking_metrics, micro_auc, roc_auc)
from mlnb.metrics.significance import delong_test, delong_tests
from mlnb.scores import RUN_FILES
from mlnb.studies.compare import compare_runs, load_scores

TINY = 5e-324  # the smallest subnormal: it halves to 0


def labelled(n=60, K=4, seed=1):
    """(Y (n × K) 0/1 with a positive and a negative in every column, scores A, B (n × K) normal)."""
    rng = np.random.default_rng(seed)
    Y = (rng.random((n, K)) < 0.3).astype(np.int64)
    Y[:3], Y[-3:] = 1, 0
    return Y, rng.normal(size=(n, K)), rng.normal(size=(n, K))


def extreme(A, column=1):
    """A copy of A whose ``column`` holds only 0 and 5e-324 (a spread whose half is 0)."""
    A = A.copy()
    A[:, column] = 0.0
    A[::4, column] = TINY
    return A


def sklearn_aucs(Y, S):
    return np.array([roc_auc_score(Y[:, k], S[:, k]) for k in range(S.shape[1])])


# -- 1. extreme spreads in the compiled kernels ---------------------------------------------------

@pytest.mark.slow
def test_roc_auc_2d_with_a_subnormal_spread_is_exact_and_the_next_call_still_works():
    Y, A, _ = labelled()
    S = extreme(A)
    for _ in range(2):  # the lost division by zero used to break the next call (SystemError)
        np.testing.assert_allclose(roc_auc(Y, S), sklearn_aucs(Y, S), rtol=0, atol=1e-15)
    np.testing.assert_allclose(roc_auc(Y, A), sklearn_aucs(Y, A), rtol=0, atol=1e-15)
    spread = np.zeros(10)
    spread[[0, 1, 5]], spread[7] = 1e-323, -1e-323  # (T − ½) / span overflows: a NaN bucket before
    y = np.r_[1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    assert roc_auc(np.c_[y, y], np.c_[spread, spread])[0] == pytest.approx(roc_auc_score(y, spread), abs=1e-15)


@pytest.mark.slow
def test_delong_with_a_subnormal_spread_is_exact_deterministic_and_leaves_other_categories_alone():
    Y, A, B = labelled()
    plain = delong_tests(Y, A, B)
    runs = [delong_tests(Y, extreme(A), B) for _ in range(3)]
    for table in runs:
        pd.testing.assert_frame_equal(table, runs[0])  # the same numbers every time
        np.testing.assert_allclose(table["auc_a"], sklearn_aucs(Y, extreme(A)), rtol=0, atol=1e-15)
        untouched = [0, 2, 3]
        pd.testing.assert_frame_equal(table.drop(columns="p_holm").iloc[untouched],
                                      plain.drop(columns="p_holm").iloc[untouched])
        assert table["p_value"].between(0, 1).all()
    low, high = auc_confidence_intervals(Y, extreme(A))[1]
    assert 0 <= low <= roc_auc_score(Y[:, 1], extreme(A)[:, 1]) <= high <= 1


def _scores_folder(root, Y, scores: dict):
    """A results folder holding only what ``mlnb compare`` reads: scores.npz (arrays as given, no
    float32 cast: a crafted file) and the completed-run files."""
    root.mkdir()
    for name in RUN_FILES:
        (root / name).write_text("")
    Y = sp.csr_matrix(Y)
    K = Y.shape[1]
    np.savez(root / "scores.npz", labels_indptr=Y.indptr, labels_indices=Y.indices, labels_shape=np.array(Y.shape),
             category_names=np.array([f"c{k}" for k in range(K)]), train_positives=np.full(K, 5),
             model_keys=np.array(list(scores)), model_labels=np.array(list(scores)), task=np.array("multilabel"),
             excluded=np.empty(0, dtype=np.int64), **{f"scores_{k}": v for k, v in scores.items()})
    return root


def test_compare_on_a_crafted_scores_file_reports_the_true_aucs(tmp_path):
    Y, A, B = labelled()
    folder = _scores_folder(tmp_path / "run", Y, {"a": extreme(A), "b": B})
    outputs = []
    for attempt in range(2):
        result = CliRunner().invoke(app, ["compare", str(folder), "--model-a", "a", "--model-b", "b",
                                          "--out", str(tmp_path / f"out{attempt}")])
        assert result.exit_code == 0, result.output
        outputs.append(result.output.splitlines()[2:4])  # the counts and the sign test
        (written,) = (tmp_path / f"out{attempt}" / "compare").iterdir()
        table = pd.read_csv(written / "comparison.csv")
        np.testing.assert_allclose(table["auc_a"], sklearn_aucs(Y, extreme(A)), rtol=0, atol=1e-12)
        np.testing.assert_allclose(table["auc_b"], sklearn_aucs(Y, B), rtol=0, atol=1e-12)
        assert table["p_value"].between(0, 1).all()
    assert outputs[0] == outputs[1]


# -- 2. NaN: micro_auc refuses it as roc_auc does ------------------------------------------------

def test_micro_auc_refuses_nan_like_roc_auc_naming_the_argument():
    Y, A, _ = labelled()
    A[5, 2] = np.nan
    for metric, name in ((micro_auc, "micro_auc: scores"), (roc_auc, "roc_auc: scores")):
        with pytest.raises(MlnbError, match=f"^{name}: NaN score at document 5, category 2") as error:
            metric(Y, A)
        assert "\n" not in str(error.value)


def test_label_ranking_metrics_refuse_nan_before_the_parallel_loop():
    Y, A, _ = labelled(n=3000, K=3)
    A[2500, 1] = np.nan  # a NaN made the rank 0 there: a division by zero inside the kernel
    with pytest.raises(MlnbError, match="NaN score at document 2500, category 1"):
        label_ranking_metrics(Y, A)


# -- 3. integer scores beyond 2^53 ----------------------------------------------------------------

def test_int64_scores_that_float64_cannot_hold_are_refused_and_exact_ones_ranked():
    big = 2 ** 53
    y = np.array([1, 0, 1, 0])
    tied_in_float64 = np.array([big + 1, big, big + 3, big + 2], dtype=np.int64)  # AUC 1 as integers
    Y = np.c_[y, y]
    for call in (lambda: roc_auc(y, tied_in_float64), lambda: roc_auc(Y, np.c_[tied_in_float64, tied_in_float64]),
                 lambda: micro_auc(Y, np.c_[tied_in_float64, tied_in_float64]),
                 lambda: evaluate(Y, np.c_[tied_in_float64, tied_in_float64]),
                 lambda: delong_test(y, tied_in_float64, tied_in_float64)):
        with pytest.raises(MlnbError, match="not exactly representable in float64"):
            call()
    exact = np.array([3, 1, 2 ** 60, -(2 ** 53)], dtype=np.int64)  # every value exact in float64
    assert roc_auc(y, exact) == roc_auc(y, exact.astype(np.float64)) == 1.0
    assert roc_auc(y, np.array([3, 1, 2, 0], dtype=np.uint64)) == 1.0


# -- dtypes: object and complex refused in one line, float16 converted ---------------------------

def test_object_and_complex_scores_are_refused_and_float16_is_converted_everywhere():
    Y, A, B = labelled(n=40, K=3)
    entries = {"roc_auc 1-D": lambda S: roc_auc(Y[:, 0], S[:, 0]), "roc_auc": lambda S: roc_auc(Y, S),
               "micro_auc": lambda S: micro_auc(Y, S), "evaluate": lambda S: evaluate(Y, S).summary["macro_auc"],
               "delong_tests": lambda S: delong_tests(Y, S, B)["auc_a"].to_numpy(),
               "auc_confidence_intervals": lambda S: auc_confidence_intervals(Y, S),
               "bootstrap_intervals": lambda S: bootstrap_intervals(Y, S, n_boot=3)["macro_auc"]}
    half = A.astype(np.float16)
    for name, call in entries.items():
        for bad, needle in ((A.astype(object), "object"), (A + 1j, "complex")):
            with pytest.raises(MlnbError, match=needle) as error:
                call(bad)
            assert "\n" not in str(error.value), name
        if name not in ("auc_confidence_intervals", "bootstrap_intervals"):  # (their float32 kernels: compile time)
            np.testing.assert_array_equal(call(half), call(half.astype(np.float32)), err_msg=name)


# -- 6. labels other than 0/1; one bootstrap resample -------------------------------------------

@pytest.mark.parametrize("labels", ["-1/+1", "0.5"])
def test_labels_other_than_0_1_are_refused_in_one_line(labels):
    Y, A, B = labelled(n=40, K=3)
    bad = 2 * Y - 1 if labels == "-1/+1" else np.where(Y == 1, 0.5, 0.0)
    for call in (lambda: roc_auc(bad[:, 0], A[:, 0]), lambda: roc_auc(bad, A), lambda: micro_auc(bad, A),
                 lambda: delong_tests(bad, A, B), lambda: auc_confidence_intervals(bad, A),
                 lambda: roc_auc(sp.csr_matrix(bad), A)):
        with pytest.raises(MlnbError, match="labels must be 0/1") as error:
            call()
        assert "\n" not in str(error.value)


def test_one_bootstrap_resample_is_refused_with_the_minimum():
    Y, A, _ = labelled(n=40, K=3)
    with pytest.raises(MlnbError, match="at least 2 resamples"):
        bootstrap_intervals(Y, A, n_boot=1)
    low, high = bootstrap_intervals(Y, A, n_boot=2, seed=1)["macro_auc"]
    assert low < high


# -- binned and spilled: a grid that float64 cannot cut ------------------------------------------

def test_spilled_evaluation_of_a_subnormal_spread_and_a_grid_too_narrow_for_float64(tmp_path):
    Y, A, _ = labelled(n=40, K=3)
    S = np.zeros_like(A)
    S[::3] = TINY  # every finite score is 0 or 5e-324: no linear grid of float64 fits between them
    with ScoreSpill(tmp_path / "spill", 3, dtype=np.float64) as spill:
        spill.append(sp.csr_matrix(Y), S)
    evaluation = evaluate_spilled(spill)
    exact = evaluate(Y, S)
    np.testing.assert_array_equal(evaluation.per_category["auc"], exact.per_category["auc"])
    summary = evaluation.summary
    assert abs(summary["micro_auc"] - exact.summary["micro_auc"]) <= summary["micro_auc_max_error"]
    with pytest.raises(MlnbError, match="too many for"):
        Grid(0.0, 1e-323, bins=1, spacing="linear")  # accepted before, with an infinite scale: bins out of range
    histograms = BinnedScores.from_scores(Y, S, Grid(-1.0, 1.0, bins=4, spacing="linear"))
    assert histograms.n_pos.sum() == Y.sum()


# -- 4. Gaussian NB on constant columns ------------------------------------------------------------

def test_gaussian_nb_on_constant_columns_scores_finite_prior_log_odds():
    n = 30
    Y = np.zeros((n, 2), dtype=np.int64)
    Y[::2, 0], Y[::3, 1] = 1, 1
    X = np.full((n, 3), 2.0)
    X[:, 2] = 0.0
    for var_smoothing in (1e-9, 0.0):
        model = NaiveBayes(event_model="gaussian", var_smoothing=var_smoothing).fit(X, Y)
        scores = model.decision_function(np.vstack([X, [[5.0, -3.0, 1e3]]]))
        assert np.isfinite(scores).all() and model.epsilon_ > 0
        for k in range(2):
            with np.errstate(all="ignore"):
                reference = GaussianNB(var_smoothing=max(var_smoothing, 1e-9)).fit(X, Y[:, k])
            # scikit-learn's own scores are NaN here (ε = 0); the features tell nothing, so the log-odds
            # are those of its class prior
            prior = np.log(reference.class_prior_[1]) - np.log(reference.class_prior_[0])
            np.testing.assert_allclose(scores[:, k], prior, rtol=1e-6)
    # one informative column beside constant ones: ε as scikit-learn's, so its log-odds are too
    X[:, 1] = np.random.default_rng(0).normal(size=n) + Y[:, 0]
    model = NaiveBayes(event_model="gaussian").fit(X, Y)
    reference = GaussianNB().fit(X, Y[:, 0])
    assert model.epsilon_ == pytest.approx(reference.epsilon_, rel=1e-9)
    log_proba = reference.predict_log_proba(X)
    np.testing.assert_allclose(model.decision_function(X)[:, 0], log_proba[:, 1] - log_proba[:, 0], rtol=1e-4,
                               atol=1e-4)


# -- 5. two compared pairs, one plot file --------------------------------------------------------

def test_compared_pairs_whose_file_names_collide_get_distinct_plot_files(tmp_path, monkeypatch):
    from mlnb.report import plots, results

    written = []

    def record(*args):
        path = next(a for a in args if hasattr(a, "suffix"))
        written.append(path.name)
        return path

    for name in ("accuracy_per_category", "roc_for_category", "lift_for_category", "calibration", "auc_by_frequency",
                 "auc_scatter", "auc_difference", "confusion_matrix"):
        monkeypatch.setattr(plots, name, record)
    monkeypatch.setattr(plots, "study_colors", lambda result: defaultdict(lambda: "k"))
    pairs = [("x_vs", "y"), ("x", "vs_y"), ("NB", "lr"), ("nb", "LR"), ("nb", "lr2")]
    result = SimpleNamespace(config=SimpleNamespace(report=SimpleNamespace(category=0), task="multilabel"),
                             comparisons=[SimpleNamespace(name_a=a, name_b=b) for a, b in pairs], models=[],
                             category_names=["c0", "c1"])  # more than one: the per-category figures are drawn
    made = results._study_plots(result, tmp_path)
    pair_files = [name for name in written if name.startswith(("auc_scatter_", "auc_difference_"))]
    assert len(pair_files) == 2 * len(pairs) == len({name.casefold() for name in pair_files})
    assert "auc_scatter_nb_vs_lr2.png" in pair_files  # a pair that collides with none keeps its name
    assert len(made) == len(written)


# -- compare's loader: scores that the metrics would refuse ---------------------------------------

def test_compare_refuses_a_scores_file_with_int64_scores_beyond_2_53(tmp_path):
    Y, A, B = labelled(n=40, K=3)
    big = (2 ** 53 + np.argsort(np.argsort(A, axis=0), axis=0)).astype(np.int64)  # distinct integers, ties in float64
    folder = _scores_folder(tmp_path / "run", Y, {"a": big, "b": B})
    needle = r"scores\.npz: model 'a': scores_a: the int64 score .* not exactly representable"
    with pytest.raises(MlnbError, match=needle):
        load_scores(folder)
    result = CliRunner().invoke(app, ["compare", str(folder), "--model-a", "a", "--model-b", "b",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    half = _scores_folder(tmp_path / "half", Y, {"a": A.astype(np.float16), "b": B})  # converted, exactly
    run = load_scores(half)
    assert run.scores["a"].dtype == np.float32
    comparison = compare_runs(run, "a", run, "b")
    np.testing.assert_allclose(comparison.table["auc_a"], sklearn_aucs(Y, A.astype(np.float16)), atol=1e-15)


def test_a_spill_without_room_on_its_disk_is_refused_before_writing(tmp_path, monkeypatch):
    """The test scores on disk grow with the documents: a disk without room for the next chunk's is one
    line naming the folder and engine.spill_folder, before anything of that chunk is written."""
    from mlnb.metrics import streaming

    spill = ScoreSpill(tmp_path / "spill", 3)
    monkeypatch.setattr(streaming.shutil, "disk_usage", lambda path: SimpleNamespace(total=10**6, used=10**6 - 1000,
                                                                                      free=1000))
    Y = sp.csr_matrix(np.eye(3, dtype=np.int8)[np.arange(5000) % 3])
    with pytest.raises(MlnbError, match=r"ScoreSpill .*spill: the next 5,000 documents' scores need .* but the disk has "
                                        r"0\.0 MiB free \(engine\.spill_folder"):
        spill.append(Y, np.zeros((5000, 3), dtype=np.float32))
    assert spill.n_documents == 0
