r"""exp and log1p in float64 that compile to vector code (numba), for the pointwise sums of ``evaluate``.

Without Intel's SVML (not a dependency), numba turns ``np.exp`` and ``np.log1p`` into one call of
the C library per element, which no loop vectorises. The pointwise sums (log loss, Brier, expected
accuracy, reliability) take one exponential and one log1p per (document, category) pair: 5.15M
pairs for a 50k × 103 test set. These two are plain arithmetic, so a loop over a row's categories
calling them runs 8 lanes at a time (4 with AVX2).

    exp(x), x ≤ 0:  n = round(x / ln 2),  r = x − n·ln 2 (ln 2 in two parts: r is exact to 2⁻⁶⁰),
                    exp(x) = 2ⁿ · Σ_{j=0..13} rʲ / j!   (|r| ≤ ½ ln 2: the first omitted term,
                    r¹⁴/14!, is below 5·10⁻¹⁸, a twentieth of an ulp of 1);
                    2ⁿ built from its exponent bits; 0 below −708 (where exp(x) < 2⁻¹⁰²²).
    log1p(e), 0 ≤ e ≤ 1:  with s = e / (2 + e) for e < √2 − 1, else s = (e − 1)/(e + 3) and ln 2
                    added (then 1 + e = 2m, m = (1 + s)/(1 − s) in [1/√2, 1]): |s| ≤ 3 − 2√2 < 0.1716,
                    log((1 + s)/(1 − s)) = 2·atanh(s) = 2s·Σ_{k=0..11} s^{2k}/(2k + 1)
                    (the first omitted term is below 10⁻¹⁹ of the sum; e/(2 + e) does not round
                    1 + e, so a tiny e keeps its digits).

Measured against long-double values over 10⁶ points each (and tested): exp within 0.95 ulp, log1p
within 2.2 ulps (numpy's own: 0.68 and 0.61). For a sum over millions of pairs that is noise: the
log loss and Brier sums of a 50k × 103 test set moved by at most 2e-16 relative. A lane and the
scalar remainder give the same bits (``mlnb._kernels.float_bits.FLAGS``: no contraction into FMA, no
reassociation); NaN stays NaN, −inf gives 0.
"""

from __future__ import annotations

import numpy as np

from mlnb._kernels.jit import HAVE_NUMBA, njit

if HAVE_NUMBA:
    from mlnb._kernels.float_bits import FLAGS as _FLAGS
    from mlnb._kernels.float_bits import float64_from_bits as _float64_from_bits
    from mlnb._kernels.float_bits import horner as _horner

    _LOG2E = 1.4426950408889634
    #: ln 2 = _LN2_HI + _LN2_LO (fdlibm's), _LN2_HI with 32 significant bits: n·_LN2_HI is exact for |n| < 2²¹
    _LN2_HI = 6.93147180369123816490e-01
    _LN2_LO = 1.90821492927058770002e-10
    _LN2 = 0.6931471805599453
    _EXP_MIN = -708.0  # exp(−708) ≈ 3.3e-308, still a normal float64 (2⁻¹⁰²² ≈ 2.2e-308)
    #: 1/j! for j = 13 … 2: exp's Taylor polynomial, highest power first (1 + r added last)
    _EXP_P = tuple(1.0 / float(np.prod(np.arange(1, j + 1, dtype=np.float64))) for j in range(13, 1, -1))
    #: 1/(2k + 1) for k = 11 … 1: the atanh series after its first term, in s², highest power first
    _ATANH_Q = tuple(1.0 / (2 * k + 1) for k in range(11, 0, -1))
    _SQRT2_M1 = 0.41421356237309503  # √2 − 1

    @njit(cache=True, fastmath=_FLAGS, error_model="numpy")
    def exp_nonpositive(x):
        """exp(x) for float64 x ≤ 0 (see the module docstring); 0 where x < −708, NaN for NaN.

        Why a kernel: plain arithmetic that runs in vector lanes inside the metric loops, where numba calls the C
        library's exp once per value. Measured by experiments/bench_threads.py (the ``evaluate()`` stage)."""
        clamped = max(x, _EXP_MIN)
        n = np.floor(clamped * _LOG2E + 0.5)
        r = clamped - n * _LN2_HI - n * _LN2_LO
        y = _horner(r, _EXP_P) * (r * r) + r + 1.0
        scale = _float64_from_bits((np.int64(n) + np.int64(1023)) << np.int64(52))  # 2ⁿ, −1022 ≤ n ≤ 0
        return y * scale if x >= _EXP_MIN else 0.0 if x < _EXP_MIN else x  # (NaN stays NaN)

    @njit(cache=True, fastmath=_FLAGS, error_model="numpy")
    def log1p_unit(e):
        """log(1 + e) for float64 0 ≤ e ≤ 1 (see the module docstring).

        Why a kernel: plain arithmetic that runs in vector lanes inside the metric loops, where numba calls the C
        library's log1p once per value. Measured by experiments/bench_threads.py (the ``evaluate()`` stage)."""
        small = e < _SQRT2_M1
        s = e / (2.0 + e) if small else (e - 1.0) / (e + 3.0)
        t = s * s
        series = 2.0 * s + (2.0 * s * t) * _horner(t, _ATANH_Q)  # the leading 2s added last: no rounding of it
        return series if small else series + _LN2

    @njit(cache=True, fastmath=_FLAGS, error_model="numpy")
    def elementwise(function, x, out):
        """out[i] = function(x[i]) for one of the functions above (for tests and benchmarks).

        Why a kernel: lets the tests apply a compiled function to an array without a kernel of their own. No
        experiments/ script times it; the functions it applies are measured by experiments/bench_threads.py."""
        for i in range(x.size):
            out[i] = function(x[i])

__all__ = ["HAVE_NUMBA", "elementwise", "exp_nonpositive", "log1p_unit"]
