r"""Naive Bayes on a device: one count product, then each event model's formula as array code.

Counting (``count``) is the product of ``mlnb.models._counting``'s scipy reference, formed in W's
layout (V × K), so that the formulas write W without a transpose:

    Fᵀ = X̂ᵀ·Y      (V × K)  float64, X̂ = X, or its presence [X > 0]
    t  = 1ᵀ·X̂      (V,)     float64
    N  = 1ᵀ·Y      (K,),    n documents,    S = F·1 (K,)

Counts → weights. Each count event model's multilabel formula (its module in
``mlnb.models.naive_bayes``) is written here once more as array code, line for line, with the
same float discipline as ``fused``: every ratio r formed in float64, rounded once to float32
(or kept float64 where r would leave float32's normal range: ``fused.ratio_dtype``), then W = log r.
The per-category (K,) quantities — the prior, N̄, the normalisers — are computed on the host, as
the estimator computes them. Per formula (F̄ = total − F, floored at 0 for counts; S̄ = Σ total − S):

    multinomial   r = (F + α)/(F̄ + α) · (S̄ + αV)/(S + αV)                         b = prior
    poisson       r = (F + α)/(F̄ + α) · (N̄ + α)/(N + α)     b = prior − (S + αV)/(N + α) + (S̄ + αV)/(N̄ + α)
    complement    r = (S̄ + αV)/(F̄ + α) · θ_w,  θ_w = (t + α)/(Σt + αV) (corpus) or 1       b = 0
                  (norm: W = log θ̄ / Σ_w log θ̄, minus the same of t: in float64)
    bernoulli     r = (F + α)(N̄ − F̄ + α) / ((N − F + α)(F̄ + α))
                  b = prior + Σ_w log[(N − F + α)(N̄ + 2α) / ((N + 2α)(N̄ − F̄ + α))]

Which event models the device takes is asked of their records (``event_model.EventModel``), never
their names: a model with sums of squares, column statistics or a design of its own (Gaussian,
mixed) is not a device model; a count model without a formula here (or multiclass, whose
joint log-likelihoods the estimator also keeps in float64) is counted on the device and turned into
weights by its own module on the host (``host_weights``), so that a new count event model runs
on a device with no line added here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from mlnb.data.validate import check_labels
from mlnb.errors import MlnbError
from mlnb.models._linear import as_csr_float32
from mlnb.models.array.device import ArrayNamespace, canonical
from mlnb.models.array.model import ArrayModel
from mlnb.models.naive_bayes import bernoulli, complement, multinomial, poisson
from mlnb.models.naive_bayes.counts import NBCounts
from mlnb.models.naive_bayes.event_model import REGISTERED, EventModel, Parameters
from mlnb.models.naive_bayes.fused import ratio_dtype


@dataclass(frozen=True, eq=False)
class DeviceCounts:
    """The counts of one chunk, their large arrays on the device: Fᵀ (V × K) and t (V,) float64;
    N (K,) float64, S (K,) float64 and n on the host."""

    FT: object
    t: object
    N: np.ndarray
    S: np.ndarray
    n: int
    presence: bool

    def to_host(self, ns: ArrayNamespace) -> NBCounts:
        """The same counts as the estimator's ``NBCounts`` (F (K × V) on the host)."""
        F = np.ascontiguousarray(ns.to_host(self.FT).T)
        return NBCounts(F=F, t=ns.to_host(self.t), N=self.N.copy(), n=self.n, presence=self.presence, S=self.S.copy())


