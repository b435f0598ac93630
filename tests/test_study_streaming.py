"""A study read chunk by chunk (data.streaming = true), in this process and on a Dask LocalCluster,
against the same study in memory."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.config import load_config
from mlnb.data.sources import open_streams
from mlnb.data.synthetic import make_rcv1_like
from mlnb.metrics.evaluation import evaluate
from mlnb.models.logistic import LogisticRegression
from mlnb.models.naive_bayes import NaiveBayes
from mlnb.study import run_study

N_DOCUMENTS, N_FEATURES, N_CATEGORIES = 6000, 1500, 15


@pytest.fixture(scope="module")
def shards(tmp_path_factory, svmlight_shards):
    """Three svmlight shards of one synthetic corpus, and a config that streams them."""
    folder = tmp_path_factory.mktemp("shards")
    corpus = make_rcv1_like(n_documents=N_DOCUMENTS, n_features=N_FEATURES, n_categories=N_CATEGORIES, seed=3)
    svmlight_shards(folder, corpus, 3)
    config = folder / "stream.toml"
    config.write_text(f"""
[data]
source = "svmlight"
streaming = true
chunk_size = 450
shuffle_buffer = 2
[data.svmlight]
path = "{folder}/part-*.svm"
n_features = {N_FEATURES}
n_categories = {N_CATEGORIES}
[models.nb]
kind = "naive_bayes"
[models.lr]
kind = "logistic"
shuffle = false
npasses = 3
batch_size = 150
[models.nblr]
kind = "nb_logistic"
npasses = 3
batch_size = 150
[eval]
bootstrap = 0
[report]
category = 2
plots = false
""")
    return folder, config


def _in_memory(source):
    """The documents of a chunk source, concatenated."""
    chunks = list(source.chunks(1000))
    return sp.vstack([c.X for c in chunks], format="csr"), sp.vstack([c.Y for c in chunks], format="csr")


@pytest.fixture(scope="module")
def local_result(shards):
    return run_study(load_config(shards[1]))


@pytest.fixture(scope="module")
def split(shards):
    config = load_config(shards[1])
    train, test = open_streams(config.data, config.features, config.seed)
    return _in_memory(train), _in_memory(test)


def test_streaming_naive_bayes_is_the_in_memory_fit(local_result, split):
    (X, Y), _ = split
    streamed = local_result.model("nb").model
    whole = NaiveBayes().fit(X, Y)
    np.testing.assert_allclose(streamed.weights_, whole.weights_, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(streamed.bias_, whole.bias_, rtol=1e-6, atol=1e-6)


def test_streaming_logistic_regression_is_the_in_memory_fit_in_the_same_order(local_result, split):
    (X, Y), _ = split
    streamed = local_result.model("lr").model
    whole = LogisticRegression(shuffle=False, npasses=3, batch_size=150).fit(X, Y)
    np.testing.assert_array_equal(streamed.weights_, whole.weights_)
    np.testing.assert_array_equal(streamed.bias_, whole.bias_)


def test_streaming_evaluation_is_the_in_memory_evaluation(local_result, split):
    _, (X_test, Y_test) = split
    run = local_result.model("nb")
    untrainable = local_result.untrainable
    scores = run.model.decision_function(X_test)
    assert run.decision.rule == "pcut"  # the default rule of a multilabel study, streamed too
    expected = evaluate(Y_test, scores, local_result.category_names, roc_points=101, exclude=untrainable,
                        decisions=run.decision.decide(scores),
                        train_prevalence=local_result.train_positives / local_result.data["n_train"])
    got = run.evaluation
    for column in ("n_pos", "auc", "average_precision", "accuracy", "f1", "log_loss", "brier", "expected_accuracy"):
        np.testing.assert_allclose(got.per_category[column].to_numpy(dtype=float),
                                   expected.per_category[column].to_numpy(dtype=float), rtol=1e-9, atol=1e-9,
                                   err_msg=column)
    np.testing.assert_allclose(got.roc_tpr, expected.roc_tpr, atol=1e-9)
    for key in ("macro_auc", "micro_f1", "macro_f1", "label_ranking_average_precision"):
        assert got.summary[key] == pytest.approx(expected.summary[key], abs=1e-9), key
    # the test scores fit in memory (engine.scores = "auto"): the pooled micro AUC is exact too
    assert got.summary["micro_auc"] == pytest.approx(expected.summary["micro_auc"], abs=1e-12)
    assert len(local_result.comparisons) == 2 and local_result.models[0].auc_intervals.shape == (N_CATEGORIES, 2)


@pytest.fixture(scope="module")
def spilled_result(shards):
    return run_study(load_config(shards[1], ['engine.scores="disk"']))


def test_spilled_scores_give_the_in_memory_evaluation(local_result, spilled_result):
    """engine.scores = "disk": the evaluation from scores on disk, column by column, equals the one in memory
    (the decisions were applied chunk by chunk), except the pooled micro AUC, binned within its bound."""
    assert spilled_result.Y_test is None and spilled_result.data["streaming"]["scores"] == "spilled to disk"
    for name in ("nb", "lr"):
        here, there = local_result.model(name), spilled_result.model(name)
        for column in ("auc", "average_precision", "f1", "log_loss", "brier"):
            np.testing.assert_allclose(there.evaluation.per_category[column].to_numpy(dtype=float),
                                       here.evaluation.per_category[column].to_numpy(dtype=float), rtol=1e-9,
                                       atol=1e-9, err_msg=column)
        np.testing.assert_allclose(there.auc_intervals, here.auc_intervals, rtol=1e-9, atol=1e-9)
        error = there.evaluation.summary["micro_auc_max_error"]
        assert abs(there.evaluation.summary["micro_auc"] - here.evaluation.summary["micro_auc"]) <= error + 1e-12
    for a, b in zip(local_result.comparisons, spilled_result.comparisons):
        np.testing.assert_allclose(a.table["p_value"].to_numpy(dtype=float), b.table["p_value"].to_numpy(dtype=float),
                                   rtol=1e-9, atol=1e-12)


@pytest.fixture(scope="module")
def dask_result(shards, dask_address):
    """The study on the session's Dask LocalCluster of 2 workers (``dask_address``, tests/conftest.py)."""
    return run_study(load_config(shards[1], ['engine.kind="dask"', f'engine.address="{dask_address}"']))


