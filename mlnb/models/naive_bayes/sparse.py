r"""Naive Bayes from sparse event counters: weights as a default plus sparse corrections, scored by request.

The dense ``NaiveBayes`` holds W as a V × K matrix, almost all of it the weight of a (word, category)
pair never seen in training. Here every count event model's weight is split as

    W_wk = D_wk + Δ_wk,     D_wk = Σ_j U_wj·H_jk  (+ G(total_w, k), Bernoulli),     Δ_wk ≠ 0 only where F_kw > 0

D_wk is the weight a pair with F_kw = 0 gets, a sum of J ≤ 3 products of a per-word vector U_j (V,) and a
per-category vector H_j (K,); Δ_wk is kept for the pairs that occur (``SparseCounts``: one per stored pair).
A document x (n × V row; its presence [x > 0] with ``binarize`` and for Bernoulli) scores

    z_k(x) = b_k + Σ_j (x·U_j)·H_jk  [+ Σ_w x_w G(total_w, k)]  + Σ_{pairs (w, k) of its words} x_w·Δ_wk

in float64: a few (n,) products, J multiply-adds per score, and the sparse product of x with the pairs of
its own words (the lecture's request join). With F̄ = total − F (total = t, or Σ_k F_k with mode="tutorial",
floored at 0), N̄ = n − N (tutorial: Σ_j N_j − N), S̄ = Σ_w total_w − S and the per-word pseudo-count α
(α = m/V for the m-estimate), each event model's module declares its U, H, b, Δ (and G) next to its dense
formula: ``sparse_default`` and ``sparse_pair_terms`` of multinomial, poisson, complement and bernoulli,
recorded as its ``EventModel.sparse`` (an ``event_model.SparseForm``). A model whose record has no sparse
form (gaussian, mixed: sums of squares of signed values, not counters) is refused here.

A default that is not separable (Bernoulli's G(τ_w, k) = log(max(N̄_k − τ_w, 0) + α) ties word and category:
``SparseForm.grouped``) is summed over a document's words by grouping them by their total (presence totals
are whole numbers ≤ n: few distinct values), and b's sum over all V words by grouping every word by its
total: O(distinct totals × K), never O(V × K).

A category without a positive (or a negative) training document scores by its smoothed prior alone, as in
the dense model: its H_k, G(·, k) and Δ_·k are 0 and b_k = log((N_k + ½)/(N̄_k + ½)).

Where the counters live decides where Δ lives: with ``SparseCounts`` (memory) Δ is one CSR matrix (V × K,
float64, one value per pair that occurs); with a ``CountStore`` (pairs on disk) each block of test documents
asks the store for its own words' pairs (``pairs_of``) and forms their Δ then.

Scores are computed in float64, block by block of documents (at most ``BLOCK_VALUES`` scores, a block × K),
and each document's sums run in an order of its own (its words in index order, the totals' groups in fixed
pieces), so a document's score never depends on the documents scored with it. ``decision_function`` rounds
them once to float32 (``dtype=np.float64`` keeps them); they equal the dense model's float32 scores within
float32 rounding (the dense model's W is rounded to float32 and its sums accumulate in float32).
``top_k`` ranks the float32 scores block by block, equal scores lower category first, and never holds n × K.
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import BaseEstimator

from mlnb.data.limits import MAX_FEATURES
from mlnb.data.validate import check_labels
from mlnb.errors import MlnbError
from mlnb.models._linear import as_csr_float32, check_fit_shapes
from mlnb.models._sklearn import NotFittedError, SklearnClassifier, adapt
from mlnb.models.naive_bayes.estimator import MODES, NaiveBayes, NaiveBayesOptions, event_model_details
from mlnb.models.naive_bayes.event_model import REGISTERED, Parameters, SparseForm, SparseQuantities, listed, reading
from mlnb.models.naive_bayes.sparse_counts import SparseCounts
from mlnb.models.registry import ModelKind
from mlnb.options import option

#: the registered event models with a sparse form (``EventModel.sparse``): weights as a default plus
#: corrections at the pairs that occur
SPARSE_EVENT_MODELS = tuple(name for name, model in REGISTERED.items() if model.sparse is not None)
#: scores (float64) of one block of documents: the most the scoring holds at once besides its output
BLOCK_VALUES = 1 << 21
#: values of G(τ, k) formed at a time (Bernoulli): a fixed partition of the distinct totals, so that sums over
#: them run in the same pieces whatever the block of documents
GROUP_PIECE_VALUES = 1 << 21
#: pairs whose per-category sums are formed at a time when fitting
PAIR_BATCH = 1 << 22


def _sparse(names: list[str]) -> list[str]:
    """Those of ``names`` with a sparse form."""
    return [name for name in names if name in SPARSE_EVENT_MODELS]


def _dense_field(name: str):
    """A copy of ``NaiveBayesOptions``'s field ``name``: its default, help and allowed values."""
    return copy.copy(NaiveBayesOptions.__dataclass_fields__[name])


