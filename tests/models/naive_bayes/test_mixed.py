"""Mixed Naive Bayes: the sum of scikit-learn's per-group models, column detection and overrides."""

import numpy as np
import pytest
from sklearn.naive_bayes import BernoulliNB, GaussianNB, MultinomialNB

from mlnb import MlnbError, NaiveBayes


def summed_sklearn_log_odds(sklearn_log_odds, X, y, groups, alpha, var_smoothing):
    """Σ over groups of each sklearn model's log-odds, with the prior log N − log N̄ counted once."""
    total = 0.0
    parts = [(BernoulliNB(alpha=alpha, binarize=0.0), groups.get("bernoulli")),
             (MultinomialNB(alpha=alpha), groups.get("multinomial")),
             (GaussianNB(var_smoothing=var_smoothing), groups.get("gaussian"))]
    used = 0
    for estimator, columns in parts:
        if columns is not None and len(columns):
            total = total + sklearn_log_odds(estimator, X[:, columns], y)
            used += 1
    prior = np.log(y.sum()) - np.log(len(y) - y.sum())
    return total - (used - 1) * prior


def assert_matches_summed_sklearn(sklearn_log_odds, X, Y, groups, alpha=0.5, var_smoothing=1e-9, **params):
    model = NaiveBayes(event_model="mixed", alpha=alpha, var_smoothing=var_smoothing, **params).fit(X, Y)
    scores = model.decision_function(X)
    for k in range(Y.shape[1]):
        expected = summed_sklearn_log_odds(sklearn_log_odds, X, Y[:, k], groups, alpha, var_smoothing)
        np.testing.assert_allclose(scores[:, k], expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max(),
                                   err_msg=f"category {k}")
    return model


def test_detects_the_model_of_every_column(mixed_columns):
    X, Y, (real, binary, counts) = mixed_columns
    models = NaiveBayes(event_model="mixed").fit(X, Y).column_event_models_
    assert set(models[real]) == {"gaussian"}
    assert set(models[binary]) == {"bernoulli"}  # the all-zero column too: integer, 0 ≤ x ≤ 1
    assert set(models[counts]) == {"multinomial"}


@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_log_odds_equal_the_sum_of_sklearn_models(mixed_columns, sklearn_log_odds, alpha):
    X, Y, (real, binary, counts) = mixed_columns
    model = assert_matches_summed_sklearn(sklearn_log_odds, X, Y,
                                          dict(gaussian=real, bernoulli=binary, multinomial=counts), alpha=alpha)
    assert model.weights_.shape == (len(real) + X.shape[1], Y.shape[1])  # x² of Gaussian columns, then x


def test_overrides_change_the_model_of_their_columns(mixed_columns, sklearn_log_odds):
    X, Y, (real, binary, counts) = mixed_columns
    model = assert_matches_summed_sklearn(
        sklearn_log_odds, X, Y, dict(gaussian=np.r_[real, 30:34, 36], bernoulli=np.r_[34:36], multinomial=np.r_[37:42]),
        column_models=["30-33=gaussian", "36=gaussian"])
    assert list(model.column_event_models_[30:37]) == ["gaussian"] * 4 + ["bernoulli"] * 2 + ["gaussian"]


def test_later_column_models_entries_win(mixed_columns):
    X, Y, _ = mixed_columns
    model = NaiveBayes(event_model="mixed", column_models=["36-41=gaussian", "40=multinomial"]).fit(X, Y)
    assert list(model.column_event_models_[36:42]) == ["gaussian"] * 4 + ["multinomial", "gaussian"]


def test_negative_columns_are_gaussian(mixed_columns):
    X, Y, _ = mixed_columns
    X = X.copy()
    X[::3, 40] *= -1  # counts with a sign: not a multinomial column any more
    assert NaiveBayes(event_model="mixed").fit(X, Y).column_event_models_[40] == "gaussian"


def _fast_naive_bayes_detection(X):
    """fastNaiveBayes 2.2.1's fnb.detect_distribution, written out: integer columns with no value
    above 1 are Bernoulli, other integer columns multinomial, the rest Gaussian (the sign unread)."""
    integer = (np.abs(X - np.round(X)) > np.finfo(float).eps).sum(axis=0) == 0
    above_one = (X > 1).sum(axis=0) > 0
    return np.where(~integer, "gaussian", np.where(above_one, "multinomial", "bernoulli"))


def test_detection_is_fast_naive_bayes_except_for_negative_integers(mixed_columns):
    # the documented difference: a count or a presence cannot be negative, so a negative integer
    # column is Gaussian here where fastNaiveBayes makes it Bernoulli (max ≤ 1) or multinomial
    X, Y, _ = mixed_columns
    X = X.copy()
    X[::3, 40] *= -1  # signed counts: multinomial in fastNaiveBayes
    X[::4, 34] = -X[::4, 34]  # values in {−1, 0, 1}: Bernoulli in fastNaiveBayes
    ours = NaiveBayes(event_model="mixed").fit(X, Y).column_event_models_
    theirs = _fast_naive_bayes_detection(X)
    negative_integer = (X.min(axis=0) < 0) & (X == np.round(X)).all(axis=0)
    assert list(np.flatnonzero(negative_integer)) == [34, 40]
    assert (theirs[34], theirs[40]) == ("bernoulli", "multinomial")
    np.testing.assert_array_equal(ours[~negative_integer], theirs[~negative_integer])
    assert set(ours[negative_integer]) == {"gaussian"}


@pytest.mark.parametrize("entry, message", [
    ("0-x=gaussian", "entry '0-x=gaussian': expected 'COLUMNS=MODEL'"),
    ("gaussian", "entry 'gaussian': expected"),
    ("3=poisson", "entry '3=poisson': unknown model 'poisson'"),
    ("5-2=gaussian", "entry '5-2=gaussian': the range 5-2 is empty"),
    ("40-42=gaussian", r"entry '40-42=gaussian': column 42 is out of range \(X has 42 columns, 0-41\)"),
    ("0=bernoulli", "entry '0=bernoulli': column 0 holds values other than 0 and 1"),
])
def test_bad_column_models_are_rejected_naming_the_entry(mixed_columns, entry, message):
    X, Y, _ = mixed_columns
    with pytest.raises(MlnbError, match=message):
        NaiveBayes(event_model="mixed", column_models=[entry]).fit(X, Y)


def test_multinomial_override_of_a_negative_column_is_rejected(mixed_columns):
    X, Y, _ = mixed_columns
    X = X.copy()
    X[0, 0] = -1.0
    with pytest.raises(MlnbError, match="entry '0=multinomial': column 0 holds negative values"):
        NaiveBayes(event_model="mixed", column_models=["0=multinomial"]).fit(X, Y)


def test_bernoulli_columns_score_presence(mixed_columns):
    # a value of 2 in a column trained as 0/1 counts as present, as BernoulliNB(binarize=0) has it
    X, Y, (_, binary, _) = mixed_columns
    model = NaiveBayes(event_model="mixed").fit(X, Y)
    X2 = X.copy()
    X2[:, binary[0]] *= 2
    np.testing.assert_array_equal(model.decision_function(X2), model.decision_function(X))
