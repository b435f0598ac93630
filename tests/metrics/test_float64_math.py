"""The vectorisable float64 exp and log1p of the pointwise sums, against long-double numpy."""

import numpy as np
import pytest

from mlnb.metrics import _float64_math as fm

pytestmark = pytest.mark.skipif(not fm.HAVE_NUMBA, reason="numba is not installed")


def ulps(approx: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|approx − exact| in units of the float64 spacing at the exact value (exact in long double)."""
    spacing = np.spacing(exact.astype(np.float64)).astype(np.longdouble)
    return np.asarray(np.abs(approx.astype(np.longdouble) - exact) / spacing, dtype=np.float64)


def exact(function, x: np.ndarray) -> np.ndarray:
    """``function`` in long double (x86's 64-bit mantissa: 11 bits beyond float64's)."""
    if np.finfo(np.longdouble).nmant < 60:
        pytest.skip("long double is no wider than float64 here: no reference finer than the float64 result")
    return function(x.astype(np.longdouble))


def test_exp_is_within_one_ulp_down_to_minus_708_and_zero_below():
    x = -np.concatenate([np.linspace(0, 708, 1_000_001), np.logspace(-300, np.log10(708), 20_001),
                         [0.0, 1e-300, 0.5 * np.log(2), np.log(2), 10 * np.log(2)]])
    out = np.empty_like(x)
    fm.elementwise(fm.exp_nonpositive, x, out)
    assert ulps(out, exact(np.exp, x)).max() <= 1.0
    assert out[x == 0].tolist() == [1.0] * int((x == 0).sum())
    below = np.array([-708.01, -745.2, -1000.0, -1e300, -np.inf])
    flushed = np.empty_like(below)
    fm.elementwise(fm.exp_nonpositive, below, flushed)
    assert flushed.tolist() == [0.0] * below.size  # exp < 2.2e-308 there: flushed, not a wrong large value


def test_log1p_is_within_two_and_a_half_ulps_on_the_unit_interval_either_side_of_the_switch():
    switch = np.sqrt(2.0) - 1.0
    e = np.concatenate([np.linspace(0, 1, 1_000_001), np.logspace(-300, 0, 20_001),
                        np.linspace(switch - 1e-9, switch + 1e-9, 2_001), [switch, np.nextafter(switch, 0.0)]])
    out = np.empty_like(e)
    fm.elementwise(fm.log1p_unit, e, out)
    reference = exact(np.log1p, e)
    positive = reference > 0
    assert ulps(out[positive], reference[positive]).max() <= 2.5
    assert out[~positive].tolist() == [0.0] * int((~positive).sum())
    tiny = np.array([1e-300, 1e-20])
    small = np.empty_like(tiny)
    fm.elementwise(fm.log1p_unit, tiny, small)
    assert small.tolist() == tiny.tolist()  # log1p(e) = e to float64 there: e/(2 + e) keeps its digits


def test_sigmoid_and_softplus_built_from_them_match_scipy():
    """The pieces as the pointwise sums use them: e = exp(−|z|), σ(z) = 1/(1 + e) or e/(1 + e),
    softplus(z) = max(z, 0) + log1p(e), over z of both signs and large size."""
    from scipy.special import expit

    z = np.concatenate([np.linspace(-40, 40, 400_001), [-1e4, 1e4, 0.0]])
    e = np.empty_like(z)
    fm.elementwise(fm.exp_nonpositive, -np.abs(z), e)
    log_term = np.empty_like(z)
    fm.elementwise(fm.log1p_unit, e, log_term)
    np.testing.assert_allclose(np.maximum(z, 0) + log_term, np.logaddexp(0, z), rtol=8e-16, atol=0)
    sigmoid = np.where(z >= 0, 1 / (1 + e), e / (1 + e))
    np.testing.assert_allclose(sigmoid, expit(z), rtol=6e-16, atol=1e-300)
    assert sigmoid[-3:].tolist() == [0.0, 1.0, 0.5]


def test_nan_stays_nan_and_minus_infinity_gives_zero():
    x = np.array([np.nan, -np.inf])
    out = np.empty_like(x)
    fm.elementwise(fm.exp_nonpositive, x, out)
    assert np.isnan(out[0]) and out[1] == 0.0
    fm.elementwise(fm.log1p_unit, np.array([np.nan]), out[:1])
    assert np.isnan(out[0])


def test_a_vector_loop_gives_the_bits_of_one_value_at_a_time():
    """Lanes and the loop's scalar remainder agree (no contraction into FMA): the same value at
    every position of arrays of lengths that leave every remainder."""
    rng = np.random.default_rng(0)
    values = -rng.exponential(5.0, 64)
    for function, argument in ((fm.exp_nonpositive, values), (fm.log1p_unit, np.exp(values))):
        one = np.empty(1)
        alone = np.empty_like(argument)
        for i, v in enumerate(argument):
            fm.elementwise(function, np.array([v]), one)
            alone[i] = one[0]
        for length in range(1, 40):
            out = np.empty(length)
            fm.elementwise(function, argument[:length], out)
            assert out.tobytes() == alone[:length].tobytes()
