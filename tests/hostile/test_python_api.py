"""Hostile input through the Python API: every registered model kind refuses a matrix that cannot be
fitted or scored with one MlnbError line (never ZeroDivisionError, `range() arg 3 must not be zero` or
scipy's list of dtypes), and every matrix is checked by one function wherever it enters."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from mlnb.data.dataset import Dataset
from mlnb.data.svmlight import load_svmlight_dataset
from mlnb.data.validate import check_features, check_labels, check_scores
from mlnb.errors import MlnbError
from mlnb.models import KINDS
from mlnb.models._linear import LinearMultilabelModel

rng = np.random.default_rng(0)
X_GOOD = sp.random(40, 10, density=0.3, format="csr", random_state=0, dtype=np.float32)
Y_GOOD = (rng.random((40, 3)) < 0.4).astype(int)


def _nan_X():
    X = X_GOOD.toarray()
    X[5, 2] = np.nan
    return X


# name: (X, Y, the start of the message)
BAD_FIT = {
    "0 categories": (X_GOOD, np.zeros((40, 0), int), "Y has 0 categories (shape (40, 0))"),
    "0 documents": (X_GOOD[:0], np.zeros((0, 3), int), "X has 0 documents (shape (0, 10))"),
    # scikit-learn's wording (its check_estimator matches it)
    "0 features": (sp.csr_matrix((40, 0), dtype=np.float32), Y_GOOD,
                   "X has 0 feature(s) (shape=(40, 0)) while a minimum of 1 is required"),
    "string label matrix": (X_GOOD, np.array([["a", "b", "c"]] * 40), "Y: expected numbers, got dtype <U1"),
    "string X": (np.array([["a"] * 10] * 40), Y_GOOD, "X: expected numbers, got dtype <U1"),
    # an object array is converted to numbers (scikit-learn's convention); None becomes NaN, refused where it is
    "object X": (np.array([[None] * 10] * 40), Y_GOOD, "X: document 0: feature value nan"),
    "object X of words": (np.array([["a"] * 10] * 40, dtype=object), Y_GOOD, "X: expected numbers, got dtype object"),
    "NaN in X": (_nan_X(), Y_GOOD, "X: document 5: feature value nan"),
    "1e30 in X": (np.full((40, 10), 1e30), Y_GOOD, "X: document 0: feature value 1e+30 has a magnitude beyond"),
    "label 2": (X_GOOD, Y_GOOD * 2, "Y: document 0: label value 2"),
    "ragged X": ([[1, 2], [3]], Y_GOOD[:2], "X: expected a 2-D numeric matrix, got rows of different lengths"),
    "1-D X": (np.ones(40), Y_GOOD, "X: expected a 2-D matrix (documents × features), got a 1-D array of shape (40,)"),
    "Y rows mismatch": (X_GOOD, Y_GOOD[:5], "Y: expected one row per document (40), got shape (5, 3)"),
    "3-D Y": (X_GOOD, Y_GOOD[None], "Y: expected a 2-D matrix (documents × categories), got shape (1, 40, 3)"),
    "None X": (None, Y_GOOD, "X: expected a 2-D matrix"),
}
KIND_TASKS = [(name, task) for name, kind in KINDS.items() for task in kind.tasks]


@pytest.mark.parametrize("case", list(BAD_FIT))
@pytest.mark.parametrize("kind, task", KIND_TASKS, ids=[f"{k}-{t}" for k, t in KIND_TASKS])
def test_every_kind_refuses_bad_fit_input_in_one_line(kind, task, case):
    X, Y, expected = BAD_FIT[case]
    if task == "multiclass" and case in ("label 2",):
        expected = "Y: document 0: label value 2"
    estimator = KINDS[kind].build(KINDS[kind].options(), 0, task)
    with pytest.raises(MlnbError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X, Y)
    message = str(info.value)
    assert "\n" not in message and message.startswith(expected), message


@pytest.mark.parametrize("kind, task", [(k, t) for k, t in KIND_TASKS if t == "multiclass"])
def test_multiclass_string_labels_are_class_names(kind, task):
    """scikit-learn's convention: string labels are the classes, sorted; predict gives them back."""
    estimator = KINDS[kind].build(KINDS[kind].options(), 0, task)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X_GOOD, np.array(["spam", "ham"] * 20))
    assert list(estimator.classes_) == ["ham", "spam"]
    assert set(estimator.predict(X_GOOD)) <= {"ham", "spam"}


@pytest.mark.parametrize("case", ["NaN in X", "1e30 in X", "string X", "1-D X"])
@pytest.mark.parametrize("kind, task", KIND_TASKS, ids=[f"{k}-{t}" for k, t in KIND_TASKS])
def test_scoring_checks_what_fitting_checks(kind, task, case):
    """Test rows pass the same check as training rows."""
    Y = Y_GOOD if task == "multilabel" else np.arange(40) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator = KINDS[kind].build(KINDS[kind].options(), 0, task).fit(X_GOOD, Y)
    X, _, expected = BAD_FIT[case]
    with pytest.raises(MlnbError) as info:
        estimator.decision_function(X)
    assert str(info.value).startswith(expected)


def test_a_model_of_counts_refuses_negative_values_when_scoring():
    class CountModel(LinearMultilabelModel):  # what the count Naive Bayes kinds declare
        def _non_negative_features(self):
            return True

    model = CountModel()
    model.weights_, model.bias_, model.n_features_in_ = np.zeros((3, 2), np.float32), np.zeros(2, np.float32), 3
    assert model.decision_function(np.eye(2, 3)).shape == (2, 2)
    with pytest.raises(MlnbError, match=r"^X: document 1: feature value -2 is negative; this model needs non-negative"):
        model.decision_function(np.array([[1, 0, 0], [0, -2, 0]]))