@dataclass
class SparseNaiveBayesOptions:
    event_model: str = option("multinomial", ", ".join(f"{name} ({REGISTERED[name].help})"
                                                       for name in SPARSE_EVENT_MODELS),
                              choices=SPARSE_EVENT_MODELS)
    # the options whose meaning and values are the dense kind's: its own fields
    smoothing: str = _dense_field("smoothing")
    alpha: float = _dense_field("alpha")
    m: float = _dense_field("m")
    binarize: bool = option(False, "count word presence instead of counts (the RCV1 tutorial does), for "
                            f"{listed(_sparse(reading('binarize')))}; always on for "
                            f"{listed([name for name in SPARSE_EVENT_MODELS if REGISTERED[name].presence])}")
    mode: str = option("exact", "exact complement counts and priors, or the RCV1 tutorial's approximations "
                       f"({', '.join(_sparse(reading('mode')))})", choices=MODES)
    norm: bool = _dense_field("norm")
    reference: str = _dense_field("reference")
    max_count_memory: float = option(1024, "MiB the (word, category) counters may hold in memory while counting; "
                                     "beyond it they are aggregated out of core (DuckDB)", min=0,
                                     exclusive_min=True)


_DEFAULTS = SparseNaiveBayesOptions()
_PARAMS = tuple(field.name for field in dataclasses.fields(SparseNaiveBayesOptions))


class _Built(NamedTuple):
    """What the counters give, built once per (counts, hyperparameters)."""

    counts: Any
    params: tuple
    alpha: float  # the per-word pseudo-count used
    bias: np.ndarray  # (K,) float64 b
    word_vectors: np.ndarray  # (V, J) float64: U, one column per separable term of the default
    category_vectors: np.ndarray  # (J, K) float64: H
    totals: np.ndarray  # (V,) float64: τ, what F̄ is the rest of
    per_category: dict  # (K,) float64 arrays the pair corrections read
    trainable: np.ndarray  # (K,) bool
    corrections: sp.csr_matrix | None  # (V, K) float64 Δ (counts in memory), or None (a CountStore)
    groups: tuple | None  # Bernoulli: (group of each word (V,) int64, total of each group (T,) float64)


