r"""The device a study fits and scores on (``[engine] device``), and which of its models run there.

A model runs on the device when its kind declares a device fit (``ModelKind.fit_on_device``) and that
fit takes the estimator's options; the device never looks at a kind's name or an estimator's class:

* Naive Bayes (``mlnb.models.naive_bayes.array``): an event model that counts F, t, N, n only (its
  record has no sums of squares, column statistics or design of its own) is counted on the device;
  multilabel count models with an array formula get W on the device too, any other is turned into W
  by its own module on the host;
* logistic regression (``mlnb.models.logistic.array``): the minibatch solver, without a scale R or a
  held-out monitor: its passes on the device, from ``init_from``'s W and b when given.

Any other model of the study is fitted on the CPU as before (a study may mix them).

A fitted model is an ``ArrayModel``: W and b stay on the device, ``decision_function`` scores there
(the test documents are copied to the device once and kept for the next model), and every other
attribute is the CPU estimator's — its fitted attributes (``counts_``, ``history_``, ...) filled in
from the device's results when first asked for.
"""

from __future__ import annotations

import weakref

import numpy as np
import scipy.sparse as sp

from mlnb.models.array.device import ArrayNamespace, namespace
from mlnb.models.array.model import ArrayModel


class ArrayDevice:
    """Fitting and scoring on one namespace (``device.namespace``)."""

    def __init__(self, ns: ArrayNamespace):
        self.ns = ns
        self._scored = None  # (weak reference to the host X, its device copy): the last X scored

    def fit(self, kind, estimator, X, Y, task: str, arguments: dict) -> ArrayModel | None:
        """``estimator`` (of model kind ``kind``) fitted on X (n × V) and Y (n × K 0/1) on this device with
        these ``fit`` keywords, by the kind's ``fit_on_device``; None where the kind declares none or its fit
        does not take these options (then the CPU fits it)."""
        if kind.fit_on_device is None:
            return None
        return kind.fit_on_device(self, estimator, X, Y, task, arguments)

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


def device_for(device: str) -> ArrayDevice | None:
    """The array device of ``engine.device`` ("gpu", "array-numpy"), or None for "cpu"."""
    if device == "cpu":
        return None
    return ArrayDevice(namespace(device))