def test_count_naive_bayes_refuses_negative_test_values():
    from mlnb.models.naive_bayes import NaiveBayes

    model = NaiveBayes().fit(X_GOOD, Y_GOOD)
    with pytest.raises(MlnbError, match="negative"):
        model.decision_function(-X_GOOD.toarray())


def test_the_dataset_names_the_file_and_line_of_a_negative_test_value(tmp_path):
    lines = [f"{i % 2} 1:1 2:{'-3' if i == 13 else '1'}" for i in range(20)]
    (tmp_path / "train.svm").write_text("\n".join(lines[:10]) + "\n")
    (tmp_path / "test.svm").write_text("# the test part\n" + "\n".join(lines[10:]) + "\n")
    data = load_svmlight_dataset(tmp_path / "train.svm", test_path=tmp_path / "test.svm")
    with pytest.raises(MlnbError, match=r"test\.svm:5: feature value -3 is negative"):
        data.check_non_negative()
    (tmp_path / "all.svm").write_text("\n".join(lines) + "\n")
    pooled = load_svmlight_dataset(tmp_path / "all.svm", seed=3)
    assert 13 in pooled.test_index or 13 in pooled.train_index
    with pytest.raises(MlnbError, match=r"all\.svm:14: feature value -3"):
        pooled.check_non_negative()


# -- the one check itself --------------------------------------------------------------------------------
@pytest.mark.parametrize("first_line, row_lines, where", [(None, None, "chunk: document 2"), (101, None, "chunk:103"),
                                                          (None, [4, 9, 17], "chunk:17"), (None, lambda r: 7 * r, "chunk:14")])
def test_check_features_names_the_row(first_line, row_lines, where):
    X = np.ones((3, 2))
    X[2, 1] = np.inf
    with pytest.raises(MlnbError, match=f"^{where}: feature value inf"):
        check_features(X, "chunk", first_line=first_line, row_lines=row_lines)


def test_check_features_keeps_the_caller_matrix_and_converts_once():
    X = sp.random(5, 4, density=0.5, format="csr", dtype=np.float32, random_state=1)
    checked = check_features(X, "X")
    checked.indptr = checked.indptr.astype(np.int64)  # a caller widening its own copy
    assert X.indptr.dtype == np.int32 and checked is not X and np.shares_memory(checked.data, X.data)
    assert check_features(X.astype(np.float64), "X").dtype == np.float32
    assert check_features(np.array([[True, False]]), "X").dtype == np.float32
    with pytest.raises(MlnbError, match="^X: document 0: feature value -1 is negative"):
        check_features(np.array([[-1.0, 2.0]]), "X", non_negative=True)
    assert check_features(np.array([[-1.0, 2.0]]), "X").nnz == 2  # negative values are features, unless counts


@pytest.mark.parametrize("Y, expected", [
    (np.array([[0, 1], [1, 3]]), "^y.txt:8: label value 3 in category column 1"),
    (np.array([[0.5, 1]]), "^y.txt:7: label value 0.5"),
    (np.array([["x", "y"]]), "^y.txt: expected numbers"),
    (np.array([0, 1]), r"^y.txt: expected a 2-D matrix \(documents × categories\)"),
])
def test_check_labels(Y, expected):
    with pytest.raises(MlnbError, match=expected):
        check_labels(Y, "y.txt", first_line=7)


@pytest.mark.parametrize("scores, expected", [
    (np.ones((3, 2)), None), (np.full((3, 2), -np.inf), None),
    (np.array([[1.0, np.nan], [0, 0], [0, 0]]), r"^s: NaN score for document 0, category 1 \(1 NaN in all\)"),
    (np.ones((2, 2)), r"^s: has shape \(2, 2\), expected \(3, 2\)"),
    (np.ones(6), r"^s: expected a 2-D array"), (sp.eye(3, 2), "^s: expected a dense"),
    (np.array([["a", "b"]] * 3), "^s: expected numbers"),
])
def test_check_scores(scores, expected):
    if expected is None:
        assert check_scores(scores, "s", (3, 2)).shape == (3, 2)
    else:
        with pytest.raises(MlnbError, match=expected):
            check_scores(scores, "s", (3, 2))


def test_dataset_constructors_check_their_matrices():
    with pytest.raises(MlnbError, match="^X: document 5: feature value nan"):
        Dataset.from_arrays(_nan_X(), Y_GOOD)
    with pytest.raises(MlnbError, match="^Y: document 0: label value 2"):
        Dataset.from_train_test(X_GOOD, Y_GOOD * 2, X_GOOD, Y_GOOD)


BAD_EVALUATE = {
    "0 documents": (np.zeros((0, 3), int), np.zeros((0, 3))),
    "0 categories": (np.zeros((10, 0), int), np.zeros((10, 0))),
    "string labels": (np.array([["a", "b"]] * 10), np.zeros((10, 2))),
    "string scores": (np.ones((10, 2), int), np.array([["a", "b"]] * 10)),
    "1-D": (np.ones(10, int), np.zeros(10)),
    "label 2": (np.full((10, 2), 2), np.zeros((10, 2))),
}


@pytest.mark.parametrize("case", list(BAD_EVALUATE))
def test_evaluate_refuses_in_one_line(case):
    from mlnb.metrics.evaluation import evaluate

    Y, scores = BAD_EVALUATE[case]
    with pytest.raises(MlnbError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluate(Y, scores)
    assert "\n" not in str(info.value)
