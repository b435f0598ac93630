"""The regularised step of the minibatch solver (mlnb/models/logistic/regularisation.py): the exact solution of
dw/ds = −g − l2·w − l1·sign(w), checked against a fine numerical integration of that ODE, its fixed
points, and the composition that makes the lazy catch-up exact."""

import numpy as np
import pytest

from mlnb.models.logistic.regularisation import regularised_step

numba = pytest.importorskip("numba")
from mlnb.models.logistic.regularisation import (  # noqa: E402
    regularised_row,
    step_with_l1,
    uniform_step_terms,
    uniform_step_terms_lanes,
)


def integrate(w, g, alpha, l1, l2, substeps=20_000):
    """Euler on the ODE with the subgradient at 0 (w stays 0 while |g| ≤ l1): an independent oracle."""
    w = np.array(w, dtype=np.float64)
    h = alpha / substeps
    for _ in range(substeps):
        pull = g + l2 * w + l1 * np.sign(w)
        moved = w - h * pull
        crossing = (w != 0) & (np.sign(moved) != np.sign(w))
        w = np.where(crossing & (np.abs(g) <= l1), 0.0, moved)
        w = np.where((w == 0) & (np.abs(g) <= l1), 0.0, w)
    return w


CASES = [  # (w, g, alpha, l1, l2): away from 0, crossing 0 and stopping, crossing and going on, from 0
    (0.8, 0.3, 0.5, 0.0, 0.2), (-0.5, -1.0, 2.0, 0.0, 0.05), (0.0, 2.0, 0.1, 0.0, 1.0),
    (0.8, 0.3, 0.5, 0.1, 0.2), (0.05, 0.02, 1.0, 0.1, 0.2), (0.05, 0.9, 1.0, 0.1, 0.2),
    (-0.05, -0.9, 1.0, 0.1, 0.0), (0.0, 0.05, 3.0, 0.1, 0.2), (0.0, -0.5, 3.0, 0.1, 0.2), (0.3, 0.0, 4.0, 0.1, 0.2),
]


@pytest.mark.parametrize("w, g, alpha, l1, l2", CASES)
def test_the_step_is_the_solution_of_the_ode(w, g, alpha, l1, l2):
    expected = integrate(np.array([w]), g, alpha, l1, l2)[0]
    assert regularised_step(np.array([w]), np.array([g]), np.array([alpha]), l1, l2)[0] == \
        pytest.approx(expected, abs=2e-4)
    if l1:
        assert step_with_l1(w, g, alpha, l1, l2) == pytest.approx(expected, abs=2e-4)