class SparseNaiveBayes(SklearnClassifier, BaseEstimator):
    """Naive Bayes for every category (one-vs-rest) from counters of the (word, category) pairs that occur.

    Parameters
    ----------
    event_model : str, one of ``SPARSE_EVENT_MODELS``
        The event models of ``NaiveBayes`` whose record has a sparse form (``EventModel.sparse``): the
        count models (gaussian and mixed need sums of squares of signed values, not counters).
    smoothing : {"additive", "m_estimate"}
        Additive pseudo-count ``alpha`` per word, or the m-estimate's ``m``/V per word.
    alpha, m : float > 0
        The pseudo-counts.
    binarize : bool
        Count and score word presence [x > 0]; always on for bernoulli.
    mode : {"exact", "tutorial"}
        Exact complement counts and priors, or the RCV1 tutorial's approximations (not poisson).
    norm : bool
        Complement only: normalise each category's weights.
    reference : {"corpus", "none"}
        Complement only: subtract the all-documents weights, or not (scikit-learn's weights).
    max_count_memory : int
        MiB the counters may hold in memory in ``fit_chunks``; beyond it they are aggregated out of core.
    count_folder : path or None
        Where ``fit_chunks`` keeps counters aggregated out of core (None: a temporary folder).

    Attributes
    ----------
    counts_ : SparseCounts or CountStore
        The counters; everything else derives from them.
    n_features_in_ : int
        V.
    bias_ : ndarray (K,), float64
        b, the score of an empty document.
    untrainable_categories_ : ndarray of int
        Categories with no positive or no negative training document: they score by their prior alone.
    corrections_ : scipy.sparse.csr_matrix (V, K) float64, or None
        Δ at the pairs that occur when ``counts_`` is in memory; None for a CountStore (asked per block).
    untrainable_scored_by_prior_ : bool
        True: untrainable categories always score by their smoothed prior.

    Scores are the dense ``NaiveBayes``'s (see the module docstring for the formulas).
    """

    def __init__(self, event_model=_DEFAULTS.event_model, smoothing=_DEFAULTS.smoothing, alpha=_DEFAULTS.alpha,
                 m=_DEFAULTS.m, binarize=_DEFAULTS.binarize, mode=_DEFAULTS.mode, norm=_DEFAULTS.norm,
                 reference=_DEFAULTS.reference, max_count_memory=_DEFAULTS.max_count_memory, count_folder=None):
        self.event_model = event_model
        self.smoothing = smoothing
        self.alpha = alpha
        self.m = m
        self.binarize = binarize
        self.mode = mode
        self.norm = norm
        self.reference = reference
        self.max_count_memory = max_count_memory
        self.count_folder = count_folder

    # -- checks ----------------------------------------------------------------------------------------
    def _check_params(self) -> None:
        self._sparse_form  # an event model without a sparse form, or none at all: one line
        # the dense estimator's checks of the options both share, in its words
        NaiveBayes(event_model=self.event_model, smoothing=self.smoothing, alpha=self.alpha, m=self.m,
                   binarize=self.binarize, mode=self.mode, norm=self.norm, reference=self.reference)._check_params()
        memory = self.max_count_memory
        if isinstance(memory, bool) or not isinstance(memory, (int, float, np.number)) or not (
                np.isfinite(memory) and memory > 0):
            raise MlnbError(f"max_count_memory must be a number of MiB > 0, got {memory!r}")

    @property
    def _sparse_form(self) -> SparseForm:
        """The registered record's sparse form (``event_model.SparseForm``)."""
        try:
            model = REGISTERED[self.event_model]
        except (KeyError, TypeError):  # TypeError: an unhashable value
            raise MlnbError(f"event_model must be one of {SPARSE_EVENT_MODELS}, got {self.event_model!r}") from None
        if model.sparse is None:
            needs = ("needs sums of squares of signed values, not event counters" if model.squares else
                     "has no sparse form")
            raise MlnbError(f"event_model={self.event_model!r} {needs}: use kind 'naive_bayes' (sparse counters do "
                            f"{', '.join(SPARSE_EVENT_MODELS)})")
        return model.sparse

    @property
    def _presence(self) -> bool:
        """Whether the counters and the scores read word presence [x > 0]."""
        return _presence_of(self)

    def _parameters(self, alpha: float) -> Parameters:
        """The hyperparameters the sparse forms read (var_smoothing and column_models belong to event models
        without one)."""
        return Parameters(alpha, self.norm, self.reference, 0.0, ())

    def _check_chunk(self, X, Y) -> tuple[sp.csr_matrix, sp.csr_matrix]:
        X = as_csr_float32(X, non_negative=True)
        Y = check_labels(Y, "Y", n_documents=X.shape[0])
        return X, Y

    @staticmethod
    def _check_shapes(V: int, K: int) -> None:
        if V == 0:
            raise MlnbError("X has 0 features: fitting needs at least one")
        if V > MAX_FEATURES:
            raise MlnbError(f"X has {V} features: at most {MAX_FEATURES} (sparse column indices are 32-bit)")
        if K == 0:
            raise MlnbError("Y has 0 categories: fitting needs at least one")

    # -- fitting: counters only --------------------------------------------------------------------------
    def fit(self, X, Y):
        """Count X (n × V, values ≥ 0) and Y (n × K, 0/1): the counters of one chunk."""
        check_fit_shapes(X, Y, dense_weights=False)
        self._check_params()
        X, Y = self._check_chunk(X, Y)
        self.__dict__.pop("counts_", None)
        self.partial_fit(X, Y)
        self._warn_untrainable(self.counts_, stacklevel=4)  # the counters are complete: say so now
        self._built()  # built now, so that scoring changes no state
        return self

    def partial_fit(self, X, Y):
        """Add the counters of one more chunk (``SparseCounts`` in memory); ``fit`` is one chunk."""
        self._check_params()
        X, Y = self._check_chunk(X, Y)
        self._check_shapes(X.shape[1], Y.shape[1])
        earlier = self.__dict__.get("counts_")
        if earlier is not None:
            if not isinstance(earlier, SparseCounts):
                raise MlnbError("partial_fit adds to counters in memory, but counts_ is a CountStore on disk: "
                                "call fit_chunks with every chunk instead")
            if (X.shape[1], Y.shape[1]) != (earlier.shape[1], earlier.shape[0]):
                raise MlnbError(f"partial_fit got X {X.shape} / Y {Y.shape}, but earlier chunks had "
                                f"{earlier.shape[1]} features and {earlier.shape[0]} categories")
            if earlier.presence != self._presence:
                raise MlnbError("partial_fit: the counters so far were made for other parameters than "
                                f"event_model={self.event_model!r}, binarize={self.binarize}: fit again")
        chunk = SparseCounts.from_chunk(X, Y, presence=self._presence)
        self.counts_ = chunk if earlier is None else earlier + chunk
        self.n_features_in_ = X.shape[1]
        return self

    def fit_chunks(self, chunks):
        """Fit from an iterable of (X, Y) chunks, counted in memory or, beyond ``max_count_memory`` MiB, out
        of core in ``count_folder`` (``count_store.count_chunks``)."""
        from mlnb.models.naive_bayes.count_store import count_chunks

        self._check_params()
        chunks = iter(chunks)
        first = next(chunks, None)
        if first is None:
            raise MlnbError("fit_chunks got no chunks: fitting needs at least one document")
        X, Y = self._check_chunk(*first)
        V, K = X.shape[1], Y.shape[1]
        self._check_shapes(V, K)

        def checked():
            yield X, Y
            for X_chunk, Y_chunk in chunks:
                X_chunk, Y_chunk = self._check_chunk(X_chunk, Y_chunk)
                if (X_chunk.shape[1], Y_chunk.shape[1]) != (V, K):
                    raise MlnbError(f"fit_chunks got a chunk of X {X_chunk.shape} / Y {Y_chunk.shape}, but the "
                                    f"first had {V} features and {K} categories")
                yield X_chunk, Y_chunk

        counts = count_chunks(checked(), V, K, self._presence, self.max_count_memory, self.count_folder)
        self.fit_counts(counts, _stacklevel=4)
        return self

    def fit_counts(self, counts, _stacklevel: int = 3):
        """Fit from counters already made: a ``SparseCounts`` or a ``CountStore``."""
        self._check_params()
        if not (isinstance(counts, SparseCounts) or hasattr(counts, "pairs_of")):
            raise MlnbError(f"fit_counts needs SparseCounts or a CountStore, got {type(counts).__name__}")
        if bool(counts.presence) != self._presence:
            raise MlnbError(f"the counters count {'presence' if counts.presence else 'values'}, but "
                            f"event_model={self.event_model!r}, binarize={self.binarize} scores "
                            f"{'presence' if self._presence else 'values'}: count them again")
        K, V = counts.shape
        self._check_shapes(V, K)
        if counts.n == 0:
            raise MlnbError("the counters hold 0 documents: fitting needs at least one")
        self.counts_ = counts
        self.n_features_in_ = V
        self._warn_untrainable(counts, stacklevel=_stacklevel)
        self._built()
        return self

    # -- what the scores are ------------------------------------------------------------------------------
    @property
    def score_type(self) -> str:
        """"ranking" for complement NB (its scores rank but are no log-odds), else "log_odds"."""
        return REGISTERED[self.event_model].score_type("multilabel")

    @property
    def scores_are_log_odds(self) -> bool:
        """Whether σ(score) is P(category | document): every model here but complement NB."""
        return self.score_type == "log_odds"

    @property
    def scores_are_joint_log_likelihoods(self) -> bool:
        """Never: the scores are one-vs-rest (multilabel), not per-class joint log-likelihoods."""
        return False

    def _non_negative_features(self) -> bool:
        return True

    def _poor_score(self) -> bool:
        return True

    def __sklearn_is_fitted__(self) -> bool:
        return "counts_" in self.__dict__

    @property
    def effective_alpha_(self) -> float:
        """The per-word pseudo-count actually used: α, or m / V for the m-estimate."""
        return self.m / self.n_features_in_ if self.smoothing == "m_estimate" else self.alpha

    bias_ = property(lambda self: self._built().bias, doc="b (K,) float64")
    corrections_ = property(lambda self: self._built().corrections, doc="Δ (V, K) CSR float64, or None")

    @property
    def untrainable_categories_(self) -> np.ndarray:
        return np.flatnonzero(~self._built().trainable)

    @property
    def untrainable_scored_by_prior_(self) -> bool:
        """True: an untrainable category scores by its smoothed prior alone (H_k, G(·, k), Δ_·k = 0), whatever
        the words (the report reads it, having no dense weights to look at)."""
        self._built()  # not fitted: NotFittedError
        return True

    # -- counters -> default and corrections, lazily ------------------------------------------------------
    def _built(self) -> _Built:
        """The weights, rebuilt only when the counters or the hyperparameters changed since."""
        if "counts_" not in self.__dict__:
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit(X, Y) first")
        counts = self.counts_
        params = tuple(getattr(self, name) for name in _PARAMS)
        built = self.__dict__.get("_built_for")
        if built is None or built.counts is not counts or built.params != params:
            self._check_params()
            self._built_for = built = self._build(counts, params)
        return built

    def _build(self, counts, params: tuple) -> _Built:
        K, V = counts.shape
        form = self._sparse_form
        alpha = float(self.m / V if self.smoothing == "m_estimate" else self.alpha)
        parameters = self._parameters(alpha)
        N, S, t, n = (np.asarray(a, dtype=np.float64) for a in (counts.N, counts.S, counts.t, counts.n))
        if self.mode == "tutorial":
            totals, N_bar = np.asarray(counts.column_sums(), dtype=np.float64), N.sum() - N
        else:
            totals, N_bar = t, n - N
        trainable = (N > 0) & (N_bar > 0)
        with np.errstate(divide="ignore"):
            exact = np.log(N) - np.log(N_bar)
        smoothed = np.log(N + 0.5) - np.log(N_bar + 0.5)
        prior = np.where(trainable, exact, smoothed)
        per_category = dict(N=N, N_bar=N_bar)
        groups = grouped_sum = None
        if form.grouped is not None:
            groups, grouped_sum = _grouped_sum(form, totals, per_category, alpha, K)

        def pair_sums(extra: dict) -> np.ndarray:
            return _pair_sums(form, counts, totals, {**per_category, **extra}, parameters)

        quantities = SparseQuantities(V=V, prior=prior, N=N, N_bar=N_bar, S=S, S_bar=totals.sum() - S, t=t,
                                      totals=totals, log_totals=np.log(totals + alpha), pair_sums=pair_sums,
                                      grouped_sum=grouped_sum)
        default = form.default(quantities, parameters)
        per_category.update(default.per_category)
        H = np.array(default.H, dtype=np.float64)  # (J, K)
        H[:, ~trainable] = 0.0
        bias = np.where(trainable, default.bias, smoothed)
        built = _Built(counts, params, alpha, bias, np.column_stack(default.U).astype(np.float64), H, totals,
                       per_category, trainable, None, groups)
        if isinstance(counts, SparseCounts):
            built = built._replace(corrections=_corrections_matrix(self, built, counts.key, counts.value, K,
                                                                   rows=counts.key // K, n_rows=V))
        self._warn_untrainable(counts, stacklevel=6)  # after partial_fit: at first use, as the dense model
        return built

    def _warn_untrainable(self, counts, stacklevel: int) -> None:
        """Warn once per counters about categories that score by their prior alone."""
        if self.__dict__.get("_warned_for") is counts:
            return
        self._warned_for = counts
        N = np.asarray(counts.N, dtype=np.float64)
        N_bar = N.sum() - N if self.mode == "tutorial" else counts.n - N
        untrainable = int((~((N > 0) & (N_bar > 0))).sum())
        if untrainable:
            warnings.warn(f"{untrainable} categories have no positive or no negative training documents; "
                          "they score by their prior alone", stacklevel=stacklevel)

    def _pair_corrections(self, built: _Built, words: np.ndarray, categories: np.ndarray,
                          F: np.ndarray) -> np.ndarray:
        """Δ_wk (P,) float64 at pairs (words, categories) with counts F (P,)."""
        return self._sparse_form.pair_terms(built.totals[words], F, categories, built.per_category,
                                            self._parameters(built.alpha), "delta")

    # -- scoring -------------------------------------------------------------------------------------------
    def _checked_input(self, X) -> sp.csr_matrix:
        self._built()  # not fitted: NotFittedError, before X is read
        X = as_csr_float32(X, non_negative=True)
        if X.shape[1] != self.n_features_in_:
            raise MlnbError(f"X has {X.shape[1]} features, but {type(self).__name__} was fitted with "
                            f"{self.n_features_in_}: train and test data must share one feature space")
        return X

    def _blocks(self, X: sp.csr_matrix):
        """(start, stop, scores (stop − start, K) float64) for blocks of at most ``BLOCK_VALUES`` scores."""
        built = self._built()
        K = built.bias.shape[0]
        rows = max(1, BLOCK_VALUES // max(K, 1))
        for start in range(0, X.shape[0], rows):
            stop = min(start + rows, X.shape[0])
            yield start, stop, self._block_scores(built, X[start:stop])

    def _block_scores(self, built: _Built, X: sp.csr_matrix) -> np.ndarray:
        """z = b + Σ_j (x·U_j)·H_j [+ grouped default] + x·Δ for one block of documents (float64)."""
        X = sp.csr_matrix((np.where(X.data > 0, 1.0, 0.0) if self._presence else X.data.astype(np.float64),
                           X.indices, X.indptr), shape=X.shape)
        n_block, K = X.shape[0], built.bias.shape[0]
        scores = np.empty((n_block, K))
        scores[:] = built.bias
        products = np.asarray(X @ built.word_vectors)  # (n_block, J): each row's words in index order
        term = np.empty_like(scores)
        for j in range(built.category_vectors.shape[0]):
            np.multiply(products[:, j, None], built.category_vectors[j], out=term)
            scores += term
        if built.groups is not None:
            self._add_grouped_default(built, X, scores)
        self._add_corrections(built, X, scores)
        return scores

    def _add_grouped_default(self, built: _Built, X: sp.csr_matrix, scores: np.ndarray) -> None:
        """scores += Σ_w x_w G(τ_w, k): each document's words counted per distinct total (its (n × T) counts
        C), times G of the totals the block holds, in fixed pieces of the totals' order."""
        group_of_word, values = built.groups
        C = sp.csr_matrix((X.data.copy(), group_of_word[X.indices], X.indptr.copy()), shape=(X.shape[0], values.size))
        C.sum_duplicates()
        row_of_entry = np.repeat(np.arange(C.shape[0]), np.diff(C.indptr))
        present = np.unique(C.indices)
        piece = _group_piece(scores.shape[1])
        grouped = self._sparse_form.grouped
        for first in range(0, values.size, piece):  # pieces fixed by the totals' order, not by the block
            chosen = present[(present >= first) & (present < first + piece)]
            if chosen.size == 0:
                continue
            G = grouped(values[chosen], built.per_category, built.alpha)  # (chosen, K)
            G[:, ~built.trainable] = 0.0
            keep = (C.indices >= first) & (C.indices < first + piece)
            indptr = np.zeros(C.shape[0] + 1, dtype=np.int64)
            np.cumsum(np.bincount(row_of_entry[keep], minlength=C.shape[0]), out=indptr[1:])
            in_piece = sp.csr_matrix((C.data[keep], np.searchsorted(chosen, C.indices[keep]), indptr),
                                     shape=(C.shape[0], chosen.size))
            scores += in_piece @ G

    def _add_corrections(self, built: _Built, X: sp.csr_matrix, scores: np.ndarray) -> None:
        """scores += x·Δ over the pairs of the block's words: the in-memory CSR, or the store's pairs of
        those words, asked now."""
        K = scores.shape[1]
        corrections = built.corrections
        if corrections is None:  # a CountStore: this block's words' pairs only, one row per word asked
            words = np.unique(X.indices)
            key, value = self.counts_.pairs_of(words)
            key = np.asarray(key, dtype=np.int64)
            corrections = _corrections_matrix(self, built, key, np.asarray(value, dtype=np.float64), K,
                                              rows=np.searchsorted(words, key // K), n_rows=words.size)
            # the block's columns renumbered in the same order: each row's sums run as with the whole CSR
            X = sp.csr_matrix((X.data, np.searchsorted(words, X.indices), X.indptr), shape=(X.shape[0], words.size))
        product = (X @ corrections).tocsr()  # (n_block, K), only the pairs of each document's words
        rows = np.repeat(np.arange(product.shape[0]), np.diff(product.indptr))
        scores[rows, product.indices] += product.data

    def decision_function(self, X, dtype=np.float32) -> np.ndarray:
        """Per-category scores z = X·W + b (n × K) (log-odds; complement: a ranking score), computed in
        float64 and rounded once to ``dtype`` (float32, as every model's scores; float64: unrounded)."""
        X = self._checked_input(X)
        K = self._built().bias.shape[0]
        out = np.empty((X.shape[0], K), dtype=dtype)
        for start, stop, scores in self._blocks(X):
            out[start:stop] = scores
        return out

    def predict_proba(self, X, dtype=np.float64) -> np.ndarray:
        """σ(z) (n × K): P(category | document) for the log-odds models."""
        return expit(self.decision_function(X).astype(np.float64)).astype(dtype, copy=False)

    def predict(self, X, threshold: float = 0.5) -> np.ndarray:
        """0/1 (n × K) int8: σ(z) ≥ threshold, i.e. z ≥ logit(threshold)."""
        if not 0.0 < threshold < 1.0:
            raise MlnbError(f"threshold must be in (0, 1), got {threshold}")
        cut = np.log(threshold) - np.log1p(-threshold)
        return (self.decision_function(X) >= cut).astype(np.int8)

    def top_k(self, X, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best-scoring categories of each document, best first: (categories (n, k) int64, their
        ``decision_function`` scores (n, k) float32). Equal float32 scores rank the lower category first,
        so the categories are the first k of a stable argsort of −decision_function. Computed block by
        block (a partition and a sort of the k chosen per document): a few arrays of one block × K at a
        time, never n × K."""
        X = self._checked_input(X)
        K = self._built().bias.shape[0]
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= K:
            raise MlnbError(f"k must be a whole number from 1 to the {K} categories, got {k!r}")
        categories = np.empty((X.shape[0], k), dtype=np.int64)
        best = np.empty((X.shape[0], k), dtype=np.float32)
        for start, stop, scores in self._blocks(X):
            categories[start:stop], best[start:stop] = _top_k(scores.astype(np.float32), int(k))
        return categories, best


adapt(SparseNaiveBayes)


# -- sums over the pairs that occur and over the words' totals ---------------------------------------------------
def _pair_sums(form: SparseForm, counts, totals: np.ndarray, per_category: dict,
               parameters: Parameters) -> np.ndarray:
    """(K,) Σ over each category's pairs of the form's ``pair_terms(..., "sum")``, batch by batch over the
    pairs."""
    K = counts.shape[0]
    sums = np.zeros(K)
    for key, value in _pair_batches(counts):
        words, categories = key // K, key % K
        terms = form.pair_terms(totals[words], value, categories, per_category, parameters, "sum")
        sums += np.bincount(categories, weights=terms, minlength=K)
    return sums


def _grouped_sum(form: SparseForm, totals: np.ndarray, per_category: dict, alpha: float,
                 K: int) -> tuple[tuple, np.ndarray]:
    """((group of each word (V,) int64, total of each group (T,) float64), Σ_w G(τ_w, k) (K,)): every word
    grouped by its total, Σ_τ (words with total τ)·G(τ, k) summed piece by piece of the distinct totals."""
    values, group_of_word = np.unique(totals, return_inverse=True)
    words_per_group = np.bincount(group_of_word, minlength=values.size).astype(np.float64)
    grouped = np.zeros(K)
    for start in range(0, values.size, _group_piece(K)):
        stop = min(start + _group_piece(K), values.size)
        grouped += (words_per_group[start:stop, None] * form.grouped(values[start:stop], per_category,
                                                                     alpha)).sum(axis=0)
    return (group_of_word.astype(np.int64).ravel(), values), grouped


def _pair_batches(counts):
    """(key (P,) int64, value (P,) float64) of every pair, in key order, ``PAIR_BATCH`` at a time."""
    if isinstance(counts, SparseCounts):
        for start in range(0, counts.n_pairs, PAIR_BATCH):
            yield counts.key[start:start + PAIR_BATCH], counts.value[start:start + PAIR_BATCH]
        return
    for key, value in counts.iter_pairs(PAIR_BATCH):
        yield np.asarray(key, dtype=np.int64), np.asarray(value, dtype=np.float64)


def _corrections_matrix(model: SparseNaiveBayes, built: _Built, key: np.ndarray, value: np.ndarray, K: int,
                        rows: np.ndarray, n_rows: int) -> sp.csr_matrix:
    """Δ (n_rows × K) CSR float64 at the pairs (key, value), sorted by key, each in row ``rows`` (its word,
    or the word's place among those asked); none for untrainable categories."""
    words, categories = key // K, key % K
    keep = built.trainable[categories]
    words, categories, value, rows = words[keep], categories[keep], value[keep], rows[keep]
    delta = model._pair_corrections(built, words, categories, value)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    index_dtype = np.int32 if max(K, words.size) < 2**31 else np.int64
    return sp.csr_matrix((delta, categories.astype(index_dtype), indptr.astype(index_dtype)), shape=(n_rows, K))


def _group_piece(K: int) -> int:
    """Distinct totals whose G(τ, ·) (piece × K) is formed at a time."""
    return max(1, GROUP_PIECE_VALUES // max(K, 1))


def _top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row the k largest scores, best first, equal scores lower column first: the first k of a stable
    argsort of −scores, from one partition (O(K) per row) and a sort of the k chosen."""
    n, K = scores.shape
    if k == K:
        order = np.argsort(-scores, axis=1, kind="stable")
    else:
        kth = np.partition(scores, K - k, axis=1)[:, K - k, None]  # the k-th largest value of each row
        above, tied = scores > kth, scores == kth
        missing = k - above.sum(axis=1, keepdims=True)  # how many of the tied values are taken, lowest first
        chosen = above | (tied & (np.cumsum(tied, axis=1) <= missing))
        columns = np.nonzero(chosen)[1].reshape(n, k)  # each row's chosen columns in increasing order
        order = np.take_along_axis(columns, np.argsort(-np.take_along_axis(scores, columns, axis=1), axis=1,
                                                       kind="stable"), axis=1)
    order = order[:, :k].astype(np.int64)
    return order, np.take_along_axis(scores, order, axis=1)


# -- as a model kind (registered in mlnb/models/__init__.py) -------------------------------------------------
def _describe(options: SparseNaiveBayesOptions) -> str:
    return f"Naive Bayes, sparse counters ({', '.join(event_model_details(options))})"


def _presence_of(options) -> bool:
    """Whether counters for ``options`` (the options or the estimator) count word presence [x > 0]."""
    return bool(options.binarize or REGISTERED[options.event_model].presence)


KIND = ModelKind(
    name="sparse_naive_bayes", estimator=SparseNaiveBayes, options=SparseNaiveBayesOptions,
    help="Naive Bayes from counters of the (word, category) pairs that occur: weights as a default plus "
         "sparse corrections, each document scored from its own words' pairs",
    describe=_describe,
    check=lambda options, task: SparseNaiveBayes(**dataclasses.asdict(options))._check_params(),
    fits_from="full_batch",
    # the counters of every training chunk, in memory under max_count_memory and out of core beyond it
    fit_streamed=lambda estimator, options, fitted, trainer: estimator.fit_counts(
        trainer.count_pairs(_presence_of(options), options.max_count_memory)),
    requires_non_negative=lambda options: True,
    score_type=lambda options, task: REGISTERED[options.event_model].score_type(task),
    state_per_weight=lambda options: (0.0, ""),
    ranks_top_k=True,  # ``SparseNaiveBayes.top_k``: a block of documents at a time, never n × K
    weights="sparse", dense_equivalent="naive_bayes")
