r"""Mixed Naive Bayes: an event model per group of columns, summed.

Naive Bayes assumes the features independent given the category, so the
log-odds of a document are a sum over its features, and each group of columns
can have its own event model (as fastNaiveBayes's ``fnb.train`` does):

    log-odds_k(x) = prior_k + bernoulli_k(x_B) + multinomial_k(x_M) + gaussian_k(x_G)

each term the formula of its own module with a zero prior; the multinomial
group's θ is normalised over the columns of M only. Multiclass alike, from
each module's ``log_likelihood``:

    J_c(x) = log prior_c + bernoulli_c(x_B) + multinomial_c(x_M) + gaussian_c(x_G)

i.e. the sum of scikit-learn's per-group joint log-likelihoods, each of which
holds the prior, minus the prior counted (groups − 1) times too often. Columns are assigned from
the counts' column statistics:

    integer values, min ≥ 0, max ≤ 1  → bernoulli
    integer values, min ≥ 0, max > 1  → multinomial
    otherwise (negative or fractional) → gaussian

This is fastNaiveBayes's ``fnb.detect_distribution`` (R package 2.2.1: integer columns with no
value above 1 are Bernoulli, other integer columns multinomial, the rest Gaussian) for every
column without negative values. It differs for integer columns with a negative value:
fastNaiveBayes never looks at the sign, so {−3, 0, 1} is Bernoulli and {−2, 0, 5} multinomial
there; here both are Gaussian, because a count or a presence cannot be negative (the multinomial
and Bernoulli likelihoods of such values are not defined). Give ``column_models`` entries to
choose otherwise. (fastNaiveBayes also reads a missing value as 0 and can detect from the first
``nrows`` rows only; mlnb's inputs have no missing values and it detects from every training row.)

and ``column_models`` entries such as "0-29=gaussian" or "30=bernoulli"
(0-based columns, ranges inclusive, later entries win) override the detection.

Scoring is still one product: [Z_G∘Z_G, Z]·W + b, W ((G + V) × K) with one row per
Gaussian column for its square and one per column, where Z is X with the Bernoulli
columns read as presence and the Gaussian ones centred where that matters
(see ``gaussian``).

>>> parse_column_models(["0-2=gaussian", "1=bernoulli"], 4)
[('0-2=gaussian', array([0, 1, 2]), 'gaussian'), ('1=bernoulli', array([1]), 'bernoulli')]
"""

from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp

from mlnb.errors import MlnbError
from mlnb.models.naive_bayes import bernoulli, gaussian, multinomial
from mlnb.models.naive_bayes.counts import NBCounts
from mlnb.models.naive_bayes.event_model import EventModel, Weights

COLUMN_MODELS = ("bernoulli", "multinomial", "gaussian")
_ENTRY = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?=\s*(\w+)\s*$")


def parse_column_models(entries, n_columns: int) -> list[tuple[str, np.ndarray, str]]:
    """[(entry, columns, model)] from entries 'COLUMNS=MODEL', checked against n_columns."""
    if isinstance(entries, str):
        raise MlnbError(f"column_models must be a list of 'COLUMNS=MODEL' entries, got the string {entries!r}")
    parsed = []
    for entry in entries:
        match = _ENTRY.match(entry) if isinstance(entry, str) else None
        if match is None:
            raise MlnbError(f"column_models entry {entry!r}: expected 'COLUMNS=MODEL', COLUMNS a 0-based column "
                            "or an inclusive range such as '0-29'")
        first, last, model = int(match[1]), int(match[2] or match[1]), match[3]
        if model not in COLUMN_MODELS:
            raise MlnbError(f"column_models entry {entry!r}: unknown model {model!r}, expected one of "
                            f"{', '.join(COLUMN_MODELS)}")
        if first > last:
            raise MlnbError(f"column_models entry {entry!r}: the range {first}-{last} is empty")
        if last >= n_columns:
            raise MlnbError(f"column_models entry {entry!r}: column {last} is out of range (X has {n_columns} "
                            f"columns, 0-{n_columns - 1})")
        parsed.append((entry, np.arange(first, last + 1), model))
    return parsed


def column_event_models(counts: NBCounts, entries) -> np.ndarray:
    """The event model of every column (V,) of str: detected, then overridden by the entries."""
    nonnegative = counts.lo >= 0
    models = np.where(~(counts.integer & nonnegative), "gaussian",
                      np.where(counts.hi <= 1, "bernoulli", "multinomial"))  # (V,) str
    for entry, columns, model in parse_column_models(entries, counts.shape[1]):
        if model == "bernoulli":
            wrong = columns[(counts.lo[columns] < 0) | (counts.hi[columns] > 1) | ~counts.integer[columns]]
            if wrong.size:
                raise MlnbError(f"column_models entry {entry!r}: column {wrong[0]} holds values other than 0 "
                                "and 1, which a Bernoulli column cannot")
        if model == "multinomial":
            wrong = columns[~nonnegative[columns]]
            if wrong.size:
                raise MlnbError(f"column_models entry {entry!r}: column {wrong[0]} holds negative values, "
                                "which a multinomial column cannot")
        models[columns] = model
    return models


