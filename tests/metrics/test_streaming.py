"""Streaming evaluation: a spilled test set evaluates exactly as evaluate() on the whole matrices."""

import mmap

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from mlnb.decision import fit_decision_rule
from mlnb.errors import MlnbError
from mlnb.metrics import evaluate
from mlnb.metrics.binned import Grid
from mlnb.metrics.evaluation import reliability_table
from mlnb.metrics.streaming import INITIAL_CAPACITY, RunningSums, ScoreSpill, evaluate_spilled

BOUNDED = ("micro_auc", "micro_average_precision")  # binned, within the summary's *_max_error


def _test_set(n: int, seed: int = 2):
    """n documents × 9 categories (one never positive, one always), float32 log-odds with ties
    and a few infinities, decisions and calibrated log-odds of their own."""
    rng = np.random.default_rng(seed)
    Y = rng.random((n, 9)) < np.array([0.4, 0.2, 0.1, 0.05, 0.02, 0.0, 1.0, 0.3, 0.01])
    S = np.round(rng.normal(size=Y.shape) + 1.8 * Y - 1.0, 2).astype(np.float32)
    S[::97, 3], S[::89, 2] = np.inf, -np.inf
    decisions = rng.random(Y.shape) < 0.2
    probability = np.clip(0.7 * S.astype(np.float64) + rng.normal(0, 0.3, Y.shape), -30, 30)
    probability[::53, 1] = -np.inf
    return Y, S, decisions, probability


def _spill(folder, Y, S, chunk: int, decisions=None, probability=None, sparse=True, **settings) -> ScoreSpill:
    spill = ScoreSpill(folder, Y.shape[1], **settings)
    for start in range(0, len(S), chunk):
        rows = slice(start, start + chunk)
        spill.append(sp.csr_matrix(Y[rows]) if sparse else Y[rows], S[rows],
                     decisions=None if decisions is None else decisions[rows],
                     probability_scores=None if probability is None else probability[rows])
    spill.close()
    return spill


def assert_same_evaluation(got, expected, tolerance: float = 1e-9):
    """Every per-category column, summary key, grid, curve, calibration bin and baseline equal to
    ``tolerance``; micro AUC / AP within the bound the summary states."""
    table, reference = got.per_category, expected.per_category
    assert list(table.columns) == list(reference.columns)
    for column in reference.columns:
        if reference[column].dtype.kind == "f":
            np.testing.assert_allclose(table[column], reference[column], rtol=0, atol=tolerance, err_msg=column)
        else:
            assert table[column].tolist() == reference[column].tolist(), column
    for key, value in expected.summary.items():
        if key in BOUNDED:
            bound = got.summary[f"{key}_max_error"]
            assert abs(got.summary[key] - value) <= bound + 1e-12, key
            assert bound < 0.01, key
        elif isinstance(value, str):
            assert got.summary[key] == value, key
        else:
            assert got.summary[key] == pytest.approx(value, abs=tolerance, nan_ok=True), key
    np.testing.assert_array_equal(got.excluded, expected.excluded)
    np.testing.assert_array_equal(got.grid, expected.grid)
    np.testing.assert_allclose(got.roc_tpr, expected.roc_tpr, rtol=0, atol=tolerance)
    np.testing.assert_allclose(got.gains, expected.gains, rtol=0, atol=tolerance)
    assert got.curves.keys() == expected.curves.keys()
    for k, curve in expected.curves.items():
        for name in ("thresholds", "tp", "fp"):
            np.testing.assert_array_equal(getattr(got.curves[k], name), getattr(curve, name))
    pd.testing.assert_frame_equal(got.calibration, expected.calibration, rtol=0, atol=tolerance)
    for name, values in expected.baselines.items():
        for key, value in values.items():
            assert got.baselines[name][key] == pytest.approx(value, abs=tolerance, nan_ok=True), (name, key)


@pytest.mark.parametrize("chunk", [1, 7, 64, 250, 10_000])
def test_spilled_evaluation_equals_evaluate(tmp_path, chunk):
    n = 250 if chunk == 1 else 600  # chunks of one document: fewer of them
    Y, S, _, _ = _test_set(n)
    spill = _spill(tmp_path / "spill", Y, S, chunk, sparse=chunk % 2 == 0)
    got = evaluate_spilled(spill, curve_categories=[0, 3, 5])
    expected = evaluate(sp.csr_matrix(Y), S, curve_categories=[0, 3, 5])
    assert_same_evaluation(got, expected)
    assert got.summary["micro_auc_max_error"] >= 0 and got.summary["micro_average_precision_max_error"] >= 0


