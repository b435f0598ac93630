"""Model kinds: what a study may name in ``[models.<name>] kind = "..."``.

A kind ties together its options dataclass (defaults, help and allowed values
in one place), its estimator (whose constructor defaults are those same
values) and how the study wires it: the label it shows, the other models of
the study it starts from, and extra arguments of its ``fit``. Registering a
kind is one line in ``mlnb/models/__init__.py``.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from mlnb._registry import Registry
from mlnb.errors import MlnbError

#: how a kind learns from training documents that come as a stream of chunks (``ModelKind.fits_from``)
#:   counts     : sums over documents (Naive Bayes): one counting pass, exact on any source and engine
#:   minibatch  : passes of minibatch updates (LR, NB-LR): one process steps through the chunks in order;
#:                on Dask, parameter mixing
#:   full_batch : a full gradient summed over partitions per iteration
#:   memory     : needs every training document in memory at once (cannot stream)
FITS_FROM = ("counts", "minibatch", "full_batch", "memory")
#: what a kind's ``decision_function`` gives (``ModelKind.score_type``)
#:   log_odds             : per-category log-odds log P(k|x)/P(not k|x) (multilabel): a 0.5 cut means p = 0.5
#:   joint_log_likelihood : per-class log P(x, c) (multiclass): softmax gives the posterior
#:   ranking              : orders documents within a category; not a log-odds (complement NB)
#:   margin               : a signed distance to a separating hyperplane (SVM)
SCORE_TYPES = ("log_odds", "joint_log_likelihood", "ranking", "margin")
#: how a kind holds its weights (``ModelKind.weights``), for the memory estimate of :mod:`mlnb.budget`
#:   dense  : a V × K matrix W: 16·V·K bytes with its solver's or counts' arrays beside it
#:   sparse : a per-category default plus corrections at the (word, category) pairs that occur in training,
#:            and per-word arrays: memory by the pairs and V + K, never V × K
WEIGHTS = ("dense", "sparse")


@dataclass(frozen=True)
class CountRequest:
    """The Naive Bayes counts a model needs from the one counting pass over the training documents.

    estimator      : an unfitted NaiveBayes whose ``partial_fit`` adds up the counts (Yᵀ·X, ...)
    binarize_input : count x̂ = 1{x > 0} rather than x (NB-LR's ratios)
    """

    estimator: Any
    binarize_input: bool = False


class StreamTrainer(Protocol):
    """What the study offers a kind's ``fit_streamed`` hook, for one model, over the training source.

    The study makes one counting pass for every model first (label counts and each model's
    ``CountRequest``), then calls each model's hook; ``minibatch`` passes run here (one process,
    the chunks in order) or on Dask (parameter mixing), as the study's engine says, and so do the
    full passes of ``sum_over_chunks`` (a full-batch solver's gradients).
    """

    n_features: int
    n_categories: int

    def label_counts(self) -> tuple[Any, int]:
        """(N (K,) float64 training documents per category, n training documents)."""

    def naive_bayes(self, request: CountRequest) -> Any:
        """``request.estimator`` fitted from the summed counts of this model's request."""

    def minibatch(self, engine, *, binarize_input: bool = False, scale=None, coef_init=None,
                  intercept_init=None) -> Any:
        """``engine`` (an unfitted minibatch LogisticRegression) trained by its passes over the source."""

    def count_pairs(self, presence: bool, max_count_memory: float) -> Any:
        """The Naive Bayes counters of the (word, category) pairs that occur in the training chunks (of
        presence [X > 0] with ``presence``): a ``SparseCounts``, or a ``CountStore`` on disk where they pass
        ``max_count_memory`` MiB, out of core; the same counts either way."""

    def sum_over_chunks(self, function, *args, binarize_input: bool = False) -> Any:
        """Σ over every training chunk of ``function(X, Y, *args)`` (X CSR float32 m × V, presence with
        ``binarize_input``; Y CSR int8 m × K), added with ``+`` in a fixed pairwise tree, so the sum is
        the same bits here and on any number of Dask workers: one full pass, e.g. a full gradient.
        ``function`` and ``args`` must be picklable (a module-level function) to run on Dask."""


def _no_counts(estimator) -> CountRequest | None:
    return None


def _any_input(options) -> bool:
    return False


def _log_odds(options, task: str) -> str:
    return "joint_log_likelihood" if task == "multiclass" else "log_odds"


def _no_models(options) -> list[str]:
    return []


def _no_arguments(options, fitted: dict, eval_set) -> dict:
    return {}


def _no_check(options, task: str) -> None:
    return None


def _one_pass(options) -> tuple[int, str]:
    return 1, ""


def _no_idle_options(options) -> dict[str, str]:
    return {}


def _no_schedule(options) -> dict:
    return {}


def _fits_any_data(options, n_categories: int) -> str:
    return ""


def _one_process(options) -> tuple[int, str]:
    return 1, ""


def _no_state(options) -> tuple[float, str]:
    return 0.0, ""


@dataclass(frozen=True)
class ModelKind:
    """A registered model kind.

    name         : the config's ``kind``
    estimator    : the estimator class (scikit-learn conventions)
    options      : the options dataclass; every field made with ``mlnb.options.option``
    help         : one line shown by ``mlnb show-config``
    describe     : options -> the label of tables and legends
    params       : options -> estimator keyword arguments (default: the fields as they are)
    uses         : options -> names of other models of the study that must be fitted first
    fit_arguments: (options, fitted models by name, (X, Y) held out or None) -> extra ``fit`` keywords
    tasks        : the study tasks it can do: "multilabel" (one-vs-rest log-odds per category) and/or
                   "multiclass" (one class per document: joint log-likelihood per class, softmax)
    check        : (options, task) -> raises MlnbError for a combination of options that cannot work
                   (called when the config is loaded, before any data is read)
    check_data   : (options, the data's number of categories) -> what in its options does not fit the data, as
                   "<option> has …" (the study names the model's key before it), or "" (checked once the data's
                   categories are known)

    What it can do, asked by the study (which never compares a kind's name):

    fits_from            : how it learns from a stream of chunks, one of ``FITS_FROM``
    count_request        : estimator -> the ``CountRequest`` its streamed fit reads, or None; asked
                           before the counting pass. The trainer keeps the counts by model, so
                           ``fit_streamed`` may hand ``trainer.naive_bayes`` an equal request built anew
    fit_streamed         : (estimator, options, fitted models by name, StreamTrainer) -> the fitted
                           estimator, from a source read in chunks (None when fits_from = "memory")
    fit_on_device        : (device, estimator, X, Y, task, fit keywords) -> the model fitted on the study's
                           array device (``engine.device``: ``mlnb.models.array.fitting.ArrayDevice``), or None
                           where these options run on the CPU only; None (the default): the kind runs on the
                           CPU only. The device asks this, never the kind's name or the estimator's class
    requires_non_negative: options -> True when its input must be >= 0 (counts, presence)
    score_type           : (options, task) -> one of ``SCORE_TYPES``
    ranks_top_k          : True when its estimator's ``top_k(X, k)`` (1 ≤ k ≤ K) gives each row's k best
                           categories and their float32 scores, best first, equal scores lower category first
                           (those of ``decision_function(X)``), without forming the n × K scores: a study that
                           keeps only each document's k best (engine.scores = "top_k") asks it instead

    What the commands that vary a model ask it (``mlnb.studies``):

    schedule             : (options, size, n_full, max_passes) -> the options for a training sample of ``size`` of
                           the ``n_full`` documents that make as many updates as the full-size fit (curve.schedule =
                           "fixed_updates"), or None (the default): the same options at every size
    schedule_of          : options -> the options a schedule sets, by name, as ``curve.csv`` records them ({}: none)
    idle_options         : options -> {option: why it does nothing with these options} (a sweep over it is refused)

    What one fit costs, for the work estimate of :mod:`mlnb.work` and the memory estimate of :mod:`mlnb.budget`:

    least_passes         : options -> (the least passes over its training documents one fit makes, the
                           option that sets them as 'npasses = 2', or '' when none does)
    processes            : options -> (the worker processes one fit starts, the option that sets them as
                           'n_jobs = 4', or '' when none does): each holds an interpreter and a copy of its data
    state_per_weight     : options -> (bytes per weight (V·K) its solver holds besides W and the 16 bytes
                           the estimate counts for every model, the option that sets them), e.g. L-BFGS's pairs
    weights              : how it holds its weights, one of ``WEIGHTS``: "dense" V × K (refused when that
                           cannot fit), or "sparse" (counted by the pairs that occur)
    dense_equivalent     : a sparse kind: the dense kind whose scores it gives, which the memory refusal of a
                           model of that kind names as the way out (empty: none)
    """

    name: str
    estimator: type
    options: type
    help: str
    describe: Callable[[Any], str]
    params: Callable[[Any], dict] = dataclasses.asdict
    uses: Callable[[Any], list] = _no_models
    fit_arguments: Callable[[Any, dict, Any], dict] = _no_arguments
    tasks: tuple = ("multilabel",)
    check: Callable[[Any, str], None] = _no_check  # (options, task) -> MlnbError for what no single option shows
    check_data: Callable[[Any, int], str] = _fits_any_data
    fits_from: str = "memory"
    count_request: Callable[[Any], CountRequest | None] = _no_counts
    fit_streamed: Callable[[Any, Any, dict, StreamTrainer], Any] | None = None
    fit_on_device: Callable[[Any, Any, Any, Any, str, dict], Any] | None = None
    requires_non_negative: Callable[[Any], bool] = _any_input
    score_type: Callable[[Any, str], str] = _log_odds
    ranks_top_k: bool = False
    schedule: Callable[[Any, int, int, int], Any] | None = None
    schedule_of: Callable[[Any], dict] = _no_schedule
    idle_options: Callable[[Any], dict] = _no_idle_options
    least_passes: Callable[[Any], tuple[int, str]] = _one_pass
    processes: Callable[[Any], tuple[int, str]] = _one_process
    state_per_weight: Callable[[Any], tuple[float, str]] = _no_state
    weights: str = "dense"
    dense_equivalent: str = ""

    def __post_init__(self):
        if self.fits_from not in FITS_FROM:
            raise ValueError(f"model kind {self.name!r}: fits_from must be one of {FITS_FROM}")
        if self.weights not in WEIGHTS:
            raise ValueError(f"model kind {self.name!r}: weights must be one of {WEIGHTS}")
        if (self.fits_from == "memory") != (self.fit_streamed is None):
            raise ValueError(f"model kind {self.name!r}: a kind fits from a stream (fit_streamed) exactly when "
                             "fits_from is not 'memory'")

    @property
    def streams(self) -> bool:
        """Whether it can learn from training documents read chunk by chunk."""
        return self.fits_from != "memory"

    @property
    def runs_on_device(self) -> bool:
        """Whether some of its models can be fitted on an array device (``fit_on_device``)."""
        return self.fit_on_device is not None

    def sparse_equivalents(self, task: str = "multilabel") -> list[str]:
        """The registered kinds with sparse weights that give this kind's scores (``dense_equivalent``) in ``task``."""
        return [kind.name for kind in KINDS.values()
                if kind.weights == "sparse" and kind.dense_equivalent == self.name and task in kind.tasks]

    def build(self, options, seed: int = 0, task: str = "multilabel"):
        """An unfitted estimator with these options (and the study's seed and task where it takes them)."""
        if task not in self.tasks:
            raise MlnbError(f"model kind {self.name!r} does not do task = {task!r} (it does: "
                            f"{', '.join(self.tasks)})")
        params = self.params(options)
        accepted = inspect.signature(self.estimator).parameters
        if "random_state" in accepted:
            params["random_state"] = seed
        if "task" in accepted:
            params["task"] = task
        return self.estimator(**params)


KINDS: Registry[ModelKind] = Registry("model kind")
register = KINDS.add


def get_kind(name: str, where: str = "kind") -> ModelKind:
    return KINDS.named(name, where)