def log_odds(counts: NBCounts, models: np.ndarray, N_bar, prior, alpha: float, var_smoothing: float,
             dtype=np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(W ((G + V) × K) in ``dtype``, b (K,), shift (V,), ε) from the counts, the column models (V,),
    N̄ (K,) and the prior log-odds (K,); outside each category F̄ = t − F and F̄2 = t2 − F2."""
    F, F2, N, t = counts.F, counts.F2, counts.N, counts.t
    B, M, G = (np.flatnonzero(models == name) for name in COLUMN_MODELS)
    no_prior = np.zeros_like(prior)
    W = np.zeros((G.size + F.shape[1], F.shape[0]), dtype=dtype)  # squares of Gaussian columns, then X
    b = prior.copy()
    if B.size:
        W[G.size + B], b_B = bernoulli.log_odds(F[:, B], t[B], N, N_bar, no_prior, alpha, dtype)
        b += b_B
    if M.size:
        # the multinomial group's θ is normalised over its own columns; its values are integers: no clip
        W[G.size + M], b_M = multinomial.log_odds(F[:, M], t[M], no_prior, alpha, None, False, dtype)
        b += b_M
    shift, eps = np.zeros(F.shape[1]), 0.0
    if G.size:
        eps = gaussian.epsilon(t[G], counts.t2[G], counts.n, var_smoothing)
        shift[G] = gaussian.shift(t[G], counts.t2[G], counts.n)
        W_G, b_G = gaussian.log_odds(F[:, G], F2[:, G], N, t[G], counts.t2[G], N_bar, no_prior, eps, shift[G],
                                     dtype)
        W[:G.size], W[G.size + G] = W_G[:G.size], W_G[G.size:]
        b += b_G
    return W, b, shift, eps


def log_likelihood(counts: NBCounts, models: np.ndarray, log_prior, alpha: float,
                   var_smoothing: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Multiclass: (W ((G + V) × K) float64, b (K,), shift (V,), ε) from the per-class counts, the column
    models (V,) and log prior_c (K,)."""
    F, F2, N = counts.F, counts.F2, counts.N
    B, M, G = (np.flatnonzero(models == name) for name in COLUMN_MODELS)
    no_prior = np.zeros_like(log_prior)
    W = np.zeros((G.size + F.shape[1], F.shape[0]))  # squares of Gaussian columns, then X
    b = log_prior.copy()
    if B.size:
        W[G.size + B], b_B = bernoulli.log_likelihood(F[:, B], N, no_prior, alpha)
        b += b_B
    if M.size:
        W[G.size + M], b_M = multinomial.log_likelihood(F[:, M], no_prior, alpha)
        b += b_M
    shift, eps = np.zeros(F.shape[1]), 0.0
    if G.size:
        eps = gaussian.epsilon(counts.t[G], counts.t2[G], counts.n, var_smoothing)
        shift[G] = gaussian.shift(counts.t[G], counts.t2[G], counts.n)
        W_G, b_G = gaussian.log_likelihood(F[:, G], F2[:, G], N, no_prior, eps, shift[G],
                                           totals=(counts.t[G], counts.t2[G], counts.n))
        W[:G.size], W[G.size + G] = W_G[:G.size], W_G[G.size:]
        b += b_G
    return W, b, shift, eps


def design(X: sp.csr_matrix, models: np.ndarray, shift: np.ndarray, dtype=np.float32) -> sp.csr_matrix:
    """[Z_G∘Z_G, Z] (n × (G + V)): Z is X with Bernoulli columns as presence, Gaussian ones shifted."""
    bernoulli_column = (models == "bernoulli")[X.indices]  # (nnz,)
    if bernoulli_column.any():
        X = X.copy()
        X.data[bernoulli_column] = X.data[bernoulli_column] > 0
    return gaussian.design(X, shift, squared=np.flatnonzero(models == "gaussian"), dtype=dtype)


# -- as a registered event model (``event_model``) ---------------------------------------------
def _log_odds(counts, outside, prior, p) -> Weights:
    models = column_event_models(counts, p.column_models)
    # float64 with Gaussian columns: the estimator then scores in float64 (see ``gaussian``)
    dtype = np.float64 if (models == "gaussian").any() else np.float32
    return Weights(*log_odds(counts, models, outside.N_bar, prior, p.alpha, p.var_smoothing, dtype), models)


def _log_likelihood(counts, log_prior, p) -> Weights:
    models = column_event_models(counts, p.column_models)
    return Weights(*log_likelihood(counts, models, log_prior, p.alpha, p.var_smoothing), models)


EVENT_MODEL = EventModel(
    name="mixed", help="bernoulli, multinomial or gaussian per column", log_odds=_log_odds,
    log_likelihood=_log_likelihood, non_negative=False, squares=True, column_stats=True,
    options=("var_smoothing", "column_models"),
    design=lambda X, weights, dtype: design(X, weights.column_models, weights.shift, dtype=dtype),
    check_counts=lambda counts, p: column_event_models(counts, p.column_models))
