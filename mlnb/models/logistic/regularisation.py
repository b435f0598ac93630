r"""The regularised step of the minibatch solver, exact for the rows a minibatch does not touch.

One coordinate w of W, its loss gradient g on the minibatch (0 on a row the minibatch does not
touch) and its step α (``minibatch.Updater``). The step is the exact solution, after a time α, of

    dw/ds = −g − l2·w − l1·sign(w)          (g held fixed during the step)

that is, gradient flow on the documented objective with the loss linearised at the step's start
(an exponential-Euler step). In closed form, on one side of 0 (r = |w|, σ = sign(w), c = σ·g + l1,
the pull towards 0, and φ(y) = (1 − e^(−y))/y, φ(0) = 1):

    r(s) = r·e^(−l2·s) − c·s·φ(l2·s)

until r reaches 0, at the time s₀ = log1p(l2·r/c)/l2 (r/c when l2 = 0); there w stays 0 if |g| ≤ l1
(0 is in the subdifferential), else it goes on, from 0, on the side −sign(g). Cases:

    l1 = 0 :  w ← e^(−l2·α)·w − α·φ(l2·α)·g                   (the default; one vector loop)
    g = 0  :  the regulariser's own flow Φ_α, e.g. w·e^(−l2·α)  (a row the minibatch does not touch)

Why this step:

* its fixed points are the documented objective's optima for any α (w is still iff
  g + l2·w + l1·sign(w) = 0, or w = 0 and |g| ≤ l1), so a constant step does not bias the result,
  as a step that regularises after the gradient (e.g. w·e^(−l2·α) − α·g) would, by O(α·l2);
* with g = 0 it is a flow, and flows compose: the k steps a row missed since it was last touched
  are one such step for the summed time c·(T(t₁) − T(t₀)) (``minibatch.Updater``), so the lazy
  catch-up is exact — the result is, up to float32 rounding, the dense update of every row at every
  step, at the cost of the touched rows.

Two implementations of the same formulas: numpy (the scipy reference kernel and the end-of-pass
flush without numba) and numba (the kernels' row loops).
"""

from __future__ import annotations

import math

import numpy as np

from mlnb._kernels.jit import HAVE_NUMBA, IEEE, njit

#: below this y, φ(y) = (1 − e^(−y))/y is its Taylor polynomial (error < y⁵/720 < 2e-8); above, the quotient
#: (whose float32 rounding, ~6e-8/y relative, is then below 1e-6)
PHI_SERIES_BELOW = 0.1
#: below this y, e^(−y) = 1 − y and φ(y) = 1 − y/2 to float32 rounding (the next terms are < 2e-8)
LINEAR_BELOW = 2e-4
#: below this y, their Taylor polynomials of degree 3 are exact to float32 rounding (next terms < 5e-10)
CUBIC_BELOW = 1e-2


def phi(y: np.ndarray) -> np.ndarray:
    """φ(y) = (1 − e^(−y))/y for y ≥ 0 (φ(0) = 1), in y's float type."""
    y = np.asarray(y)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        series = 1 - y / 2 + y * y / 6 - y ** 3 / 24 + y ** 4 / 120
        quotient = -np.expm1(-y) / y
    return np.where(y < PHI_SERIES_BELOW, series, quotient).astype(y.dtype, copy=False)


