r"""Which models of a study the array engine fits, and the fitted model the study sees.

The engine takes a model by what its estimator is and declares, never by its kind's name:

* a ``NaiveBayes`` whose event model counts F, t, N, n only (its record has no sums of squares,
  column statistics or design of its own): counted on the device; multilabel count models with an
  array formula get W on the device too (``naive_bayes``), any other is turned into W by its own
  module on the host;
* a minibatch ``LogisticRegression`` (``solver = "minibatch"``), without a scale R or a held-out
  monitor: its passes on the device (``logistic``), from ``init_from``'s W and b when given.

Any other model of the study is fitted by the CPU engine as before (a study may mix them).

A fitted model is an ``ArrayModel``: W and b stay on the device, ``decision_function`` scores there
(the test documents are copied to the device once and kept for the next model), and every other
attribute is the CPU estimator's — its fitted attributes (``counts_``, ``history_``, ...) filled in
from the device's results when first asked for.
"""

from __future__ import annotations

import weakref

import numpy as np
import scipy.sparse as sp

from mlnb.data.validate import check_labels
from mlnb.engine.array import logistic, naive_bayes
from mlnb.engine.array.device import ArrayNamespace, namespace
from mlnb.engine.array.model import ArrayModel
from mlnb.errors import MlnbError
from mlnb.models._linear import as_csr_float32
from mlnb.models.logistic import LogisticRegression
from mlnb.models.naive_bayes import NaiveBayes


class ArrayEngine:
    """Fitting and scoring on one namespace (``device.namespace``)."""

    def __init__(self, ns: ArrayNamespace):
        self.ns = ns
        self._scored = None  # (weak reference to the host X, its device copy): the last X scored

    # -- which models ---------------------------------------------------------------------------
    def fits(self, estimator, arguments: dict) -> bool:
        """Whether this engine fits ``estimator`` with these ``fit`` keywords (module docstring)."""
        if isinstance(estimator, NaiveBayes):
            return naive_bayes.counts_on_device(naive_bayes.record_of(estimator))
        if isinstance(estimator, LogisticRegression):
            return logistic.supports(estimator, arguments)
        return False

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, estimator, X, Y, task: str, arguments: dict) -> ArrayModel:
        """``estimator`` fitted on X (n × V) and Y (n × K 0/1) on the device."""
        if isinstance(estimator, NaiveBayes):
            return self._fit_naive_bayes(estimator, X, Y, task)
        return logistic.fit(self, estimator, X, Y, arguments)

    def _fit_naive_bayes(self, estimator: NaiveBayes, X, Y, task: str) -> ArrayModel:
        record = naive_bayes.record_of(estimator)
        X = as_csr_float32(X, non_negative=record.non_negative)
        Y = check_labels(Y, "Y", n_documents=X.shape[0])
        if Y.shape[1] == 0 or X.shape[0] == 0:
            raise MlnbError(f"X {X.shape} and Y {Y.shape}: fitting needs a document and a category")
        fitted = naive_bayes.fit(self.ns, estimator, X, Y, task)

        def finish():  # the CPU estimator's counts_ (its W and b, if asked, from its own formula)
            if "counts_" not in estimator.__dict__:
                estimator.counts_ = fitted.counts.to_host(self.ns)

        return ArrayModel(self, estimator, fitted.W, fitted.b, fitted.presence, record.non_negative,
                          fitted.untrainable, finish)

    # -- scoring --------------------------------------------------------------------------------
    def on_device(self, X: sp.csr_matrix):
        """X (host CSR float32, checked) on the device, kept for the next model that scores the same X."""
        last = self._scored
        if last is not None and last[0]() is X:
            return last[1]
        X_device = self.ns.csr(X, np.float32)
        try:
            self._scored = (weakref.ref(X), X_device)
        except TypeError:  # pragma: no cover  (a matrix type without weak references: not kept)
            self._scored = None
        return X_device


def engine_for(device: str) -> ArrayEngine | None:
    """The array engine of ``engine.device`` ("gpu", "array-numpy"), or None for "cpu"."""
    if device == "cpu":
        return None
    return ArrayEngine(namespace(device))
