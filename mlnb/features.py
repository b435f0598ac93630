r"""Feature transforms fitted on the training documents and applied to both parts.

* ``none``      X as loaded (counts for synthetic and text data).
* ``binary``    x_iw = [x_iw > 0], word presence.
* ``log_tfidf`` LYRL2004's "ltc" weighting: x_iw = (1 + ln tf_iw) · ln(n / df_w),
                each row scaled to unit L2 norm (df and n from the training part).

``min_df`` keeps only the words present in at least that many training
documents (0 keeps every column, even words never seen in training), and
``max_features`` at most that many, those in the most training documents (ties
by column order); the test part uses the same columns.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlnb._kernels.csr import column_counts
from mlnb.errors import MlnbError

TRANSFORMS = ("none", "binary", "log_tfidf")


class FeatureTransform:
    """Fit on training X, then ``transform`` any X with the same columns."""

    def __init__(self, transform: str = "none", min_df: int = 0, max_features: int = 0):
        if transform not in TRANSFORMS:
            raise MlnbError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
        self.transform_name = transform
        self.min_df = min_df
        self.max_features = max_features

    def fit(self, X: sp.csr_matrix) -> "FeatureTransform":
        if self.transform_name == "log_tfidf" and X.nnz and np.any(X.data != np.round(X.data)):
            raise MlnbError("features.transform = 'log_tfidf' expects word counts, but the data hold "
                            "non-integer values (already weighted?); use 'none' or 'binary'")
        document_frequency = column_counts(X.indices, X.shape[1])  # (V,)
        columns = np.flatnonzero(document_frequency >= self.min_df)
        if self.max_features and columns.size > self.max_features:
            most = np.argsort(-document_frequency[columns], kind="stable")[:self.max_features]
            columns = np.sort(columns[most])
        self.columns_ = columns
        if self.columns_.size == 0:
            raise MlnbError(f"features.min_df = {self.min_df} removes every feature")
        df = document_frequency[self.columns_]
        with np.errstate(divide="ignore"):
            self.idf_ = np.where(df > 0, np.log(X.shape[0] / np.maximum(df, 1)), 0.0).astype(np.float32)
        return self

    def transform(self, X: sp.csr_matrix) -> sp.csr_matrix:
        if self.columns_.size != X.shape[1]:
            X = X[:, self.columns_]
        if self.transform_name == "none":
            return X
        X = X.copy()
        if self.transform_name == "binary":
            X.data = (X.data > 0).astype(np.float32)
            return X
        X.data = np.where(X.data > 0, 1.0 + np.log(np.maximum(X.data, 1e-30)), 0.0).astype(np.float32)
        X = sp.csr_matrix(X.multiply(self.idf_[None, :]), dtype=np.float32)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        return sp.csr_matrix(sp.diags(np.where(norms > 0, 1.0 / np.maximum(norms, 1e-30), 0.0)) @ X,
                             dtype=np.float32)

    def feature_names(self, names: list | None) -> list | None:
        return None if names is None else [names[j] for j in self.columns_]
