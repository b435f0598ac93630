"""mlnb: multilabel one-vs-rest Naive Bayes vs logistic regression studies.

    from mlnb import Dataset, NaiveBayes, evaluate, make_rcv1_like
"""

from mlnb.data import Dataset, load_svmlight_dataset, make_rcv1_like
from mlnb.errors import MlnbError
from mlnb.metrics import evaluate, roc_auc
from mlnb.models import LogisticRegression, NaiveBayes, SklearnLogisticRegression
from mlnb.models.linear_svm import LinearSVM
from mlnb.models.nb_logistic import NBLogisticRegression

__version__ = "0.1.0"

__all__ = ["Dataset", "LinearSVM", "LogisticRegression", "MlnbError", "NaiveBayes", "NBLogisticRegression",
           "SklearnLogisticRegression", "evaluate", "load_svmlight_dataset", "make_rcv1_like", "roc_auc",
           "__version__"]
