"""Hostile input: a diverging learning rate, non-finite smoothing, features beyond float32's reach."""

import numpy as np
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.errors import MlnbError
from mlnb.models._linear import MAX_ABS_FEATURE, as_csr_float32
from mlnb.models.logistic import LogisticRegression
from mlnb.models.naive_bayes.estimator import NaiveBayes


def _data(seed=0, n=200, V=30, K=3):
    rng = np.random.default_rng(seed)
    X = sp.random(n, V, density=0.2, format="csr", random_state=seed, dtype=np.float32)
    X.data = np.round(X.data * 3 + 1).astype(np.float32)
    Y = (X @ rng.normal(size=(V, K)) + rng.normal(size=(n, K)) > 1.0).astype(int)
    return X, Y


def test_cli_diverging_lrate_exits_2_with_one_line_and_no_results(tmp_path):
    out = tmp_path / "results"
    result = CliRunner().invoke(app, ["run", "configs/quickstart.toml", "--out", str(out), "--quiet",
                                      "--set", "data.synthetic.n_documents=2000",
                                      "--set", "models.lr.lrate=1e9"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "lrate" in lines[0] and "diverged" in lines[0], result.output
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("kernel", ["scipy", "numba"])
@pytest.mark.parametrize("task", ["multilabel", "multiclass"])
def test_diverging_lrate_names_pass_loss_and_prior(kernel, task):
    X, Y = _data()
    if task == "multiclass":
        Y = np.argmax(Y + np.arange(3) * 0.1, axis=1)
    with pytest.raises(MlnbError, match=r"diverged in pass 1: mean training loss .* the [0-9.]+ of the "
                                        r"all-prior .* lrate 1e\+09"):
        LogisticRegression(lrate=1e9, kernel=kernel, task=task, batch_size=50).fit(X, Y)


@pytest.mark.parametrize("lrate", [0.3, 3, 10])
def test_large_but_not_diverging_lrates_still_train(lrate):
    X, Y = _data()
    model = LogisticRegression(lrate=lrate, batch_size=50, npasses=5).fit(X, Y)
    assert len(model.history_) == 5


@pytest.mark.parametrize("name", ["alpha", "m", "var_smoothing"])
def test_non_finite_smoothing_is_rejected(name):
    X, Y = _data()
    event_model = "gaussian" if name == "var_smoothing" else "multinomial"
    extra = {"smoothing": "m_estimate"} if name == "m" else {}
    with pytest.raises(MlnbError, match=f"^{name} must be >?=? 0 and finite"):
        NaiveBayes(event_model=event_model, **extra, **{name: np.inf}).fit(X, Y)


def test_non_finite_prior_m_is_rejected():
    with pytest.raises(MlnbError, match="^prior_m must be >?=? 0 and finite"):
        NaiveBayes(task="multiclass", class_prior="m_estimate", prior_m=np.inf).fit(*_data()[:1], np.arange(200) % 3)


def test_features_beyond_the_bound_are_rejected_naming_the_value():
    X = np.ones((4, 3), dtype=np.float64)
    X[2, 1] = -1e30
    with pytest.raises(MlnbError, match=r"^X: document 2: feature value -1e\+30 has a magnitude beyond the 1e\+15"):
        as_csr_float32(X)
    X[2, 1] = MAX_ABS_FEATURE  # the bound itself is accepted
    assert as_csr_float32(X).shape == (4, 3)
    with pytest.raises(MlnbError, match="feature value 1e\\+30 has a magnitude"):
        LogisticRegression().fit(sp.csr_matrix(np.full((4, 3), 1e30)), np.eye(4, 3, dtype=int))