def test_decisions_probabilities_and_exclusions_given_chunk_wise(tmp_path):
    Y, S, decisions, probability = _test_set(1500, seed=5)
    exclude = {2: "untrainable", 4: "no training positive"}
    prevalence = np.linspace(0.01, 0.5, 9)
    spill = _spill(tmp_path / "spill", Y, S, 333, decisions=sp.csr_matrix(decisions), probability=probability,
                   threshold=0.3, top_k=3, exclude=exclude)
    got = evaluate_spilled(spill, [f"c{k}" for k in range(9)], roc_points=21, curve_categories=None,
                           train_prevalence=prevalence)
    expected = evaluate(Y, S, [f"c{k}" for k in range(9)], threshold=0.3, roc_points=21, top_k=3,
                        decisions=decisions, probability_scores=probability, exclude=exclude,
                        train_prevalence=prevalence)
    assert_same_evaluation(got, expected)
    assert (got.per_category["excluded"] == expected.per_category["excluded"]).all()
    pd.testing.assert_frame_equal(spill.sums.uncalibrated_table(), reliability_table(Y, S))


def test_pcut_decides_a_spill_column_by_column_as_it_decides_scores_in_memory(tmp_path):
    Y, S, _, _ = _test_set(1500, seed=7)  # ties (two decimals) and infinite scores
    prevalence = np.array([0.4, 0.2, 0.1, 0.05, 0.02, 0.0, 1.0, 0.3, 0.01])
    rule = fit_decision_rule("pcut", train_prevalence=prevalence)
    spill = _spill(tmp_path / "spill", Y, S, 333)
    got = evaluate_spilled(spill, curve_categories=[0, 3], train_prevalence=prevalence,
                           decided_in_column=rule.decided_in_column)
    expected = evaluate(Y, S, curve_categories=[0, 3], decisions=rule.decide(S), train_prevalence=prevalence)
    for column in ("precision", "recall", "f1", "accuracy", "tp", "fp", "fn", "tn"):  # the same decisions
        np.testing.assert_array_equal(got.per_category[column], expected.per_category[column], err_msg=column)
    assert_same_evaluation(got, expected)


def test_spill_grows_past_its_initial_room_and_reopens(tmp_path):
    Y, S, decisions, _ = _test_set(700, seed=8)
    spill = _spill(tmp_path / "spill", Y, S, 130, decisions=decisions, expected_documents=100)  # 100 -> 800
    assert spill._capacity == 800 and INITIAL_CAPACITY == 1024
    for k in range(9):
        np.testing.assert_array_equal(spill.scores_column(k), S[:, k])
        np.testing.assert_array_equal(spill.positives(k), np.flatnonzero(Y[:, k]))
    reopened = ScoreSpill.open(tmp_path / "spill")
    assert_same_evaluation(evaluate_spilled(reopened), evaluate(Y, S, decisions=decisions, curve_categories=()),
                           tolerance=1e-9)
    with pytest.raises(MlnbError, match="closed"):
        reopened.append(Y[:2], S[:2], decisions=decisions[:2])



@pytest.mark.parametrize("threads", [1, 3])
def test_a_chunk_written_in_blocks_of_categories_by_several_threads_is_the_same_file(tmp_path, monkeypatch, threads):
    """Each chunk's scores are transposed and written in blocks of categories on a thread pool (down to
    one category a block here): the file holds each category's scores in order, as one writer left it."""
    import numba

    from mlnb.metrics import streaming

    Y, S, decisions, _ = _test_set(700, seed=5)
    monkeypatch.setattr(streaming, "WRITE_PIECE_VALUES", 1)
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        spill = _spill(tmp_path / "spill", Y, S, 130, decisions=decisions, expected_documents=700)
    finally:
        numba.set_num_threads(before)
    stored = np.fromfile(tmp_path / "spill" / "scores.bin", dtype=np.float32).reshape(9, -1)
    np.testing.assert_array_equal(stored[:, :700], S.T)
    for k in range(9):
        np.testing.assert_array_equal(spill.scores_column(k), S[:, k])
    assert_same_evaluation(evaluate_spilled(spill), evaluate(Y, S, decisions=decisions, curve_categories=()))

def test_concatenated_spills_evaluate_as_one(tmp_path):
    Y, S, decisions, _ = _test_set(900, seed=4)
    exclude = [3]
    parts = [_spill(tmp_path / f"part-{i}", Y[rows], S[rows], 100, decisions=decisions[rows], exclude=exclude)
             for i, rows in enumerate([slice(0, 250), slice(250, 250), slice(250, 900)])]  # one part empty
    merged = ScoreSpill.concatenate([parts[0], tmp_path / "part-1", parts[2]], tmp_path / "merged")
    assert merged.n_documents == 900 and merged.closed
    for k in range(9):
        np.testing.assert_array_equal(merged.scores_column(k), S[:, k])
        np.testing.assert_array_equal(merged.positives(k), np.flatnonzero(Y[:, k]))
    expected = evaluate(Y, S, decisions=decisions, exclude=exclude, curve_categories=[1])
    assert_same_evaluation(evaluate_spilled(merged, curve_categories=[1]), expected)
    other = _spill(tmp_path / "other", Y[:10], S[:10], 10, decisions=decisions[:10], top_k=3, exclude=exclude)
    with pytest.raises(MlnbError, match="top_k"):
        ScoreSpill.concatenate([parts[0], other], tmp_path / "bad")


