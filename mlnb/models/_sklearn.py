r"""scikit-learn conventions for every mlnb model: class labels in, class labels out.

An mlnb model natively learns a 0/1 matrix Y (documents × categories, sparse or dense) and
scores every category at once, Z = X·W + b (n × K); with ``task="multiclass"`` Y is one-hot or
class indices 0..K−1, Z holds joint log-likelihoods and softmax(Z) is the posterior. That native
form is what a study uses, and it is passed through untouched.

A scikit-learn caller instead hands ``fit`` a 1-D y of class labels (strings, integers, ...),
and expects ``predict`` to give labels back, ``classes_`` to list them, ``decision_function`` to
be 1-D for two classes and ``predict_proba`` to have one column per class summing to 1. This
module maps the one onto the other, around each model's own methods:

    y (1-D)             task          native Y the model fits             decision_function   predict_proba
    two classes         multilabel    Y = [y = c₁] (n × 1)                 z (n,)              [1 − σ(z), σ(z)]
    K > 2 classes       multilabel    one-hot (n × K): one-vs-rest         Z (n × K)           σ(Z) / Σ_k σ(Z_k)
    K ≥ 2 classes       multiclass    class indices 0..K−1 (softmax)       Z; K = 2: z₁ − z₀   softmax(Z)

``predict`` returns ``classes_[index]``: the second class where z > 0 (two classes), else the
class of the largest score. With task="multiclass", numeric labels are the class indices 0..K−1
themselves (as they always were): ``classes_`` = 0..K−1 with K = largest label + 1, so a class
absent from training keeps its column; other labels (strings) map to 0..K−1 in sorted order.

A 2-D y is the native matrix, except an (n × 1) column that is not 0/1: scikit-learn's
"column-vector y", raveled with a ``DataConversionWarning``.

The mapping wraps each subclass's ``fit``, ``partial_fit``, ``decision_function``, ``predict``,
``predict_proba`` and ``predict_log_proba`` (``adapt``, called by ``LinearMultilabelModel`` for
every subclass). Only the outermost call of a thread translates: a model's own code calling its
(or another model's) methods inside it always speaks the native form.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import ClassifierMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.utils.multiclass import type_of_target

from mlnb.errors import MlnbError

#: how 1-D class labels map onto the native Y (see the module docstring)
BINARY, ONE_VS_REST, SOFTMAX = "binary", "one_vs_rest", "softmax"


class NotFittedError(MlnbError, SklearnNotFittedError):
    """A model used before ``fit``: an ``MlnbError`` (one line, CLI exit code 2) that is also
    scikit-learn's ``NotFittedError`` (so ``ValueError`` and ``AttributeError``)."""


class NotNumbersError(MlnbError, TypeError):
    """An object-dtype X holding something that is no number (a ``TypeError``, as numpy's)."""


_native = threading.local()


@contextlib.contextmanager
def _inside():
    """Calls made inside a translated call speak the native form."""
    depth = getattr(_native, "depth", 0)
    _native.depth = depth + 1
    try:
        yield
    finally:
        _native.depth = depth


def _outermost() -> bool:
    return getattr(_native, "depth", 0) == 0


def check_array_input(X, what: str = "X"):
    """What scikit-learn callers pass and mlnb's own checks name less helpfully: a 1-D array (one
    document or one feature?), complex values, numbers held in an object array (converted)."""
    if X is None or sp.issparse(X) or not hasattr(X, "dtype") or not hasattr(X, "ndim"):
        return X
    if X.ndim == 1:
        raise MlnbError(f"{what}: expected a 2-D matrix (documents × features), got a 1-D array of shape {X.shape}: "
                        "Reshape your data, X.reshape(1, -1) for one document or X.reshape(-1, 1) for one feature")
    if X.dtype.kind == "c":
        raise MlnbError(f"{what}: Complex data not supported; expected real feature values")
    if X.dtype.kind == "O":
        try:
            return np.asarray(X, dtype=np.float64)
        except TypeError as error:
            raise NotNumbersError(f"{what}: expected numbers, got dtype object: {error}") from None
        except ValueError as error:
            raise MlnbError(f"{what}: expected numbers, got dtype object: {error}") from None
    return X


def _n_documents(X) -> int | None:
    shape = getattr(X, "shape", None)
    if shape is None:
        try:
            shape = np.shape(X)
        except (ValueError, TypeError):
            return None
    return shape[0] if len(shape) else None


def _task(model) -> str:
    return getattr(model, "task", "multilabel")


