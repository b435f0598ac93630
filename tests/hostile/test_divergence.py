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


def test_cli_refuses_an_svrg_step_beyond_the_coordinate_bound(refused):
    """svrg_step = 1e9 was halved 30 times to 0.93, every outer iteration still raised F, and the run reported
    the starting model (W = 0, b = the priors: AUC 0.5) as the fit."""
    refused("models.lr.svrg_step", "< 2", args=["--set", "data.source=synthetic", "--set", "models.lr.kind=logistic",
                                                "--set", "models.lr.solver=svrg", "--set", "models.lr.svrg_step=1e9"])


def test_svrg_that_never_lowers_the_objective_raises_naming_svrg_step():
    """The solver itself (multiclass, where a step of 1e9 halved 30 times never lowered F): with no accepted
    outer iteration its "solution" is the start, never a fit."""
    from mlnb.models.logistic import svrg
    from mlnb.models.logistic.minibatch import InMemorySource

    X, Y = _data()
    Y = sp.csr_matrix(np.eye(3, dtype=int)[np.argmax(Y + np.arange(3) * 0.1, axis=1)])
    b0 = np.log(np.asarray(Y.sum(axis=0), dtype=np.float64).ravel() / X.shape[0])
    source = InMemorySource(X, Y, 50)
    with pytest.raises(MlnbError, match=r"made no progress: .* from svrg_step 1e\+09 .*; lower svrg_step"):
        svrg.fit_svrg(lambda W, b: svrg.loss_gradient_curvature(X, Y, W, b, "softmax"), source.minibatches,
                      np.zeros((X.shape[1], 3)), b0, 0.0, 1e-4, "softmax", batch_size=50, step=1e9, inner_passes=8,
                      max_iter=5, tol=1e-6, rng=np.random.default_rng(0))


def test_features_at_their_bound_that_diverge_name_the_feature_scale_not_lrate_alone():
    """Feature values of 1e15 are accepted (the bound itself), and AdaGrad then moves a score by ~lrate × 1e15:
    the default lrate diverged and the line blamed lrate alone, the key a user would not think of changing."""
    X, Y = _data()
    X.data[:] = MAX_ABS_FEATURE
    with pytest.raises(MlnbError, match=r"diverged in pass \d: .* lrate 0\.1 is too large for feature values up to "
                                        r"1e\+15 .* rescale the features \(features\.transform"):
        LogisticRegression(batch_size=50, npasses=3).fit(X, Y)