def regularised_step(w: np.ndarray, g, alpha: np.ndarray, l1: float, l2: float, dtype=np.float32) -> np.ndarray:
    """The step of the module docstring for arrays w, g (or 0), α ≥ 0 (numpy); computed and returned in
    ``dtype`` (float32: the minibatch solver's W; float64: the SVRG solver's, ``svrg.py``)."""
    w = np.asarray(w, dtype=dtype)
    alpha = np.asarray(alpha, dtype=dtype)
    g = np.zeros_like(w) if isinstance(g, (int, float)) and g == 0 else np.asarray(g, dtype=dtype)
    if l1 == 0 and l2 == 0:
        return (w - alpha * g).astype(dtype, copy=False)
    if l1 == 0 and np.dtype(dtype) == np.float64:  # one expm1: e^(−y) = 1 + expm1(−y), φ(y) = −expm1(−y)/y
        y = l2 * alpha
        shrink = np.expm1(-y)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(y > 0, -shrink / np.where(y > 0, y, 1.0) * alpha, alpha)  # α·φ(l2·α)
        return (1.0 + shrink) * w - step * g
    if l1 == 0:
        y = dtype(l2) * alpha
        return (np.exp(-y) * w - alpha * phi(y) * g).astype(dtype, copy=False)
    w, g, alpha = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(w, g, alpha))
    side = np.sign(w)
    still = side == 0
    side[still] = np.where(g[still] > l1, -1.0, np.where(g[still] < -l1, 1.0, 0.0))
    r, c = np.abs(w), side * g + l1

    def along(r0, c0, s):  # r(s) on one side
        return r0 * np.exp(-l2 * s) - c0 * s * phi(l2 * s)

    end = along(r, c, alpha)
    out = side * end
    crossed = (side != 0) & (end < 0)
    if crossed.any():
        rc, cc, ac, gc = r[crossed], c[crossed], alpha[crossed], g[crossed]
        s0 = np.log1p(l2 * rc / cc) / l2 if l2 > 0 else rc / cc
        rest = np.maximum(ac - s0, 0.0)
        beyond = np.abs(gc) > l1  # else w stays at 0
        other = -np.sign(gc)
        out[crossed] = np.where(beyond, other * along(0.0, other * gc + l1, rest), 0.0)
    out[(side == 0)] = 0.0
    return out.astype(dtype, copy=False)