def count(ns: ArrayNamespace, X, Y, presence: bool) -> DeviceCounts:
    """Fᵀ = X̂ᵀ·Y, t = 1ᵀ·X̂, N = 1ᵀ·Y, S, n of X (n × V device CSR float32) and Y (n × K device CSR 0/1)."""
    xp = ns.xp
    n, V = X.shape
    K = Y.shape[1]
    values = (X.data > 0).astype(np.float64) if presence else X.data.astype(np.float64)
    X64 = ns.csr_from(values, X.indices, X.indptr, (n, V), canonical(X))
    # Y dense (n × K float64, 0/1): Xᵀ·Y is then one sparse × dense product, not a sparse × sparse one
    Y64 = ns.xsp.csr_matrix((Y.data.astype(np.float64), Y.indices, Y.indptr), shape=(n, K)).toarray()
    # (V, n)·(n, K) -> (V, K), summed in float64: exact, so the same on every run, where X's values are
    # integers (presence, counts); other values may differ in the last float64 bit from run to run on a
    # GPU (its products and bincount add with atomics: ``ArrayNamespace.transposed_product``)
    FT = xp.ascontiguousarray(xp.asarray(ns.transposed_product(X64, Y64)))
    t = xp.bincount(X64.indices, weights=X64.data, minlength=V)  # (V,)
    N = ns.to_host(Y64.sum(axis=0))  # (K,) exact: sums of at most 2⁵³ ones
    S = ns.to_host(FT.sum(axis=0))  # (K,)
    return DeviceCounts(FT=FT, t=t, N=N, S=S, n=int(n), presence=presence)


@dataclass(frozen=True)
class Outside:
    """What is outside each category (the estimator's ``_complement_counts``), with the host
    scalars the formulas' ranges need."""

    total: object  # (V,) device: t, or Σ_k F_k (mode = "tutorial")
    total_sum: float
    total_max: float
    clip: bool
    N_bar: np.ndarray  # (K,) host


def _log_of_ratios(ns: ArrayNamespace, r, lowest: float, highest: float, log_difference):
    """W (V × K) float32 = log r: r (float64) rounded once to float32 when [lowest, highest] fits it,
    else kept float64; beyond float64, ``log_difference()`` (the modules' fallback form)."""
    xp = ns.xp
    dtype_r = ratio_dtype(lowest, highest, np.float32)
    if dtype_r is None:
        return log_difference().astype(np.float32)
    return xp.log(r.astype(dtype_r, copy=False)).astype(np.float32, copy=False)


def _count_log_odds(ns, counts: DeviceCounts, outside: Outside, factor: np.ndarray, alpha: float):
    """``fused.count_log_odds``: log[(F + α)/(F̄ + α) · factor_k], F̄ = total − F (floored with clip)."""
    xp = ns.xp
    F = counts.FT  # (V, K)
    F_bar = outside.total[:, None] - F
    if outside.clip:
        F_bar = xp.maximum(F_bar, 0.0)
    factor_d = ns.asarray(factor)  # (K,)
    largest = max(outside.total_max, 0.0)
    lowest = alpha / (largest + alpha) * float(factor.min())
    highest = (largest + alpha) / alpha * float(factor.max())
    return _log_of_ratios(ns, (F + alpha) * factor_d / (F_bar + alpha), lowest, highest,
                          lambda: xp.log(F + alpha) - xp.log(F_bar + alpha) + xp.log(factor_d))


def multinomial_log_odds(ns, counts: DeviceCounts, outside: Outside, prior: np.ndarray, p):
    """``multinomial.log_odds``."""
    V = counts.FT.shape[0]
    S_bar = outside.total_sum - counts.S
    factor = (S_bar + p.alpha * V) / (counts.S + p.alpha * V)  # (K,)
    return _count_log_odds(ns, counts, outside, factor, p.alpha), prior.copy()


def poisson_log_odds(ns, counts: DeviceCounts, outside: Outside, prior: np.ndarray, p):
    """``poisson.log_odds``."""
    V, alpha, N, N_bar = counts.FT.shape[0], p.alpha, counts.N, outside.N_bar
    S_bar = outside.total_sum - counts.S
    rate_sum = (counts.S + alpha * V) / (N + alpha)  # (K,) Σ_w λ_kw
    rate_sum_bar = (S_bar + alpha * V) / (N_bar + alpha)  # (K,) Σ_w λ̄_kw
    factor = (N_bar + alpha) / (N + alpha)
    return _count_log_odds(ns, counts, outside, factor, alpha), prior - (rate_sum - rate_sum_bar)


