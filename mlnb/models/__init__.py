"""Models: each ends as per-category log-odds X·W + b (see ``_linear``)."""

from mlnb.models.logistic import LogisticRegression
from mlnb.models.naive_bayes import NaiveBayes
from mlnb.models.sklearn_logistic import SklearnLogisticRegression

__all__ = ["LogisticRegression", "NaiveBayes", "SklearnLogisticRegression"]
