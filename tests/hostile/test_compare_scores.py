"""Tampered or damaged scores files: `mlnb compare` refuses each with one line naming the scores file
(or the run folder), the array or the model, and what was expected, and writes nothing."""

import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.errors import MlnbError
from mlnb.studies.compare import compare_runs, load_scores

STUDY = """\
seed = 0
[data]
source = "svmlight"
[models.nb]
kind = "naive_bayes"
[models.nb2]
kind = "naive_bayes"
event_model = "bernoulli"
[eval]
bootstrap = 0
[report]
plots = false
category = 0
"""


@pytest.fixture(scope="module")
def completed(tmp_path_factory):
    """One completed run folder with two models (nb, nb2) on 40 documents in 3 categories."""
    root = tmp_path_factory.mktemp("completed")
    rng = np.random.default_rng(0)
    lines = []
    for i in range(40):
        k = i % 3
        words = sorted({1 + 2 * k, 2 + 2 * k, *rng.integers(1, 12, size=2).tolist()})
        lines.append(f"{k} " + " ".join(f"{w}:1" for w in words))
    (root / "data.svm").write_text("\n".join(lines) + "\n")
    (root / "study.toml").write_text(STUDY)
    result = CliRunner().invoke(app, ["run", str(root / "study.toml"), "--out", str(root / "runs"), "--quiet",
                                      "--set", f"data.svmlight.path={root / 'data.svm'}"])
    assert result.exit_code == 0, result.output
    (folder,) = (root / "runs" / "study").iterdir()
    return folder


def tampered(completed, tmp_path, change):
    """A copy of the completed folder whose scores.npz has ``change(arrays)`` applied."""
    folder = tmp_path / "run"
    shutil.copytree(completed, folder)
    with np.load(folder / "scores.npz", allow_pickle=False) as saved:
        arrays = {name: saved[name] for name in saved.files}
    change(arrays)
    np.savez(folder / "scores.npz", **arrays)
    return folder


def _set(name, value):
    def change(arrays):
        arrays[name] = value(arrays[name]) if callable(value) else value
    return change


def _drop(name):
    def change(arrays):
        del arrays[name]
    return change


def _nan(arrays):
    arrays["scores_nb"] = arrays["scores_nb"].copy()
    arrays["scores_nb"][3, 1] = np.nan


def _repeat_category(arrays):
    indices = arrays["labels_indices"].copy()
    indptr = arrays["labels_indptr"]
    indices = np.insert(indices, indptr[1], indices[0])  # the first document's category twice
    arrays["labels_indices"] = indices
    arrays["labels_indptr"] = np.concatenate([[0], indptr[1:] + 1])


TAMPERED = {
    "labels_shape of three values": (_set("labels_shape", np.array([20, 3, 1])), ["'labels_shape' is [20, 3, 1]"]),
    "labels_shape of strings": (_set("labels_shape", np.array(["20", "3"])), ["'labels_shape' has dtype <U2"]),
    "labels_indptr too short": (_set("labels_indptr", lambda a: a[:-3]), ["'labels_indptr'", "does not describe 20 documents"]),
    "labels_indptr decreasing": (_set("labels_indptr", lambda a: a[::-1].copy()), ["'labels_indptr'", "does not describe"]),
    "labels_indices beyond the categories": (_set("labels_indices", lambda a: np.where(np.arange(a.size) == 4, 7, a)),
                                             ["'labels_indices' gives test document 4 the category 7, outside the 3"]),
    "labels_indices negative": (_set("labels_indices", lambda a: np.where(np.arange(a.size) == 0, -1, a)),
                                ["'labels_indices' gives test document 0 the category -1"]),
    "a category twice in a document": (_repeat_category, ["'labels_indices' repeats a category"]),
    "scores with too few rows": (_set("scores_nb", lambda a: a[:-2]), ["model 'nb': scores_nb: has shape (18, 3), expected (20, 3)"]),
    "scores with too many columns": (_set("scores_nb2", lambda a: np.hstack([a, a])),
                                     ["model 'nb2': scores_nb2: has shape (20, 6), expected (20, 3)"]),
    "scores with a NaN": (_nan, ["model 'nb': scores_nb: NaN score for document 3, category 1 (1 NaN in all)"]),
    "scores of one dimension": (_set("scores_nb", lambda a: a.ravel()), ["array 'scores_nb' has dtype float32 and shape (60,)"]),
    "scores as strings": (_set("scores_nb", lambda a: a.astype(str)), ["array 'scores_nb' has dtype <U"]),
    "category_names too short": (_set("category_names", lambda a: a[:2]), ["'category_names' has 2 values; expected 3"]),
    "train_positives too long": (_set("train_positives", lambda a: np.append(a, 1)), ["'train_positives' has 4 values; expected 3"]),
    "model_labels too short": (_set("model_labels", lambda a: a[:1]), ["'model_labels' has 1 values; expected 2"]),
    "excluded beyond the categories": (_set("excluded", np.array([5])), ["'excluded' holds category 5, outside the 3"]),
    "unknown task": (_set("task", np.array("regression")), ["'task' is 'regression'"]),
    "multiclass with two classes in a row": (_set("task", np.array("multiclass")), ["multiclass test document"]),
    "no labels_shape": (_drop("labels_shape"), ["no array 'labels_shape'"]),
    "no scores of a listed model": (_drop("scores_nb2"), ["no array 'scores_nb2'"]),
}