def complement_log_odds(ns, counts: DeviceCounts, outside: Outside, prior: np.ndarray, p):
    """``complement.log_odds`` (``reference = "corpus"`` centres on the corpus weights)."""
    xp = ns.xp
    F, alpha = counts.FT, p.alpha
    V, K = F.shape
    corpus = p.reference == "corpus"
    F_bar = outside.total[:, None] - F  # (V, K)
    if outside.clip:
        F_bar = xp.maximum(F_bar, 0.0)
    t_sum = float(ns.to_host(counts.t.sum())) if corpus else 0.0
    factor = outside.total_sum - counts.S + alpha * V  # (K,) S̄ + αV

    def log_theta_bar(F_bar):  # (V, K) log θ̄, ``complement._weights`` before its sign or norm
        return xp.log(F_bar + alpha) - xp.log(F_bar.sum(axis=0) + alpha * V)

    if p.norm:  # the normalised weights need log θ̄ itself: float64, as the module
        L = log_theta_bar(F_bar)
        W = L / L.sum(axis=0)
        if corpus:
            L_ref = log_theta_bar(counts.t[:, None])
            W = W - L_ref / L_ref.sum(axis=0)
        return W.astype(np.float32), np.zeros(K)
    if corpus:
        reference = (counts.t + alpha) / (t_sum + alpha * V)  # (V,) θ_w
        ref_lo, ref_hi = float(ns.to_host(reference.min())), float(ns.to_host(reference.max()))
    else:
        reference, ref_lo, ref_hi = xp.ones(V), 1.0, 1.0
    largest = max(outside.total_max, 0.0)

    def log_difference():
        W = -log_theta_bar(F_bar)
        return W - (-log_theta_bar(counts.t[:, None])) if corpus else W

    W = _log_of_ratios(ns, ns.asarray(factor) * reference[:, None] / (F_bar + alpha),
                       float(factor.min()) * ref_lo / (largest + alpha), float(factor.max()) * ref_hi / alpha,
                       log_difference)
    return W, np.zeros(K)


def bernoulli_log_odds(ns, counts: DeviceCounts, outside: Outside, prior: np.ndarray, p):
    """``bernoulli.log_odds``: presence counts, F̄ = total − F (not floored, as the module)."""
    xp = ns.xp
    F, alpha, N, N_bar = counts.FT, p.alpha, counts.N, outside.N_bar
    N_d, N_bar_d = ns.asarray(N), ns.asarray(N_bar)
    present, absent = F + alpha, N_d - F + alpha  # (V, K): (N + 2α)·p, (N + 2α)·(1 − p)
    F_bar = outside.total[:, None] - F
    present_bar, absent_bar = F_bar + alpha, N_bar_d - F_bar + alpha
    log_absent = ns.to_host((xp.log(absent / ns.asarray(N + 2 * alpha))
                             - xp.log(absent_bar / ns.asarray(N_bar + 2 * alpha))).sum(axis=0))  # (K,)
    most = max(float(N.max(initial=0.0)), float(N_bar.max(initial=0.0))) + alpha
    W = _log_of_ratios(ns, present * absent_bar / (absent * present_bar), (alpha / most) ** 2, (most / alpha) ** 2,
                       lambda: xp.log(present) - xp.log(absent) + xp.log(absent_bar) - xp.log(present_bar))
    return W, prior + log_absent


#: each count event model's multilabel formula as array code, by its record (the module's ``log_odds``)
FORMULAS = ((multinomial.EVENT_MODEL, multinomial_log_odds), (poisson.EVENT_MODEL, poisson_log_odds),
            (complement.EVENT_MODEL, complement_log_odds), (bernoulli.EVENT_MODEL, bernoulli_log_odds))


def formula(record: EventModel):
    """The array formula of an event model's record, or None (then ``host_weights``)."""
    return next((function for known, function in FORMULAS if known is record), None)


def counts_on_device(record: EventModel) -> bool:
    """Whether the device can count for this event model: F, t, N, n suffice (no sums of squares,
    column statistics or design of its own)."""
    return not (record.squares or record.column_stats or record.design is not None)


def record_of(estimator) -> EventModel:
    """The registered record of a NaiveBayes estimator's event model."""
    return REGISTERED.named(estimator.event_model, "event_model")


def takes(estimator) -> bool:
    """Whether the device fits ``estimator`` (a ``NaiveBayes``): its event model counts F, t, N, n only
    (``counts_on_device``)."""
    return counts_on_device(record_of(estimator))


@dataclass(eq=False)
class NaiveBayesFit:
    """What the device fit gives: W (rows × K float32, device), b (K,) float32 host, presence, the
    untrainable categories, and the counts."""

    W: object
    b: np.ndarray
    presence: bool
    untrainable: np.ndarray
    counts: DeviceCounts