@pytest.mark.slow
def test_dask_naive_bayes_and_its_evaluation_equal_one_machine(local_result, dask_result):
    here, there = local_result.model("nb"), dask_result.model("nb")
    np.testing.assert_array_equal(there.model.weights_, here.model.weights_)
    for column in ("auc", "average_precision", "f1", "log_loss"):
        np.testing.assert_allclose(there.evaluation.per_category[column].to_numpy(dtype=float),
                                   here.evaluation.per_category[column].to_numpy(dtype=float), rtol=1e-12,
                                   atol=1e-12)
    assert dask_result.data["streaming"]["engine"]["workers"] == 2


@pytest.mark.slow
def test_dask_logistic_regression_on_one_worker_is_one_machine(local_result, dask_result):
    """engine.minibatch = "one_worker" (the default): the one-machine minibatch solver runs on a worker, the same model."""
    for name in ("lr", "nblr"):
        np.testing.assert_array_equal(dask_result.model(name).model.weights_, local_result.model(name).model.weights_)
        assert dask_result.model(name).evaluation.summary == local_result.model(name).evaluation.summary


@pytest.mark.slow
def test_dask_logistic_regression_by_parameter_mixing_is_close_to_one_machine(shards, local_result, dask_address):
    mixed = run_study(load_config(shards[1], ['engine.kind="dask"', f'engine.address="{dask_address}"',
                                              'engine.minibatch="mixing"', "engine.mix_every=4"]))
    for name in ("lr", "nblr"):
        here = local_result.model(name).evaluation.summary["macro_auc"]
        there = mixed.model(name).evaluation.summary["macro_auc"]
        # averaging two trainers costs a little (experiments/bench_mixing.py); never a collapse
        assert there == pytest.approx(here, abs=0.02), name
        assert mixed.model(name).model.history_[0]["mixing_rounds"] >= 2  # 3 files over 2 workers