@pytest.mark.parametrize("l1, l2", [(0.0, 0.3), (0.1, 0.0), (0.1, 0.3)])
def test_the_optimum_is_a_fixed_point_for_any_step(l1, l2):
    """At w with g + l2·w + l1·sign(w) = 0 the step leaves w where it is, however long."""
    w = np.array([0.7, -1.3, 2.0])
    g = -l2 * w - l1 * np.sign(w)
    for alpha in (1e-3, 0.5, 40.0):
        np.testing.assert_allclose(regularised_step(w, g, np.full(3, alpha), l1, l2), w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("l1, l2", [(0.0, 0.3), (0.1, 0.0), (0.1, 0.3)])
def test_missed_steps_compose_into_one(l1, l2):
    """A row no minibatch touches (g = 0): k steps of α each are one step of k·α — the lazy catch-up."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=50).astype(np.float32)
    alpha = rng.uniform(0.01, 2.0, size=50).astype(np.float32)
    stepwise = w.copy()
    for _ in range(7):
        stepwise = regularised_step(stepwise, 0, alpha, l1, l2)
    np.testing.assert_allclose(regularised_step(w, 0, 7 * alpha, l1, l2), stepwise, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("l1, l2", [(0.0, 1e-4), (0.0, 0.3), (0.0, 30.0), (0.1, 0.3)])
def test_the_compiled_row_step_is_the_numpy_step(l1, l2):
    """regularised_row (numba, with its cheaper exact forms by the row's largest l2·α) against the numpy
    formulas, for rows in each of its ranges."""
    rng = np.random.default_rng(1)
    for scale in (1e-2, 1.0, 300.0):  # l2·α below 2e-4, below 0.1, above, for l2 = 1e-4 … 30
        W = rng.normal(size=(2, 103)).astype(np.float32)
        g = rng.normal(size=103).astype(np.float32)
        alpha = (rng.uniform(0.1, 1.0, size=103) * scale).astype(np.float32)
        for touched, row in ((True, 0), (False, 1)):
            expected = regularised_step(W[row], g if touched else 0, alpha, l1, l2)
            regularised_row(W, row, g, alpha, np.float32(l1), np.float32(l2), touched)
            np.testing.assert_allclose(W[row], expected, rtol=3e-6, atol=1e-7)


@pytest.mark.parametrize("l2", [1e-4, 1e-2, 1.0, 30.0])
def test_the_step_terms_in_vector_lanes_are_the_same_bits(l2):
    """uniform_step_terms_lanes (the kernels' default step and its catch-up factors, a loop in vector lanes)
    gives the bits of uniform_step_terms called one α at a time, for α across all its forms
    (y = l2·α from 0 through the linear, cubic and exponential ranges, and beyond ½ ln 2), 0 included; and the
    terms agree with the closed form e^(−y), α·φ(y). Only the first n entries are written."""
    rng = np.random.default_rng(7)
    l2 = np.float32(l2)
    alpha = np.concatenate([[0.0, 1e-30], 10 ** rng.uniform(-12, 5, 3000)]).astype(np.float32)
    shrink, step = np.full(alpha.size + 5, -1.0, np.float32), np.full(alpha.size + 5, -1.0, np.float32)
    uniform_step_terms_lanes(alpha, l2, shrink, step, alpha.size)
    expected = np.array([uniform_step_terms(a, l2) for a in alpha], dtype=np.float32)
    np.testing.assert_array_equal(shrink[:alpha.size].view(np.uint32), expected[:, 0].view(np.uint32))
    np.testing.assert_array_equal(step[:alpha.size].view(np.uint32), expected[:, 1].view(np.uint32))
    assert (shrink[alpha.size:] == -1).all() and (step[alpha.size:] == -1).all()
    y = (l2 * alpha).astype(np.float64)  # y as the kernels round it (float32), then exact
    np.testing.assert_allclose(shrink[:alpha.size], np.exp(-y), rtol=2e-6, atol=1e-38)
    phi = np.where(y > 0, -np.expm1(-y) / np.where(y > 0, y, 1), 1.0)
    np.testing.assert_allclose(step[:alpha.size], alpha * phi, rtol=3e-6, atol=1e-38)


def l1_row_problem(l2):
    """One long row whose coordinates take every path of the l1 step: on their side, stopped at 0 (|g| ≤ l1),
    through 0 and on (|g| > l1), and from 0; with the row's one α, and e^(−y), α·φ(y) as the kernels get them."""
    rng = np.random.default_rng(3)
    w = rng.normal(scale=0.01, size=5000).astype(np.float32)
    w[::7] = 0
    g = rng.normal(scale=0.02, size=w.size).astype(np.float32)
    alpha, l1, l2 = np.float32(0.5), np.float32(0.01), np.float32(l2)
    shrink, step = uniform_step_terms(alpha, l2) if l2 else (np.float32(1.0), alpha)
    return w, g, alpha, l1, l2, shrink, step


@pytest.mark.parametrize("l2", [0.0, 1e-2, 1.0])
def test_the_kernels_row_step_with_l1_is_the_float64_step(l2):
    """_rowwise_step with l1 > 0 (row-wise AdaGrad, one learning rate: one α for the row, a float32 vector loop;
    with l2 = 0 the coordinates that pass 0 go on in the same loop) against step_with_l1, the float64 closed
    form per coordinate: the same to float32 rounding, and the same zeros."""
    from mlnb.models.logistic.kernels import NO_FACTORS, _rowwise_step

    w, g, alpha, l1, l2, shrink, step = l1_row_problem(l2)
    W = w[None].copy()
    _rowwise_step(W, g.copy(), 0, alpha, shrink, step, l1, l2, NO_FACTORS, np.zeros(w.size, dtype=np.float32))
    expected = np.array([step_with_l1(float(a), float(b), float(alpha), float(l1), float(l2)) for a, b in zip(w, g)])
    side = np.where(w != 0, np.sign(w), np.where(np.abs(g) > l1, -np.sign(g), 0))
    crossed = (np.sign(expected) != side) & (w != 0)
    assert crossed.sum() > 100 and ((expected == 0) & (w != 0)).sum() > 100 and ((w == 0) & (expected != 0)).sum() > 100
    assert (crossed & (expected != 0)).sum() > 100  # through 0 and on
    np.testing.assert_allclose(W[0], expected, rtol=1e-5, atol=1e-6 * np.abs(expected).max())
    np.testing.assert_array_equal(W[0] == 0, expected == 0)


@pytest.mark.parametrize("l2", [0.0, 1e-2, 1.0])
def test_the_kernels_catch_up_with_l1_is_the_float64_flow(l2):
    """The catch-up of a row the steps skipped (g = 0) with l1 > 0 under row-wise AdaGrad with one learning rate:
    one soft threshold for the row, |w| → max(|w|·e^(−y) − l1·α·φ(y), 0), against the numpy step with g = 0."""
    from mlnb.models.logistic.kernels import _catch_up_row

    w, _, _, l1, l2, _, _ = l1_row_problem(l2)
    S, lrate, behind = np.full((1, 1), 0.04, dtype=np.float32), np.full(w.size, 0.1, dtype=np.float32), 0.5
    W = w[None].copy()
    _catch_up_row(W, S, 0, lrate, np.float32(0.1), True, True, True, True, np.float32(0.5), np.float32(1e-8), l1, l2,
                  np.float32(behind), np.zeros(w.size, dtype=np.float32))
    alpha = 0.1 * behind / (np.sqrt(0.04) + 1e-8)
    expected = regularised_step(w.astype(np.float64), 0, np.full(w.size, alpha), float(l1), float(l2), np.float64)
    assert 100 < (expected == 0).sum() < w.size - 100
    np.testing.assert_allclose(W[0], expected, rtol=1e-5, atol=1e-6 * np.abs(expected).max())
    np.testing.assert_array_equal(W[0] == 0, expected == 0)
