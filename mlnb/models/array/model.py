"""The fitted model the study sees when a kind's ``fit_on_device`` fitted it (see ``fitting``)."""

from __future__ import annotations

import numpy as np

from mlnb.errors import MlnbError
from mlnb.models._linear import as_csr_float32
from mlnb.models.array import scoring


class ArrayModel:
    """A model fitted on a device (``fitting.ArrayDevice``): W (rows × K float32) and b (K,) on the device,
    scoring there; every other attribute is the CPU estimator's (``estimator``), completed by ``finish``
    when first asked for."""

    def __init__(self, device, estimator, W, b: np.ndarray, binary: bool, non_negative: bool,
                 untrainable: np.ndarray, finish):
        self.device, self.estimator = device, estimator
        self.device_weights, self.device_bias = W, device.ns.asarray(np.asarray(b, dtype=np.float32))
        self.bias_ = np.asarray(b, dtype=np.float32)
        self.binary, self.non_negative = binary, non_negative
        self.untrainable_categories_ = np.asarray(untrainable, dtype=np.int64)
        self.n_features_in_ = int(W.shape[0])
        self._finish = finish
        self._weights = None

    @property
    def weights_(self) -> np.ndarray:
        """W (rows × K) float32 on the host (copied from the device once)."""
        if self._weights is None:
            self._weights = self.device.ns.to_host(self.device_weights)
        return self._weights

    def device_scores(self, X_device):
        """Z = X̂·W + b (n × K float32) on the device, from X on the device."""
        return scoring.linear_scores(self.device.ns, X_device, self.device_weights, self.device_bias, self.binary)

    def decision_function(self, X) -> np.ndarray:
        """Z = X̂·W + b (n × K) float32 on the host, computed on the device (X checked as the CPU
        estimator checks it)."""
        X = as_csr_float32(X, non_negative=self.non_negative)
        if X.shape[1] != self.n_features_in_:
            raise MlnbError(f"X has {X.shape[1]} features, but {type(self.estimator).__name__} was fitted with "
                            f"{self.n_features_in_}: train and test data must share one feature space")
        return self.device.ns.to_host(self.device_scores(self.device.on_device(X)))

    def __getattr__(self, name: str):
        if name.startswith("__") or name in ("estimator", "_finish", "device"):
            raise AttributeError(name)
        finish = self.__dict__.get("_finish")
        if finish is not None:
            self._finish = None
            finish()
        return getattr(self.__dict__["estimator"], name)

    def __repr__(self) -> str:
        return f"ArrayModel({self.estimator!r} on {self.device.ns.name})"
