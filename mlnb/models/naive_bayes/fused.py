r"""Counts → weights in one parallel sweep, for every event model.

Each count model's weight is the log of a ratio of smoothed counts; multinomial:

    W_kw = log θ_kw − log θ̄_kw = log r_kw,   r_kw = (F_kw + α)/(F̄_kw + α) · (S̄_k + αV)/(S_k + αV)

One sweep over F (numba, parallel over blocks of words) writes every r_kw
straight into W's own layout, (V × K), one row per word as X·W reads it, and
one vectorised log (numpy's SIMD log, in place) turns r into W. F̄ = total − F
is formed element by element from a (V,) vector, never stored. Before, F̄, the
logs and their differences were five (K × V) float64 passes and a transposed
float32 copy, whatever the number of documents (measured by
experiments/bench_nb_fit.py).

Precision. r is formed in float64 (the sums and quotients of counts need it)
and rounded once to the dtype of W (float32 for multilabel scores): W = log r
then errs by |log(1 ± 2⁻²⁴)| ≤ 6e-8 from the rounding of r, plus numpy's
float32 log (a few ulp of W); taking each log in float32 and subtracting would
err by ~1e-6 (log θ ≈ −16 on RCV1), 1e-4 relative on small weights. Measured
on 23,149 RCV1-shaped documents: |W − W₆₄| ≤ 5e-7 with |W| up to 9.1, and
within 1e-5 relative (or 1e-7) of scikit-learn's feature_log_prob_ differences.
r must be a normal float32: it is, whenever the bounds of r, taken from the
(V,) and (K,) vectors, say so; otherwise r is float64, and beyond float64's
range (an absurd α) W comes from the log-difference form in float64 instead.

Sums of logs over words (Bernoulli's absent words in b, the Gaussian variance
ratio) are logs of products over blocks of BLOCK words, kept in range by
powers of two (frexp): one log per block and category, not one per word.

Inlined helpers. The helpers called inside the sweeps' loops (``_transpose``,
``_times``) are inlined by numba itself (``inline="always"``): left to LLVM, a
sweep loaded from numba's cache ran slower than the same sweep freshly
compiled (measured by experiments/bench_nb_fit.py), and every fit but the first
after an edit loads from the cache.

Every element of W is computed alone, and sums over words are formed block by
block in a fixed order and then added in block order, so W and b are the same
for any number of threads.
"""

from __future__ import annotations

import math

import numpy as np

from mlnb._kernels.jit import HAVE_NUMBA, map_pieces, njit, prange

BLOCK = 256  # words per parallel task (and per product of a log-sum)
TILE = 16  # words transposed at a time through the core's cache: (TILE × K) float64
_LOG2 = math.log(2.0)
# the ratios must stay normal numbers of their dtype, with room to spare
_RANGE = {np.dtype(np.float32): (1e-37, 1e37), np.dtype(np.float64): (1e-300, 1e300)}


def ratio_dtype(lowest: float, highest: float, dtype) -> np.dtype | None:
    """The dtype to hold ratios within [lowest, highest]: ``dtype`` if they fit it, else float64, else None
    (then only the log-difference form is safe)."""
    lowest, highest = float(lowest), float(highest)  # Python floats: an overflow here is inf, never a raise
    for candidate in (np.dtype(dtype), np.dtype(np.float64)):
        low, high = _RANGE[candidate]
        if np.isfinite(lowest) and np.isfinite(highest) and lowest >= low and highest <= high:
            return candidate
    return None


#: values of W per block whose log is taken on a thread of its own (``log_in_place``)
LOG_PIECE_VALUES = 1 << 19


def log_in_place(ratios: np.ndarray) -> np.ndarray:
    """W = log r, overwriting r (numpy's vectorised log): in blocks of rows on numba's thread count of
    threads when W is large (``map_pieces``), each value the same bits, as a log is taken value by value
    (on one core it lay outside every parallel region of an NB fit; experiments/bench_serial.py)."""
    map_pieces(lambda block: np.log(block, out=block), ratios, LOG_PIECE_VALUES)
    return ratios


def n_blocks(V: int) -> int:
    return (V + BLOCK - 1) // BLOCK