def test_columns_are_read_memory_mapped_one_category_at_a_time(tmp_path, monkeypatch):
    Y, S, _, _ = _test_set(400)
    spill = _spill(tmp_path / "spill", Y, S, 128, expected_documents=500)
    # on disk category-major: row k of a K × capacity float32 file is category k
    stored = np.fromfile(tmp_path / "spill" / "scores.bin", dtype=np.float32).reshape(9, -1)
    assert stored.shape == (9, 500)
    np.testing.assert_array_equal(stored[:, :400], S.T)
    reads = []
    original = ScoreSpill.scores_column

    def recorded(self, k):
        column = original(self, k)
        reads.append((k, column))
        return column
    monkeypatch.setattr(ScoreSpill, "scores_column", recorded)
    evaluate_spilled(spill, n_threads=2)
    assert sorted(k for k, _ in reads) == list(range(9))  # each column once
    for _, column in reads:
        assert isinstance(column, np.memmap) and column.flags.c_contiguous and not column.flags.writeable
        assert column.shape == (400,) and str(column.filename).endswith("scores.bin")
        # the map covers this row alone (plus the alignment of its start), never the K × n file
        assert len(column._mmap) <= 400 * 4 + mmap.ALLOCATIONGRANULARITY
    assert isinstance(spill.positives(0), np.memmap)


def test_running_sums_of_two_halves_add_up_to_the_whole():
    Y, S, decisions, probability = _test_set(800)
    settings = {"n_categories": 9, "threshold": 0.4, "top_k": 2, "exclude": [1]}

    def sums(rows):
        return RunningSums.start(**settings).add(Y[rows], S[rows], decisions=decisions[rows],
                                                 probability_scores=probability[rows])
    halves, whole = sums(slice(0, 300)) + sums(slice(300, None)), sums(slice(None))
    assert halves.n_documents == whole.n_documents == 800
    for field in whole.pointwise:
        np.testing.assert_allclose(halves.pointwise[field], whole.pointwise[field], rtol=1e-12)
    np.testing.assert_array_equal(halves.decided, whole.decided)
    np.testing.assert_allclose(halves.ranking, whole.ranking, rtol=1e-12)
    assert halves.precision_hits == whole.precision_hits
    np.testing.assert_array_equal(halves.labels_histogram, whole.labels_histogram)
    with pytest.raises(MlnbError, match="top_k"):
        halves + RunningSums.start(9, threshold=0.4, top_k=3, exclude=[1])
    with pytest.raises(MlnbError, match="decisions"):
        whole + RunningSums.start(**settings).add(Y[:5], S[:5], probability_scores=probability[:5])


def test_bad_chunks_are_refused_with_one_line(tmp_path):
    Y, S, decisions, _ = _test_set(50)
    spill = ScoreSpill(tmp_path / "spill", 9)
    spill.append(Y[:10], S[:10])
    bad = S[10:20].copy()
    bad[3, 4] = np.nan
    for args, kwargs, match in [((Y[10:20], bad), {}, "chunk 2 .*NaN"),
                                ((Y[10:20], S[10:20, :8]), {}, r"shape \(m, 9\)"),
                                ((Y[10:21], S[10:20]), {}, "Y has shape"),
                                ((2 * Y[10:20].astype(int), S[10:20]), {}, "0/1"),
                                ((Y[10:20], S[10:20]), {"decisions": decisions[10:20]}, "decisions given"),
                                ((Y[10:20], sp.csr_matrix(S[10:20])), {}, "sparse")]:
        with pytest.raises(MlnbError, match=match) as error:
            spill.append(*args, **kwargs)
        assert "\n" not in str(error.value)
    assert spill.n_documents == 10  # nothing of a refused chunk was kept
    spill.append(Y[10:20], S[10:20])
    assert spill.sums.n_documents == spill.n_documents == 20
    with pytest.raises(MlnbError, match="already holds a spill"):
        ScoreSpill(tmp_path / "spill", 9)
    with pytest.raises(MlnbError, match="no documents"):
        evaluate_spilled(ScoreSpill(tmp_path / "empty", 9))
    with pytest.raises(MlnbError, match="finished spill"):
        ScoreSpill.open(tmp_path / "nowhere")
    with pytest.raises(MlnbError, match="category_names"):
        evaluate_spilled(spill, ["a", "b"])


def test_micro_bounds_hold_on_continuous_scores(tmp_path):
    rng = np.random.default_rng(12)
    Y = rng.random((2000, 20)) < rng.uniform(0.005, 0.3, 20)
    S = (rng.normal(size=Y.shape) * 2 + 3 * Y - 4).astype(np.float32)
    spill = _spill(tmp_path / "spill", Y, S, 1000)
    expected = evaluate(Y, S, curve_categories=())
    for bins in (1 << 20, 64):
        got = evaluate_spilled(spill, micro_bins=bins)
        for key in BOUNDED:
            assert abs(got.summary[key] - expected.summary[key]) <= got.summary[f"{key}_max_error"] + 1e-12
        if bins == 64:
            assert got.summary["micro_auc_max_error"] > 1e-3  # coarse: wide, but still holds
        else:
            assert got.summary["micro_auc_max_error"] < 1e-5
            assert got.per_category["auc"].tolist() == expected.per_category["auc"].tolist()
    assert Grid().bins == 1 << 16
