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
            "NBLogisticRegression": "mlnb.models.nb_logistic", "PriorBaseline": "mlnb.models.prior",
            "Evaluation": "mlnb.metrics", "NotFittedError": "mlnb.models._sklearn"}
#: submodules reached as attributes (``mlnb.plot.roc``) after a plain ``import mlnb``
_SUBMODULES = ("plot",)

__all__ = ["Dataset", "Evaluation", "LinearSVM", "LogisticRegression", "MlnbError", "NaiveBayes",
           "NBLogisticRegression", "NotFittedError", "PriorBaseline", "SklearnLogisticRegression", "evaluate",
           "load_svmlight_dataset", "make_rcv1_like", "plot", "roc_auc", "__version__"]

_export, _exported = lazy_exports("mlnb", _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(set(_exported()) | set(_SUBMODULES))  # mlnb.plot is listed before its first import


def __getattr__(name: str):
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"mlnb.{name}")
    return _export(name)