def fit(ns: ArrayNamespace, estimator, X: sp.csr_matrix, Y: sp.csr_matrix, task: str) -> NaiveBayesFit:
    """Count X (n × V, host CSR float32, checked) and Y (n × K, host CSR 0/1) on the device and turn the
    counts into W and b (``fit_device_arrays``)."""
    return fit_device_arrays(ns, estimator, ns.csr(X, np.float32), ns.csr(Y, np.float32), task)


def fit_device_arrays(ns: ArrayNamespace, estimator, X, Y, task: str) -> NaiveBayesFit:
    """``fit`` of X and Y already on the device (device CSR): the event model's array formula
    (multilabel), else its own module on the host (``host_weights``)."""
    record = record_of(estimator)
    presence = bool(estimator.binarize or record.presence)
    V = X.shape[1]
    estimator.n_features_in_ = V  # effective_alpha_ (the m-estimate's m/V) reads it
    counts = count(ns, X, Y, presence)
    function = formula(record) if task == "multilabel" else None
    if function is None:
        W, b, untrainable = host_weights(ns, estimator, counts)
        return NaiveBayesFit(W, b, presence, untrainable, counts)
    N, n = counts.N, counts.n
    if estimator.mode == "tutorial":  # the RCV1 tutorial's approximations (the estimator's docstring)
        total, clip, N_bar = counts.FT.sum(axis=1), False, N.sum() - N
    else:
        total, clip, N_bar = counts.t, record.non_negative, n - N
    outside = Outside(total, float(ns.to_host(total.sum())), float(ns.to_host(total.max())) if V else 0.0, clip,
                      N_bar)
    trainable = (N > 0) & (N_bar > 0)
    with np.errstate(divide="ignore"):
        prior = np.where(trainable, np.log(N) - np.log(N_bar), np.log(N + 0.5) - np.log(N_bar + 0.5))
    parameters = Parameters(estimator.effective_alpha_, estimator.norm, estimator.reference, estimator.var_smoothing,
                            estimator.column_models)
    W, b = function(ns, counts, outside, prior, parameters)
    untrainable = np.flatnonzero(~trainable)
    if untrainable.size:  # nothing to learn about words: the prior alone (as the estimator)
        W[:, ns.asarray(untrainable)] = 0.0
        b[untrainable] = prior[untrainable]
    return NaiveBayesFit(W, b.astype(np.float32), presence, untrainable, counts)


def host_weights(ns: ArrayNamespace, estimator, counts: DeviceCounts):
    """(W on the device, b, untrainable) from the estimator's own formula on the host, given the
    device's counts: any count event model, and multiclass."""
    estimator.counts_ = counts.to_host(ns)
    W, b = estimator.weights_, estimator.bias_
    return ns.asarray(W), np.asarray(b, dtype=np.float32), np.asarray(estimator.untrainable_categories_)


def fit_on_device(device, estimator, X, Y, task: str, arguments: dict) -> ArrayModel | None:
    """The kind's ``fit_on_device`` (``ModelKind``): ``estimator`` fitted on X (n × V) and Y (n × K 0/1) on
    ``device`` (an ``mlnb.models.array.fitting.ArrayDevice``), an ``ArrayModel`` whose ``counts_`` (and the
    CPU estimator's W and b, if asked for) come from the device's counts; None where the event model does not
    count on the device (``takes``: the CPU fits it). ``arguments`` (no ``fit`` keyword of Naive Bayes) are
    not read."""
    if not takes(estimator):
        return None
    record = record_of(estimator)
    X = as_csr_float32(X, non_negative=record.non_negative)
    Y = check_labels(Y, "Y", n_documents=X.shape[0])
    if Y.shape[1] == 0 or X.shape[0] == 0:
        raise MlnbError(f"X {X.shape} and Y {Y.shape}: fitting needs a document and a category")
    fitted = fit(device.ns, estimator, X, Y, task)

    def finish():  # the CPU estimator's counts_ (its W and b, if asked, from its own formula)
        if "counts_" not in estimator.__dict__:
            estimator.counts_ = fitted.counts.to_host(device.ns)

    return ArrayModel(device, estimator, fitted.W, fitted.b, fitted.presence, record.non_negative,
                      fitted.untrainable, finish)