def _as_labels(y):
    """y as a 1-D array of class labels, or None when y is the native matrix Y."""
    if y is None:
        raise MlnbError("fit requires y to be passed, but the target y is None: class labels (n,) or a 0/1 "
                        "matrix Y (documents × categories)")
    if sp.issparse(y):
        return None
    labels = np.asarray(y) if not isinstance(y, np.ndarray) else y
    if labels.ndim == 2 and labels.shape[1] == 1 and labels.dtype.kind in "iufb" and labels.size \
            and np.isin(labels, (0, 1)).all():
        return None  # one category's 0/1 column
    if labels.ndim == 2 and labels.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected: class labels are read from its "
                      "one column (y.ravel())", DataConversionWarning, stacklevel=4)
        labels = labels.ravel()
    return labels if labels.ndim == 1 else None


def _class_indices(model, labels) -> bool:
    """Whether task="multiclass" reads the labels as class indices 0..K−1 (numbers; its own check
    names a label that is not a whole number ≥ 0)."""
    return _task(model) == "multiclass" and labels.dtype.kind in "iufb"


def _native_labels(model, labels, classes):
    """(native Y of the labels, mode): see the module docstring's table."""
    n = labels.shape[0]
    if classes is None:  # multiclass class indices, passed as they are
        return labels, SOFTMAX
    index = np.searchsorted(classes, labels)
    unknown = (index >= classes.size) | (classes[np.minimum(index, classes.size - 1)] != labels)
    if unknown.any():
        raise MlnbError(f"y has label {labels[np.flatnonzero(unknown)[0]]!r}, which is not among the classes "
                        f"{list(classes)} the model was given")
    if _task(model) == "multiclass":
        return index, SOFTMAX
    if classes.size == 2:
        return (index == 1).astype(np.int8)[:, None], BINARY  # (n, 1)
    one_hot = sp.csr_matrix((np.ones(n, dtype=np.int8), index, np.arange(n + 1)), shape=(n, classes.size))
    return one_hot, ONE_VS_REST


def _classes_of(model, labels, given=None):
    """The classes of a fit: ``given`` (partial_fit's ``classes``), else the sorted distinct labels
    (None: multiclass class indices 0..K−1)."""
    if given is not None:
        classes = np.unique(np.asarray(given))
        if classes.size < 2:
            raise MlnbError(f"classes must hold at least 2 classes, got {list(classes)}")
        return classes
    if _class_indices(model, labels):
        return None
    target = type_of_target(labels, input_name="y")
    if target not in ("binary", "multiclass"):
        raise MlnbError(f"Unknown label type: {target!r}: y holds class labels (n,) or a 0/1 matrix Y "
                        "(documents × categories)")
    classes = np.unique(labels)
    if classes.size < 2:
        raise MlnbError(f"y has 1 class ({classes[0]!r} only): a classifier needs at least 2 classes"
                        if classes.size else "y has no labels")
    return classes


def _forget_labels(model) -> None:
    model.__dict__.pop("_label_mode", None)
    model.__dict__.pop("_classes", None)


def _adapt_fit(fit):
    @functools.wraps(fit)
    def fit_labels(self, X, y=None, *args, **kwargs):
        if not _outermost():
            return fit(self, X, y, *args, **kwargs)
        X = check_array_input(X)
        labels = _as_labels(y)
        with _inside():
            if labels is None:
                fit(self, X, y, *args, **kwargs)
                _forget_labels(self)
            else:
                if _n_documents(X) is not None and labels.shape[0] != _n_documents(X):
                    raise MlnbError(f"y must have one label per document ({_n_documents(X)}), got {labels.shape[0]}")
                classes = _classes_of(self, labels)
                Y, mode = _native_labels(self, labels, classes)
                fit(self, X, Y, *args, **kwargs)
                self._label_mode, self._classes = mode, classes
            getattr(self, "weights_", None)  # a lazy model (Naive Bayes) builds W now: scoring changes no state
        return self
    return fit_labels


def _adapt_partial_fit(partial_fit):
    @functools.wraps(partial_fit)
    def partial_fit_labels(self, X, y=None, *args, classes=None, **kwargs):
        if not _outermost():
            return partial_fit(self, X, y, *args, **kwargs)
        X = check_array_input(X)
        labels = _as_labels(y)
        with _inside():
            if labels is None:
                if "_label_mode" in self.__dict__:
                    raise MlnbError("partial_fit got a label matrix Y, but earlier calls gave class labels y")
                return partial_fit(self, X, y, *args, **kwargs)
            started = "_label_mode" in self.__dict__ or self.__sklearn_is_fitted__()
            if started and "_label_mode" not in self.__dict__:
                raise MlnbError("partial_fit got class labels y, but earlier calls gave a label matrix Y")
            known = self.__dict__.get("_classes") if started else _classes_of(self, labels, classes)
            if not started and known is not None and classes is None:
                raise MlnbError("partial_fit on class labels needs classes=[...] (every class the chunks will "
                                "hold) on its first call")
            Y, mode = _native_labels(self, labels, known)
            partial_fit(self, X, Y, *args, **kwargs)
            self._label_mode, self._classes = mode, known
        return self
    return partial_fit_labels


