r"""exp, log1p and σ in float32 that compile to vector code (numba), for the LR links and scoring.

Without Intel's SVML (not a dependency), numba turns ``np.exp`` and ``np.log1p`` into one call of
the C library per element, which no loop vectorises: the sigmoid of the 103 categories of a
document, two such calls per category, was a large share of the documents region of an LR pass
(measured by experiments/bench_lr_floor.py). These two are plain arithmetic, so a loop over
categories calling them runs 16 lanes at a time.

    exp(x), x ≤ 0:  n = round(x / ln 2),  r = x − n·ln 2 (ln 2 in two parts: r is exact),
                    exp(x) = 2ⁿ · (1 + r + r²·P(r)),  P the Cephes expf polynomial (|r| ≤ ½ ln 2);
                    2ⁿ built from its exponent bits; 0 below −87.3 (where exp(x) < 2⁻¹²⁶).
    expm1(x), |x| ≤ ½ ln 2:  r + r²·P(r) with r = x (n = 0: exp's polynomial without its 1).
    σ(z) = 1 / (1 + e) for z ≥ 0 and e / (1 + e) below, e = exp(−|z|).
    log1p(e), 0 ≤ e ≤ 1:  s = e / (2 + e) ≤ ⅓,  log(1 + e) = 2·atanh(s) = 2s·Σ_{k=0..7} s^{2k} / (2k + 1)
                    (the first omitted term is below 2⁻²⁶ of the sum; no cancellation at small e).

Measured against float64 numpy (and tested): exp within 1 ulp, log1p within 3 ulps (it feeds only
the reported training loss, never a gradient), σ within 3e-7 relative; NaN stays NaN.
"""

from __future__ import annotations

import numpy as np

from mlnb._kernels.jit import HAVE_NUMBA, njit

if HAVE_NUMBA:
    from mlnb._kernels.float_bits import FLAGS as _FLAGS
    from mlnb._kernels.float_bits import float32_from_bits as _float32_from_bits
    from mlnb._kernels.float_bits import horner as _horner

    _LOG2E = np.float32(1.44269504088896341)
    _LN2_HI, _LN2_LO = np.float32(0.693359375), np.float32(-2.12194440e-4)
    _EXP_MIN = np.float32(-87.3)  # exp(−87.3) ≈ 1.3e-38, still a normal float32 (2⁻¹²⁶ ≈ 1.18e-38)
    #: the Cephes expf polynomial P, highest power first
    _EXP_P = (np.float32(1.9875691500e-4), np.float32(1.3981999507e-3), np.float32(8.3334519073e-3),
              np.float32(4.1665795894e-2), np.float32(1.6666665459e-1), np.float32(5.0000001201e-1))
    #: 1 / (2k + 1) for k = 7 … 0: the atanh series in s², highest power first
    _ATANH_Q = tuple(np.float32(1.0 / (2 * k + 1)) for k in range(7, -1, -1))

    @njit(cache=True, fastmath=_FLAGS, error_model="numpy")
    def exp_nonpositive(x):
        """exp(x) for float32 x ≤ 0 (see the module docstring); 0 where x < −87.3.

        Why a kernel: plain arithmetic that runs in vector lanes inside the LR loops, where numba calls the C
        library's exp once per value. Measured by experiments/bench_lr_regularisation.py (the exponentials of one
        pass alone)."""
        clamped = max(x, _EXP_MIN)
        n = np.floor(clamped * _LOG2E + np.float32(0.5))
        r = clamped - n * _LN2_HI - n * _LN2_LO
        y = _horner(r, _EXP_P) * (r * r) + r + np.float32(1.0)
        scale = _float32_from_bits((np.int32(n) + np.int32(127)) << np.int32(23))  # 2ⁿ, −126 ≤ n ≤ 0
        return y * scale if x >= _EXP_MIN else np.float32(0.0) if x < _EXP_MIN else x  # (NaN stays NaN)

    #: ½ ln 2: exp's reduced argument r lies within ±this, where e^r − 1 = r + r²·P(r) has no cancellation
    HALF_LN2 = np.float32(0.34657359027997264)

    @njit(cache=True, fastmath=_FLAGS, error_model="numpy")
    def expm1_small(x):
        """e^x − 1 for float32 |x| ≤ ½ ln 2: exp's polynomial without its 1, r + r²·P(r) (no cancellation
        near 0, where 1 − exp(x) would lose the leading digits).

        Why a kernel: plain arithmetic that runs in vector lanes inside the regularised steps, where numba calls the
        C library's expm1 once per value. Measured by experiments/bench_lr_regularisation.py."""
        return _horner(x, _EXP_P) * (x * x) + x

    @njit(cache=True, fastmath=_FLAGS, error_model="numpy")
    def log1p_unit(e):
        """log(1 + e) for float32 0 ≤ e ≤ 1 (see the module docstring).

        Why a kernel: plain arithmetic that runs in vector lanes inside the LR link, where numba calls the C
        library's log1p once per value. Measured by experiments/bench_lr_floor.py."""
        s = e / (np.float32(2.0) + e)
        return np.float32(2.0) * s * _horner(s * s, _ATANH_Q)

    @njit(cache=True, fastmath=_FLAGS, error_model="numpy")
    def sigmoid(z):
        """σ(z) in float32: 1/(1 + e) for z ≥ 0, e/(1 + e) below, e = exp(−|z|) (never overflows).

        Why a kernel: lets the scoring loop take σ in vector lanes in the same pass, where ``scipy.special.expit``
        is a second pass over the scores. Measured by experiments/bench.py (the scoring stage's ``predict_proba``)."""
        e = exp_nonpositive(-np.abs(z))
        s = np.float32(1.0) / (np.float32(1.0) + e)
        return e * s if z < np.float32(0.0) else s if z >= np.float32(0.0) else z  # (NaN stays NaN)

    @njit(cache=True, fastmath=_FLAGS, error_model="numpy")
    def elementwise(function, x, out):
        """out[i] = function(x[i]) for one of the functions above (for tests and benchmarks).

        Why a kernel: lets the tests apply a compiled function to an array without a kernel of their own. No
        experiments/ script times it; the functions it applies are measured by experiments/bench_lr_floor.py."""
        for i in range(x.size):
            out[i] = function(x[i])

__all__ = ["HAVE_NUMBA", "elementwise", "exp_nonpositive", "expm1_small", "log1p_unit", "sigmoid"]