def test_cli_runs_a_streaming_study_with_its_scores_file(shards, tmp_path):
    result = CliRunner().invoke(app, ["run", str(shards[1]), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    [folder] = [p for p in tmp_path.rglob("summary.json")]
    summary = json.loads(folder.read_text())
    assert summary["data"]["streaming"]["chunk_size"] == 450
    assert (folder.parent / "scores.npz").exists()  # held in memory: `mlnb compare` can pair it
    assert "held in memory" in (folder.parent / "report.md").read_text()


def test_cli_with_spilled_scores_says_what_it_left_out(shards, tmp_path):
    result = CliRunner().invoke(app, ["run", str(shards[1]), "--out", str(tmp_path), "--set", 'engine.scores="disk"'])
    assert result.exit_code == 0, result.output
    [folder] = [p for p in tmp_path.rglob("summary.json")]
    summary = json.loads(folder.read_text())
    assert not (folder.parent / "scores.npz").exists()
    assert summary["models"]["nb"]["micro_auc_max_error"] < 1e-3
    assert "bootstrap" in (folder.parent / "report.md").read_text()  # says what the spilled evaluation left out


@pytest.mark.parametrize("setting, needs", [("eval.bootstrap=20", "eval.bootstrap = 20 resamples every test document")])
def test_what_spilled_scores_cannot_do_is_refused_in_one_line(shards, tmp_path, setting, needs):
    """Without ranking metrics (whose intervals resample each document's k best, not its scores)."""
    result = CliRunner().invoke(app, ["run", str(shards[1]), "--out", str(tmp_path / "out"), "--set",
                                      'engine.scores="disk"', "--set", setting, "--set", "eval.ranking_k=0"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip() and not line.startswith("LR pass")]
    assert len(lines) == 1 and needs in lines[0] and "spilled to disk" in lines[0], result.output


@pytest.mark.parametrize("engine", ["local", pytest.param("dask", marks=pytest.mark.slow)])
def test_a_corrupt_shard_is_one_line_and_leaves_no_results(shards, tmp_path, engine, request):
    on_cluster = ["--set", f'engine.address="{request.getfixturevalue("dask_address")}"'] if engine == "dask" else []
    folder = tmp_path / "data"
    folder.mkdir()
    for path in sorted(shards[0].glob("part-*.svm")):
        (folder / path.name).write_bytes(path.read_bytes())
    lines = (folder / "part-1.svm").read_text().splitlines()
    lines[41] = "3,x 17:1.0"
    (folder / "part-1.svm").write_text("\n".join(lines) + "\n")
    config = shards[1].read_text().replace(str(shards[0]), str(folder))
    (tmp_path / "c.toml").write_text(config)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "c.toml"), "--out", str(out), "--set",
                                      f'engine.kind="{engine}"', *on_cluster])
    assert result.exit_code == 2
    lines_out = [line for line in result.output.splitlines()
                 if line.strip() and not line.startswith(("LR pass", "dask dashboard: "))]  # progress, not errors
    assert len(lines_out) == 1 and "part-1.svm:42" in lines_out[0], result.output
    assert not any(out.rglob("*")) if out.exists() else True


def test_a_missing_shard_is_one_line(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(f'[data]\nsource = "svmlight"\nstreaming = true\n[data.svmlight]\npath = "{tmp_path}/none-*.svm"\n')
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and "none-*.svm" in result.output


def test_a_missing_spill_folder_is_one_line_before_any_work(shards, tmp_path):
    result = CliRunner().invoke(app, ["run", str(shards[1]), "--out", str(tmp_path / "out"), "--set",
                                      f'engine.spill_folder="{tmp_path / "nowhere"}"'])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [f"error: engine.spill_folder = '{tmp_path / 'nowhere'}': no such folder"]