if HAVE_NUMBA:

    @njit(cache=True, inline="always")  # see "Inlined helpers" above
    def _transpose(F, w0, w1, tile):
        """tile[w − w0, k] = F[k, w] for w0 ≤ w < w1: read row by row, so that W is written row by row.

        Why a kernel: inlined into the sweeps, so that W is written row by row through a tile in the core's cache.
        Measured by experiments/bench_nb_fit.py."""
        for k in range(F.shape[0]):
            for w in range(w0, w1):
                tile[w - w0, k] = F[k, w]

    @njit(cache=True, inline="always")  # see "Inlined helpers" above
    def _times(mantissa, exponent, k, q):
        """mantissa[k]·2^exponent[k] ← that · q, the mantissa kept within 2^±500.

        Why a kernel: inlined into the log-sum loops: a product kept in range by powers of two, one log per block of
        words instead of one per word. Measured by experiments/bench_multiclass_nb.py (the Bernoulli fits)."""
        m = mantissa[k] * q
        if m > 1e150 or m < 1e-150:
            m, e = math.frexp(m)
            exponent[k] += e
        mantissa[k] = m

    @njit(parallel=True, cache=True, error_model="numpy")  # the denominators are ≥ α > 0: no checks
    def _ratios(F, total, clip, complement, factor, reference, alpha, out):
        """out[w, k] = n_kw·factor_k / (F̄_kw + α), F̄ = total_w − F_kw (≥ 0 with clip), where the
        numerator n_kw = reference_w when a reference is given, else F_kw + α; without complement
        out[w, k] = n_kw·factor_k.

        Why a kernel: one parallel sweep writes every ratio in W's layout, where numpy makes several K × V float64
        passes and a transposed copy. Measured by experiments/bench_nb_fit.py."""
        K, V = F.shape
        for block in prange((V + BLOCK - 1) // BLOCK):
            tile = np.empty((TILE, K))
            for w0 in range(block * BLOCK, min(block * BLOCK + BLOCK, V), TILE):
                w1 = min(w0 + TILE, V)
                _transpose(F, w0, w1, tile)
                for w in range(w0, w1):
                    for k in range(K):
                        f = tile[w - w0, k]
                        numerator = reference[w] if reference.size else f + alpha
                        if complement:
                            f_bar = total[w] - f
                            if clip and f_bar < 0.0:
                                f_bar = 0.0
                            out[w, k] = numerator * factor[k] / (f_bar + alpha)
                        else:
                            out[w, k] = numerator * factor[k]

    @njit(parallel=True, cache=True, error_model="numpy")  # the denominators are ≥ α > 0: no checks
    def _bernoulli(F, N, total, N_bar, complement, alpha, out, log_absent):
        """out[w, k] = p/(1 − p) · (1 − p̄)/p̄ (without complement p/(1 − p)), p = (F + α)/(N + 2α),
        p̄ likewise from F̄ = total − F, N̄; log_absent[block, k] = Σ_w∈block log[(1 − p)/(1 − p̄)]
        (without complement log(1 − p)).

        Why a kernel: one parallel sweep writes every ratio in W's layout with the log-sums of the absent words,
        where numpy makes several K × V float64 passes and a transposed copy. Measured by
        experiments/bench_multiclass_nb.py (the Bernoulli fits)."""
        K, V = F.shape
        for block in prange((V + BLOCK - 1) // BLOCK):
            tile = np.empty((TILE, K))
            mantissa, exponent = np.ones(K), np.zeros(K, dtype=np.int64)
            for w0 in range(block * BLOCK, min(block * BLOCK + BLOCK, V), TILE):
                w1 = min(w0 + TILE, V)
                _transpose(F, w0, w1, tile)
                for w in range(w0, w1):
                    for k in range(K):
                        f = tile[w - w0, k]
                        present, absent = f + alpha, N[k] - f + alpha  # (N + 2α)·p, (N + 2α)·(1 − p)
                        if complement:
                            f_bar = total[w] - f
                            present_bar, absent_bar = f_bar + alpha, N_bar[k] - f_bar + alpha
                            out[w, k] = present * absent_bar / (absent * present_bar)
                            _times(mantissa, exponent, k,
                                   absent * (N_bar[k] + 2 * alpha) / ((N[k] + 2 * alpha) * absent_bar))
                        else:
                            out[w, k] = present / absent
                            _times(mantissa, exponent, k, absent / (N[k] + 2 * alpha))
            for k in range(K):
                log_absent[block, k] = np.log(mantissa[k]) + exponent[k] * _LOG2

    @njit(parallel=True, cache=True, error_model="numpy")  # N = 0 or N̄ = 0: inf/nan, reset by the estimator
    def _gaussian(F, F2, N, t, t2, N_bar, complement, epsilon, shift, out, bias_terms):
        """out[w, k] = A_kw, out[V + w, k] = C_kw and bias_terms[block, k] = Σ_w∈block of b's word terms
        (see ``gaussian``); without complement, the per-class terms of the joint log-likelihood.

        Why a kernel: one parallel sweep writes both weight matrices and the bias terms, where numpy makes several K
        × V float64 passes and transposed copies. No experiments/ script runs the Gaussian event model; the sweep it
        follows is measured by experiments/bench_nb_fit.py."""
        K, V = F.shape
        for block in prange((V + BLOCK - 1) // BLOCK):
            tile, tile2 = np.empty((TILE, K)), np.empty((TILE, K))
            mantissa, exponent = np.ones(K), np.zeros(K, dtype=np.int64)
            plain = np.zeros(K)  # the terms without a log
            for w0 in range(block * BLOCK, min(block * BLOCK + BLOCK, V), TILE):
                w1 = min(w0 + TILE, V)
                _transpose(F, w0, w1, tile)
                _transpose(F2, w0, w1, tile2)
                for w in range(w0, w1):
                    for k in range(K):
                        f, f2 = tile[w - w0, k], tile2[w - w0, k]
                        mu = f / N[k]
                        var = max(f2 / N[k] - mu * mu, 0.0) + epsilon
                        mu -= shift[w]  # the log-odds of x − c: only the means move
                        if complement:
                            f_bar, f2_bar = t[w] - f, t2[w] - f2
                            mu_bar = f_bar / N_bar[k]
                            var_bar = max(f2_bar / N_bar[k] - mu_bar * mu_bar, 0.0) + epsilon
                            mu_bar -= shift[w]
                            out[w, k] = 1 / (2 * var_bar) - 1 / (2 * var)
                            out[V + w, k] = mu / var - mu_bar / var_bar
                            _times(mantissa, exponent, k, var_bar / var)  # −½ log(σ²/σ̄²) = ½ log(σ̄²/σ²)
                            plain[k] += -mu * mu / (2 * var) + mu_bar * mu_bar / (2 * var_bar)
                        else:
                            out[w, k] = -1 / (2 * var)
                            out[V + w, k] = mu / var
                            _times(mantissa, exponent, k, 2 * np.pi * var)  # −½ log(2π σ²)
                            plain[k] += -mu * mu / (2 * var)
            for k in range(K):
                sign = 0.5 if complement else -0.5
                bias_terms[block, k] = sign * (np.log(mantissa[k]) + exponent[k] * _LOG2) + plain[k]


def multinomial_ratios(F, total, clip: bool, complement: bool, factor, alpha: float, dtype) -> np.ndarray:
    """r (V × K) in ``dtype``: (F + α)·factor / (F̄ + α) per word and category (see ``_ratios``)."""
    out = np.empty((F.shape[1], F.shape[0]), dtype=dtype)
    total = np.zeros(0) if total is None else total
    if HAVE_NUMBA:
        _ratios(np.ascontiguousarray(F), total, clip, complement, factor, np.zeros(0), alpha, out)
        return out
    ratio = (F + alpha) * factor[:, None]  # (K, V)
    if complement:
        F_bar = total - F
        ratio /= (np.maximum(F_bar, 0.0) if clip else F_bar) + alpha
    out[:] = ratio.T
    return out


def count_log_odds(F, total, clip: bool, factor, alpha: float, dtype) -> np.ndarray:
    """W (V × K) = log(F + α) − log(F̄ + α) + log factor_k, F̄ = t − F (clipped at 0 with ``clip``): the
    log-odds of the count event models whose rates are smoothed counts over a per-category
    normaliser (multinomial: θ's; Poisson: λ's), in one sweep at the narrowest exact float type."""
    largest = max(float(total.max(initial=0.0)), 0.0)  # F ≤ total and F̄ ≤ total
    dtype_r = ratio_dtype(alpha / (largest + alpha) * float(factor.min()),
                          (largest + alpha) / alpha * float(factor.max()), dtype)
    if dtype_r is None:  # only for an α near the end of float64's range
        F_bar = total - F
        F_bar = np.maximum(F_bar, 0.0) if clip else F_bar
        W = np.log(F + alpha) - np.log(F_bar + alpha) + np.log(factor)[:, None]  # (K, V)
        return np.ascontiguousarray(W.T, dtype=dtype)
    return log_in_place(multinomial_ratios(F, total, clip, True, factor, alpha, dtype_r)).astype(dtype, copy=False)


def complement_ratios(F, total, clip: bool, factor, reference, alpha: float, dtype) -> np.ndarray:
    """r (V × K) in ``dtype``: factor_k · reference_w / (F̄_kw + α)."""
    out = np.empty((F.shape[1], F.shape[0]), dtype=dtype)
    if HAVE_NUMBA:
        reference = np.asarray(reference, dtype=np.float64)
        _ratios(np.ascontiguousarray(F), total, clip, True, factor, reference, alpha, out)
        return out
    F_bar = total - F  # (K, V)
    out[:] = (factor[:, None] * reference / ((np.maximum(F_bar, 0.0) if clip else F_bar) + alpha)).T
    return out


def bernoulli_ratios(F, N, total, N_bar, complement: bool, alpha: float, dtype) -> tuple[np.ndarray, np.ndarray]:
    """(r (V × K) in ``dtype``, Σ_w log-absent-terms (K,) float64) (see ``_bernoulli``)."""
    K, V = F.shape
    out = np.empty((V, K), dtype=dtype)
    if HAVE_NUMBA:
        log_absent = np.empty((n_blocks(V), K))
        _bernoulli(np.ascontiguousarray(F), N, total, N_bar, complement, alpha, out, log_absent)
        return out, log_absent.sum(axis=0)
    present, absent = F + alpha, N[:, None] - F + alpha  # (K, V)
    if complement:
        F_bar = total - F
        present_bar, absent_bar = F_bar + alpha, N_bar[:, None] - F_bar + alpha
        out[:] = (present * absent_bar / (absent * present_bar)).T
        terms = np.log(absent / (N[:, None] + 2 * alpha)) - np.log(absent_bar / (N_bar[:, None] + 2 * alpha))
    else:
        out[:] = (present / absent).T
        terms = np.log(absent / (N[:, None] + 2 * alpha))
    return out, terms.sum(axis=1)


def gaussian_weights(F, F2, N, t, t2, N_bar, complement: bool, epsilon: float, shift,
                     dtype) -> tuple[np.ndarray, np.ndarray]:
    """(W (2V × K) in ``dtype``: [A; C], Σ_w of b's word terms (K,) float64) (see ``gaussian``)."""
    K, V = F.shape
    out = np.empty((2 * V, K), dtype=dtype)
    if HAVE_NUMBA:
        terms = np.empty((n_blocks(V), K))
        _gaussian(np.ascontiguousarray(F), np.ascontiguousarray(F2), N, t, t2, N_bar, complement, epsilon,
                  shift, out, terms)
        return out, terms.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):  # N = 0 or N̄ = 0: untrainable, reset by the estimator
        N_col = N[:, None]
        mu = F / N_col  # (K, V)
        var = np.maximum(F2 / N_col - mu * mu, 0.0) + epsilon
        mu -= shift
        if complement:
            N_bar_col = N_bar[:, None]
            mu_bar = (t - F) / N_bar_col
            var_bar = np.maximum((t2 - F2) / N_bar_col - mu_bar * mu_bar, 0.0) + epsilon
            mu_bar -= shift
            out[:V] = (1 / (2 * var_bar) - 1 / (2 * var)).T
            out[V:] = (mu / var - mu_bar / var_bar).T
            terms = -0.5 * np.log(var / var_bar) - mu * mu / (2 * var) + mu_bar * mu_bar / (2 * var_bar)
        else:
            out[:V] = (-1 / (2 * var)).T
            out[V:] = (mu / var).T
            terms = -0.5 * (np.log(2 * np.pi * var) + mu * mu / var)
    return out, terms.sum(axis=1)
