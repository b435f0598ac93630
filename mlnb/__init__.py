"""mlnb: multilabel one-vs-rest Naive Bayes vs logistic regression studies.

    from mlnb import Dataset, NaiveBayes, evaluate, make_rcv1_like
"""

from mlnb._lazy import lazy_exports

__version__ = "0.1.0"

# name -> the module that defines it. Imported on first use (PEP 562), not here: every command and
# every ``import mlnb.<sub>`` runs this file first, and importing all of these (scikit-learn's dataset
# loaders among them) cost about a second that `mlnb --help` or a synthetic-data study never needed.
_EXPORTS = {"Dataset": "mlnb.data.dataset", "load_svmlight_dataset": "mlnb.data.svmlight",
            "make_rcv1_like": "mlnb.data.synthetic", "MlnbError": "mlnb.errors", "evaluate": "mlnb.metrics",
            "roc_auc": "mlnb.metrics", "LogisticRegression": "mlnb.models", "NaiveBayes": "mlnb.models",
            "SklearnLogisticRegression": "mlnb.models", "LinearSVM": "mlnb.models.linear_svm",
            "NBLogisticRegression": "mlnb.models.nb_logistic"}

__all__ = ["Dataset", "LinearSVM", "LogisticRegression", "MlnbError", "NaiveBayes", "NBLogisticRegression",
           "SklearnLogisticRegression", "evaluate", "load_svmlight_dataset", "make_rcv1_like", "roc_auc",
           "__version__"]

__getattr__, __dir__ = lazy_exports("mlnb", _EXPORTS, globals())
