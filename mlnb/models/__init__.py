"""Models: each ends as per-category scores X·W + b (see ``_linear``).

Every model kind a study can name is registered here, one line each
(see ``registry``).
"""

from mlnb.models import linear_svm, logistic, naive_bayes, nb_logistic, prior, sklearn_logistic
from mlnb.models.logistic import LogisticRegression
from mlnb.models.naive_bayes import NaiveBayes, sparse
from mlnb.models.registry import KINDS, ModelKind, get_kind, register
from mlnb.models.sklearn_logistic import SklearnLogisticRegression

register(naive_bayes.KIND)
register(logistic.KIND)
register(sklearn_logistic.KIND)
register(nb_logistic.KIND)
register(linear_svm.KIND)
register(prior.KIND)
register(sparse.KIND)

__all__ = ["KINDS", "LogisticRegression", "ModelKind", "NaiveBayes", "SklearnLogisticRegression", "get_kind",
           "register"]