if HAVE_NUMBA:
    from mlnb.models._float32_math import HALF_LN2, exp_nonpositive, expm1_small

    FLOAT32_LARGEST = float(np.finfo(np.float32).max)

    @njit(cache=True, error_model="numpy")
    def _along(r, c, s, l2):
        """r(s) = r·e^(−l2·s) − c·s·φ(l2·s), float64.

        Why a kernel: inlined into ``step_with_l1``, which evaluates it a few times per coordinate. No experiments/
        script times it (an LR pass with l1 and l2 > 0); the fits of experiments/lr_objective.py with both run it."""
        y = l2 * s
        phi_y = 1.0 - y / 2 + y * y / 6 - y ** 3 / 24 + y ** 4 / 120 if y < PHI_SERIES_BELOW else -math.expm1(-y) / y
        return r * math.exp(-y) - c * s * phi_y

    @njit(cache=True, error_model="numpy")
    def step_with_l1(w, g, alpha, l1, l2):
        """The step of the module docstring for one coordinate, l1 > 0, in float64.

        Why a kernel: the rare float64 step of a coordinate that reaches zero, called from the float32 row loops
        without leaving compiled code. No experiments/ script times it (an LR pass with l1 and l2 > 0); the fits of
        experiments/lr_objective.py with both run it."""
        if w > 0:
            side = 1.0
        elif w < 0:
            side = -1.0
        elif g > l1:
            side = -1.0
        elif g < -l1:
            side = 1.0
        else:
            return 0.0
        r = abs(w)
        c = side * g + l1
        end = _along(r, c, alpha, l2)
        if end >= 0:
            return side * end
        s0 = math.log1p(l2 * r / c) / l2 if l2 > 0 else r / c
        if abs(g) <= l1:
            return 0.0
        other = -1.0 if g > 0 else 1.0
        return other * _along(0.0, other * g + l1, max(alpha - s0, 0.0), l2)

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def regularised_row(W, j, g, alpha, l1, l2, touched):
        """W_j ← the step of the module docstring with the loss gradients g (K,) (``touched``; else g = 0)
        and steps alpha (K,), in place; separate loops per case so that each vectorises.

        l1 = 0 (the default regulariser): e^(−y) and α·φ(y), y = l2·α, by the cheapest form that is exact
        to float32 rounding for the row's largest y: 1 − y and α·(1 − y/2) below ``LINEAR_BELOW`` (the
        next terms, y²/2 and y²/6, are then < 2e-8), their Taylor polynomials of degree 3 below
        ``CUBIC_BELOW``, else e^(−y) and α·φ(y) = (1 − e^(−y))/l2 (a few float32 roundings of the
        terms: within 3e-7 of their size, measured against float64).

        Why a kernel: a row's regularised step in one vector loop per case inside the update and catch-up loops,
        where numpy would make a temporary for each term. Measured by experiments/bench_lr_regularisation.py."""
        K = W.shape[1]
        one, half = np.float32(1.0), np.float32(0.5)
        if l1 == 0:
            top = np.float32(0.0)
            for k in range(K):
                top = max(top, alpha[k])
            top *= l2
            if not touched:
                if top < LINEAR_BELOW:
                    for k in range(K):
                        W[j, k] *= one - l2 * alpha[k]
                else:
                    for k in range(K):
                        W[j, k] *= exp_nonpositive(-l2 * alpha[k])
            elif top < LINEAR_BELOW:
                for k in range(K):
                    y = l2 * alpha[k]
                    W[j, k] = (one - y) * W[j, k] - alpha[k] * (one - half * y) * g[k]
            elif top < CUBIC_BELOW:
                c2, c3, c4 = np.float32(1 / 2), np.float32(1 / 3), np.float32(1 / 4)
                for k in range(K):
                    y = l2 * alpha[k]
                    e = one - y * (one - c2 * y * (one - c3 * y))
                    phi_y = one - c2 * y * (one - c3 * y * (one - c4 * y))
                    W[j, k] = e * W[j, k] - alpha[k] * phi_y * g[k]
            else:
                # α·φ(y) = (1 − e^(−y))/l2: one exp per coordinate and a product, no quotient (measured by
                # experiments/bench_lr_regularisation.py); 1 − e^(−y) from the polynomial without its 1 below
                # ½ ln 2, where 1 − e would
                # cancel; 1/l2 held below float32's largest, so that a coordinate with no step yet (α = 0) gets
                # 0·(1/l2)·g = 0
                per_l2 = np.float32(min(1.0 / np.float64(l2), FLOAT32_LARGEST))
                for k in range(K):
                    y = l2 * alpha[k]
                    e = exp_nonpositive(-y)
                    shrunk = -expm1_small(-y) if y < HALF_LN2 else one - e  # 1 − e^(−y)
                    W[j, k] = e * W[j, k] - (shrunk * per_l2) * g[k]
        else:
            for k in range(K):
                gk = np.float64(g[k]) if touched else 0.0
                W[j, k] = np.float32(step_with_l1(np.float64(W[j, k]), gk, np.float64(alpha[k]), np.float64(l1),
                                                  np.float64(l2)))

    @njit(cache=True, fastmath=IEEE, error_model="numpy", inline="always")
    def uniform_step_terms(alpha, l2):
        """(e^(−y), α·φ(y)), y = l2·α, float32, by the forms ``regularised_row`` chooses for a row whose largest
        y is this y: the shrink and the gradient's factor of the step, once for a row with one α. Without a
        branch (every form computed, the one for y chosen), so that a loop over rows runs in vector lanes
        (``uniform_step_terms_lanes``).

        Why a kernel: branch-free, so that the loops over rows that call it run in vector lanes. Measured by
        experiments/bench_lr_regularisation.py."""
        one, half = np.float32(1.0), np.float32(0.5)
        c2, c3, c4 = np.float32(1 / 2), np.float32(1 / 3), np.float32(1 / 4)
        per_l2 = np.float32(min(1.0 / np.float64(l2), FLOAT32_LARGEST))
        y = l2 * alpha
        e = exp_nonpositive(-y)
        shrunk = -expm1_small(-y) if y < HALF_LN2 else one - e  # 1 − e^(−y)
        linear = y < LINEAR_BELOW
        cubic = y < CUBIC_BELOW
        shrink = (one - y) if linear else (one - y * (one - c2 * y * (one - c3 * y))) if cubic else e
        step = (alpha * (one - half * y)) if linear else \
            (alpha * (one - c2 * y * (one - c3 * y * (one - c4 * y)))) if cubic else shrunk * per_l2
        return shrink, step

    @njit(cache=True, fastmath=IEEE, error_model="numpy")
    def uniform_step_terms_lanes(alpha, l2, shrink, step, n):
        """shrink[c], step[c] = ``uniform_step_terms``(alpha[c], l2) for c < n, in vector lanes, not one row at
        a time, whose exponential and expm1 wait on each other's polynomials (most rows of an RCV1-shaped fit
        have y = l2·α between 0.01 and 0.1, the exponential's range; measured by
        experiments/bench_lr_regularisation.py).

        Why a kernel: the terms of a block's rows in vector lanes, not one row at a time. Measured by
        experiments/bench_lr_regularisation.py."""
        for c in range(n):
            shrink[c], step[c] = uniform_step_terms(alpha[c], l2)
