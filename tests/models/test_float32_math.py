"""The vectorisable float32 exp and log1p of the LR links, against float64 numpy."""

import numpy as np
import pytest

from mlnb.models import _float32_math as fm

pytestmark = pytest.mark.skipif(not fm.HAVE_NUMBA, reason="numba is not installed")


def ulps(approx: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|approx − exact| in units of the float32 spacing at the exact value."""
    return np.abs(approx.astype(np.float64) - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)


def test_exp_is_within_one_ulp_down_to_minus_87_3_and_zero_below():
    x = -np.concatenate([np.linspace(0, 87.3, 1_000_001), np.logspace(-12, np.log10(87.3), 20_001),
                         [0.0, 1e-30, 0.5 * np.log(2), np.log(2), 10 * np.log(2)]]).astype(np.float32)
    out = np.empty_like(x)
    fm.elementwise(fm.exp_nonpositive, x, out)
    exact = np.exp(x.astype(np.float64))
    assert ulps(out, exact).max() <= 1.0
    assert out[x == 0].tolist() == [1.0] * int((x == 0).sum())
    below = np.array([-87.31, -88.0, -100.0, -1e30, -np.inf], dtype=np.float32)
    flushed = np.empty_like(below)
    fm.elementwise(fm.exp_nonpositive, below, flushed)
    assert flushed.tolist() == [0.0] * below.size  # exp < 1.3e-38 there: flushed, not a wrong large value


def test_expm1_small_is_within_one_ulp_on_half_ln2_either_side_of_zero():
    """e^x − 1 near 0 without the cancellation of exp(x) − 1 (the regularised step's 1 − e^(−y))."""
    half = float(fm.HALF_LN2)
    x = np.concatenate([np.linspace(-half, half, 1_000_001), -np.logspace(-30, np.log10(half), 20_001),
                        np.logspace(-30, np.log10(half), 20_001)]).astype(np.float32)
    out = np.empty_like(x)
    fm.elementwise(fm.expm1_small, x, out)
    exact = np.expm1(x.astype(np.float64))
    nonzero = exact != 0
    assert ulps(out[nonzero], exact[nonzero]).max() <= 1.0
    assert out[~nonzero].tolist() == [0.0] * int((~nonzero).sum())


def test_log1p_is_within_three_ulps_on_the_unit_interval():
    e = np.concatenate([np.linspace(0, 1, 1_000_001), np.logspace(-38, 0, 20_001)]).astype(np.float32)
    out = np.empty_like(e)
    fm.elementwise(fm.log1p_unit, e, out)
    exact = np.log1p(e.astype(np.float64))
    positive = exact > 0
    assert ulps(out[positive], exact[positive]).max() <= 3.0
    assert out[~positive].tolist() == [0.0] * int((~positive).sum())
    assert out[-1] == np.float32(np.log(2.0))  # e = 1: log 2 to the float32 rounding


def test_softplus_and_sigmoid_built_from_them_match_numpy():
    """The pieces as the sigmoid link uses them: softplus(z) = max(z, 0) + log1p(exp(−|z|)), and
    σ(z) = 1/(1 + e) or e/(1 + e), e = exp(−|z|), over z of both signs and large size."""
    z = np.concatenate([np.linspace(-40, 40, 400_001), [-1e4, 1e4, 0.0]]).astype(np.float32)
    e = np.empty_like(z)
    fm.elementwise(fm.exp_nonpositive, -np.abs(z), e)
    log_term = np.empty_like(z)
    fm.elementwise(fm.log1p_unit, e, log_term)
    softplus = np.maximum(z, 0) + log_term
    sigmoid = np.empty_like(z)
    fm.elementwise(fm.sigmoid, z, sigmoid)
    z64 = z.astype(np.float64)
    np.testing.assert_allclose(softplus, np.logaddexp(0, z64), rtol=3e-7, atol=1e-30)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(sigmoid, 1 / (1 + np.exp(-z64)), rtol=3e-7, atol=1e-37)
    assert sigmoid[-3:].tolist() == [0.0, 1.0, 0.5]


def test_nan_stays_nan_and_infinities_give_the_limits():
    z = np.array([np.nan, -np.inf, np.inf], dtype=np.float32)
    out = np.empty_like(z)
    fm.elementwise(fm.sigmoid, z, out)
    assert np.isnan(out[0]) and out[1:].tolist() == [0.0, 1.0]
    fm.elementwise(fm.exp_nonpositive, z[:2], out[:2])
    assert np.isnan(out[0]) and out[1] == 0.0
