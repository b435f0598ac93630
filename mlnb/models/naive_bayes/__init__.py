r"""Naive Bayes for all categories at once, as one log-odds matrix: the whole family.

Every event model is fitted from the same counts of one pass over the data
(``counts``: F = Yᵀ·X, t = 1ᵀ·X, N = 1ᵀ·Y, n, and for real values the sums of
squares), turned into weights W and a bias b by the formula of its own module,
and scored by one sparse product Φ(X)·W + b:

    module        event model                                   Φ(X)
    multinomial   word counts (McCallum & Nigam 1998)           X (or [X > 0] with binarize)
    bernoulli     word presence                                 [X > 0]
    complement    complement counts only (Rennie et al. 2003);  X (or [X > 0])
                  a ranking score, not a log-odds
    gaussian      a normal per feature, category and complement [X∘X, X]
    mixed         bernoulli / multinomial / gaussian per column [X_G∘X_G, X]
    poisson       Poisson word counts (fastNaiveBayes)          X (or [X > 0] with binarize)

Each module's formula runs as one parallel sweep over the counts, written
straight into W's (rows × K) layout (``fused``: ratios of smoothed counts, one
vectorised log). Each module ends with one record of what the estimator needs
to know of it (``event_model.EventModel``), registered in ``estimator`` by one
line: adding an event model is one module and that line. ``estimator`` holds
what they share: the NaiveBayes estimator, complement counts, priors,
categories that cannot be trained, parameter checks, and the options of the
``naive_bayes`` model kind.

With ``task="multiclass"`` (one class per document) each module's
``log_likelihood`` gives per-class log-probabilities instead, Φ(X)·W + b is
every class's joint log-likelihood J, and softmax(J) the posterior;
``multiclass`` holds the labels, class priors and that softmax.
"""

from mlnb.models.naive_bayes.counts import NBCounts
from mlnb.models.naive_bayes.estimator import (EVENT_MODELS, KIND, MODES, SMOOTHINGS, TASKS, NaiveBayes,
                                               NaiveBayesOptions)
from mlnb.models.naive_bayes.multiclass import CLASS_PRIORS
from mlnb.models.naive_bayes.sparse import SparseNaiveBayes, SparseNaiveBayesOptions

__all__ = ["CLASS_PRIORS", "EVENT_MODELS", "KIND", "MODES", "NBCounts", "NaiveBayes", "NaiveBayesOptions",
           "SMOOTHINGS", "SparseNaiveBayes", "SparseNaiveBayesOptions", "TASKS"]