@pytest.mark.parametrize("case", list(TAMPERED))
def test_tampered_scores_file(refused, completed, tmp_path, case):
    change, needles = TAMPERED[case]
    if case == "multiclass with two classes in a row":  # make one document carry two classes
        def change(arrays, first=change):
            first(arrays)
            _repeat_category(arrays)
            arrays["labels_indices"][1] = (arrays["labels_indices"][0] + 1) % 3
    folder = tampered(completed, tmp_path, change)
    refused(f"{folder / 'scores.npz'}: ", *needles, args=[folder], command="compare")


@pytest.mark.parametrize("content", [b"", b"not a zip archive", b"PK\x03\x04 truncated"])
def test_scores_file_that_is_not_an_archive(refused, completed, tmp_path, content):
    folder = tmp_path / "run"
    shutil.copytree(completed, folder)
    (folder / "scores.npz").write_bytes(content)
    refused(f"{folder / 'scores.npz'}: not a readable mlnb scores file", args=[folder], command="compare")


def test_scores_file_that_is_a_directory(refused, completed, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(completed, folder)
    (folder / "scores.npz").unlink()
    (folder / "scores.npz").mkdir()
    refused(f"{folder}: no scores.npz", args=[folder], command="compare")


def test_runs_on_different_documents(refused, completed, tmp_path):
    other = tampered(completed, tmp_path, _set("labels_indices", lambda a: (a + 1) % 3))
    refused(f"{completed} and {other} were evaluated on different test documents", args=[completed, other],
            command="compare")


def test_errors_of_the_comparison_name_runs_and_models(completed, monkeypatch):
    import mlnb.studies.compare as compare_module

    def failing(*args, **kwargs):
        raise ValueError("scores contain NaN")

    monkeypatch.setattr(compare_module, "compare_scores", failing)
    run = load_scores(completed)
    with pytest.raises(MlnbError, match=rf"^{completed} \(model 'nb2'\) against {completed} \(model 'nb'\): scores contain NaN$"):
        compare_runs(run, "nb2", run, "nb")


def test_runs_without_a_shared_model_name_are_refused_naming_both_runs_models(refused, completed, tmp_path):
    """Two runs with no model name in common were paired first with first (nb against 'lr'), silently; before,
    the second run's missing 'nb' was refused."""
    study = tmp_path / "other.toml"
    study.write_text(STUDY.replace("[models.nb]", "[models.lr]").replace("[models.nb2]", "[models.nb_b]"))
    result = CliRunner().invoke(app, ["run", str(study), "--out", str(tmp_path / "runs"), "--quiet",
                                      "--set", f"data.svmlight.path={completed.parent.parent.parent / 'data.svm'}"])
    assert result.exit_code == 0, result.output
    (other,) = (tmp_path / "runs" / "other").iterdir()
    refused(f"{completed} (models nb, nb2) and {other} (models lr, nb_b) have no model name in common",
            "--model-a nb --model-b lr", args=[completed, other], command="compare")