def _scores(self, native, X):
    """decision_function in the labels' form."""
    Z = native(self, X)
    mode = self._label_mode
    if mode == BINARY:
        return Z[:, 0]
    if mode == SOFTMAX and Z.shape[1] == 2:
        return Z[:, 1] - Z[:, 0]
    return Z


def _predictions(self, native, X, *args, **kwargs):
    mode = self._label_mode
    classes = self.classes_
    if mode == BINARY and not (args or kwargs):  # scikit-learn's rule: the second class where z > 0
        return classes[(self.decision_function(X)[:, 0] > 0).astype(np.intp)]
    if mode == BINARY:  # a threshold on P
        return classes[native(self, X, *args, **kwargs)[:, 0].astype(np.intp)]
    if mode == SOFTMAX:
        return classes[native(self, X, *args, **kwargs)]
    if args or kwargs:
        raise MlnbError("a threshold applies to 0/1 category predictions; with class labels predict gives the "
                        "class of the largest score")
    return classes[np.argmax(self.decision_function(X), axis=1)]


def _probabilities(self, native, X, *args, **kwargs):
    P = native(self, X, *args, **kwargs)
    mode = self._label_mode
    if mode == BINARY:
        return np.column_stack([1 - P[:, 0], P[:, 0]])
    if mode == ONE_VS_REST:  # one-vs-rest: each σ(z_k) normalised, as OneVsRestClassifier does
        return P / P.sum(axis=1, keepdims=True)
    return P


def _log_probabilities(self, native, X, *args, **kwargs):
    mode = self._label_mode
    if mode == BINARY:
        z = self.decision_function(X)[:, 0].astype(np.float64)  # (n,)
        return np.column_stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)])  # log σ(−z), log σ(z)
    if mode == ONE_VS_REST:
        P = self.predict_proba(X)  # (n, K) σ(Z), native: this runs inside the translated call
        with np.errstate(divide="ignore"):
            return np.log(P / P.sum(axis=1, keepdims=True))
    return native(self, X, *args, **kwargs)


_OUTPUTS = {"decision_function": _scores, "predict": _predictions, "predict_proba": _probabilities,
            "predict_log_proba": _log_probabilities}


def _adapt_output(method, translate):
    @functools.wraps(method)
    def with_labels(self, X, *args, **kwargs):
        if not _outermost():
            return method(self, X, *args, **kwargs)
        X = check_array_input(X)
        with _inside():
            if self.__dict__.get("_label_mode") is None:
                return method(self, X, *args, **kwargs)
            return translate(self, method, X, *args, **kwargs)
    return with_labels


def adapt(cls) -> None:
    """Wrap the methods ``cls`` itself defines so that they take and give class labels (see above)."""
    for name, adapter in (("fit", _adapt_fit), ("partial_fit", _adapt_partial_fit)):
        method = cls.__dict__.get(name)
        if method is not None and not getattr(method, "_takes_labels", False):
            wrapped = adapter(method)
            wrapped._takes_labels = True
            setattr(cls, name, wrapped)
    for name, translate in _OUTPUTS.items():
        method = cls.__dict__.get(name)
        if method is not None and not getattr(method, "_takes_labels", False):
            wrapped = _adapt_output(method, translate)
            wrapped._takes_labels = True
            setattr(cls, name, wrapped)


class SklearnClassifier(ClassifierMixin):
    """scikit-learn's classifier surface for a model fitted by ``adapt``-ed methods: ``classes_``,
    ``score`` (accuracy; for a label matrix Y the subset accuracy), ``__sklearn_is_fitted__`` and
    the tags (sparse X, multilabel Y, X ≥ 0 where the model needs counts)."""

    def _poor_score(self) -> bool:
        """Whether scikit-learn's accuracy checks (dense blobs of two features) are waived: for the prior
        baseline (chance by design) and, as scikit-learn's own discrete Naive Bayes, count models."""
        return False

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "weights_")

    @property
    def classes_(self) -> np.ndarray:
        """The class labels of ``predict`` (1-D y), else the category (class) indices 0..K−1."""
        classes = self.__dict__.get("_classes")
        if classes is not None:
            return classes
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit(X, y) first")
        return np.arange(self.bias_.shape[0])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        # a 0/1 matrix Y: any number of categories per document (task="multiclass": exactly one)
        tags.target_tags.multi_output = tags.classifier_tags.multi_label = _task(self) != "multiclass"
        try:
            tags.input_tags.positive_only = bool(self._non_negative_features())
            tags.classifier_tags.poor_score = bool(self._poor_score())
        except MlnbError:  # an invalid hyperparameter: fit will say which
            pass
        return tags
