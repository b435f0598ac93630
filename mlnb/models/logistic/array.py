r"""Logistic regression's minibatch passes on a device: the CPU estimator's steps, dense.

The same documents in the same minibatches as ``LogisticRegression.fit`` (the permutation of
every pass drawn from the same seeded generator, cut into the same slices), the same start (W = 0
or ``coef_init``; b = the training priors or ``intercept_init``) and, for minibatch B at step t
(``mlnb.models.logistic.minibatch.Updater``), the same update of every coordinate of W:

    Z = X_B·W + b,   D = link(Z) − Y_B                              (m × K)
    G = X_Bᵀ·D / m                                                  (V × K: 0 on the rows B misses)
    adagrad:  S += G²,   α = lrate·τ_t / (S^vexp + ε),   τ_t = t^(vexp − texp)
    sgd:                 α = lrate·τ_t,                  τ_t = t^(−texp)
    W ← w after a time α of dw/ds = −g − l2·w − l1·sign(w)     (``mlnb.models.logistic.regularisation``)
      = e^(−l2·α)·W − α·φ(l2·α)·G,  φ(y) = (1 − e^(−y))/y       (l1 = 0, the default)
    b ← b − lrate·τ_t·g_b / (S_b^vexp + ε)   (S_b += g_b²;  sgd: b − lrate·τ_t·g_b),  g_b = 1ᵀ·D / m

The CPU estimator applies the step lazily: a row the minibatch does not touch has G = 0 and a
constant S, so its α is c·τ_t at every step it misses, the step is then the penalty's own flow,
and flows compose: the missed steps are one step for the time c·Σ τ, taken just before the row is
next read (and at the end of every pass). Here every row is updated at every step — the dense
form the lazy rule is exact for — because a GPU sweeps W (V × K) at memory bandwidth, while
gathering the touched rows and their catch-up would cost more. The two agree to float32
round-off, as the CPU estimator's two kernels (scipy and numba) agree with each other.

The loss of each minibatch (before its update) is summed on the device; the per-pass checks
(overflow, divergence) and the history are the CPU estimator's. On a GPU the passes are the same to
round-off, not bit for bit, from run to run (``ArrayNamespace.transposed_product``).
"""

from __future__ import annotations

import time

import numpy as np

from mlnb import progress
from mlnb.errors import MlnbError
from mlnb.models._linear import as_csr_float32, as_label_matrix, as_one_hot, prior_log_odds
from mlnb.models.array.device import canonical
from mlnb.models.array.model import ArrayModel
from mlnb.models.logistic.minibatch import UPDATERS, sums_shape
from mlnb.models.logistic.options import LINKS
from mlnb.models.logistic.passes import DIVERGENCE_FACTOR, format_pass, lrate_too_large, prior_loss


def takes(estimator, arguments: dict) -> bool:
    """Whether these passes fit ``estimator`` (a ``LogisticRegression``) with these ``fit`` keywords: the
    minibatch solver (not L-BFGS or SVRG), without NB-LR's scale or a held-out monitor."""
    return (estimator.solver == "minibatch" and estimator.updater in UPDATERS and estimator.task in LINKS
            and arguments.get("scale") is None and arguments.get("eval_set") is None)


def _lrate(estimator, K: int) -> np.ndarray:
    """(K,) float32 learning rates, as ``LogisticRegression._check_params`` reads them."""
    lrate = np.asarray(estimator.lrate, dtype=np.float64)
    lrate = np.broadcast_to(lrate, (K,)) if lrate.ndim == 0 else lrate
    if lrate.shape != (K,) or not (np.all(np.isfinite(lrate)) and np.all(lrate > 0)):
        raise MlnbError(f"lrate must be one number > 0 or one per category ({K}), got {estimator.lrate!r}")
    return np.ascontiguousarray(lrate, dtype=np.float32)


def residual(xp, Z, Y_B, link: str):
    """(D = link(Z) − Y_B (m × K) float32, Σ loss (device float64 scalar)): the kernels' rows."""
    if link == "sigmoid":
        e = xp.exp(-xp.abs(Z))  # e^(−|z|) ≤ 1: no overflow
        s = np.float32(1) / (np.float32(1) + e)
        P = xp.where(Z >= 0, s, e * s)  # σ(z), as the kernels form it
        loss = xp.sum(xp.maximum(Z, 0) + xp.log1p(e), dtype=np.float64)  # softplus(z)
    else:
        top = Z.max(axis=1, keepdims=True)
        E = xp.exp(Z - top)  # every exponent ≤ 0
        total = E.sum(axis=1, keepdims=True)
        P = E / total
        loss = xp.sum(top + xp.log(total), dtype=np.float64)  # logsumexp(z_i)
    loss = loss - xp.sum(Z * Y_B, dtype=np.float64)
    return P - Y_B, loss


def phi(xp, y):
    """φ(y) = (1 − e^(−y))/y = −expm1(−y)/y for y ≥ 0, φ(0) = 1 (expm1: no cancellation near 0)."""
    return xp.where(y > 0, -xp.expm1(-y) / xp.where(y > 0, y, 1), 1).astype(y.dtype, copy=False)


def regularised_step(xp, W, G, alpha, l1: float, l2: float):
    """``mlnb.models.logistic.regularisation.regularised_step`` for every coordinate at once: W after a time α
    of dw/ds = −g − l2·w − l1·sign(w) (g fixed), float32; W, G (and α when it is an array of W's
    shape) are overwritten.

    l1 = 0 (the default): e^(−y)·w − α·φ(y)·g with y = l2·α, and α·φ(y) = −expm1(−y)/l2, so

        w ← w + expm1(−y)·(w + g/l2)

    four sweeps over W, no new array (the rounding is a few ulp of the step, as the CPU's form).
    l1 > 0: each coordinate moves towards 0 on its side, stops there if |g| ≤ l1, else goes on from 0
    on the side −sign(g) (float64, as the module)."""
    if l1 == 0 and l2 == 0:
        G *= alpha
        W -= G
        return W
    if l1 == 0:
        em = alpha * np.float32(-l2) if alpha.shape != W.shape else xp.multiply(alpha, np.float32(-l2), out=alpha)
        xp.expm1(em, out=em)  # expm1(−y)
        G /= np.float32(l2)
        G += W
        G *= em
        W += G
        return W
    W, G, alpha = W.astype(np.float64), G.astype(np.float64), xp.broadcast_to(alpha, W.shape).astype(np.float64)
    side = xp.sign(W)
    still = side == 0
    side = xp.where(still, xp.where(G > l1, -1.0, xp.where(G < -l1, 1.0, 0.0)), side)
    r, c = xp.abs(W), side * G + l1

    def along(r0, c0, s):  # r(s) on one side
        return r0 * xp.exp(-l2 * s) - c0 * s * phi(xp, l2 * s)

    end = along(r, c, alpha)
    crossed = (side != 0) & (end < 0)
    safe_c = xp.where(crossed, c, 1.0)
    s0 = xp.log1p(l2 * r / safe_c) / l2 if l2 > 0 else r / safe_c  # when r reaches 0
    other = -xp.sign(G)
    beyond = other * along(0.0, other * G + l1, xp.maximum(alpha - s0, 0.0))
    out = xp.where(crossed, xp.where(xp.abs(G) > l1, beyond, 0.0), side * end)
    return xp.where(side == 0, 0.0, out).astype(np.float32)


#: ``DenseTraining.step``'s AdaGrad update and exact L2 step (l1 = 0) for one coordinate, as CUDA C: the
#: array code's operations in its order, each rounded as it rounds them (``__f*_rn``: no fused
#: multiply-adds), so that the kernel and the array code give the same W and S to an ulp (tested against
#: numpy's); one kernel instead of the array code's temporaries (measured by experiments/bench_gpu.py)
FUSED_ADAGRAD_STEP = r"""
    float s_new = __fadd_rn(s, __fmul_rn(g, g));                  // S += G²
    s = s_new;
    float root = vexp == 0.5f ? sqrtf(s_new) : powf(s_new, vexp);  // S^vexp
    float a = s_new > 0.0f ? __fdiv_rn(scale, __fadd_rn(root, eps)) : 0.0f;  // α; no gradient yet: no step
    if (l2 == 0.0f) {
        w = __fsub_rn(w, __fmul_rn(a, g));                         // w − α·g
    } else {
        float em = expm1f(__fmul_rn(a, -l2));                      // expm1(−l2·α)
        w = __fadd_rn(w, __fmul_rn(em, __fadd_rn(__fdiv_rn(g, l2), w)));  // w + expm1(−y)·(w + g/l2)
    }
"""
_FUSED = {}


def fused_adagrad_step(ns):
    """The CuPy kernel of ``FUSED_ADAGRAD_STEP``, called as ``kernel(G, scale, vexp, eps, l2, S, W)`` with
    G, S, W (V × K) and scale (K,); built once per process (None on numpy)."""
    if not ns.on_gpu:
        return None
    if "kernel" not in _FUSED:
        _FUSED["kernel"] = ns.xp.ElementwiseKernel(
            "float32 g, float32 scale, float32 vexp, float32 eps, float32 l2", "float32 s, float32 w",
            FUSED_ADAGRAD_STEP, "mlnb_adagrad_l2_step")
    return _FUSED["kernel"]


class DenseTraining:
    """W (V × K), b (K,), S (V × K with adagrad, V × 1 with rowwise_adagrad), S_b (K,) and the step count t,
    on the device."""

    def __init__(self, ns, estimator, V: int, K: int, W0, b0):
        xp = self.xp = ns.xp
        self.ns = ns
        self.adagrad = estimator.updater in ("adagrad", "rowwise_adagrad")
        self.rowwise = estimator.updater == "rowwise_adagrad"  # one AdaGrad sum per word: S is V × 1
        self.lrate = ns.asarray(_lrate(estimator, K))  # (K,)
        self.texp, self.vexp, self.epsilon = float(estimator.texp), float(estimator.vexp), float(estimator.epsilon)
        self.l1, self.l2 = float(estimator.l1), float(estimator.l2)
        # (V × K) column-major: the layout cuSPARSE reads and writes dense operands in, so that neither
        # product copies W or G (on numpy the order only changes speed)
        # a copy of W0 always: W is updated in place, and W0 is the caller's (e.g. the NB model's weights_)
        self.W = xp.zeros((V, K), dtype=np.float32, order="F") if W0 is None else \
            xp.array(ns.asarray(np.asarray(W0, dtype=np.float32)), order="F", copy=True)
        self.b = ns.asarray(np.array(b0, dtype=np.float32))
        sums = sums_shape(estimator.updater, V, K)  # V × K, V × 1 (row-wise) or None (sgd)
        self.S = None if sums is None else xp.zeros(sums, dtype=np.float32, order="F")
        self.Sb = xp.zeros(K, dtype=np.float32)
        self.t = 0
        # on a GPU, AdaGrad with L2 alone (the default) runs as one fused kernel: 5 arrays' traffic per
        # step instead of ~30 (``fused_adagrad_step``); None runs the array code (always on numpy)
        self.fused = fused_adagrad_step(ns) if ns.on_gpu and self.adagrad and not self.rowwise and self.l1 == 0 \
            else None

    def _divide(self, S):
        """S^vexp + ε (√S for the default vexp = ½: the kernels' branch)."""
        root = self.xp.sqrt(S) if self.vexp == 0.5 else S ** np.float32(self.vexp)
        return root + np.float32(self.epsilon)

    def update(self, G, scale) -> None:
        """W and S after one step with the loss gradient G (V × K, overwritten) and lrate·τ_t per category
        ``scale`` (K,): the fused kernel where there is one (``self.fused``), else the array code."""
        xp = self.xp
        if self.fused is not None:  # the AdaGrad and L2 steps below in one sweep: S and W updated in place
            self.fused(G, scale, np.float32(self.vexp), np.float32(self.epsilon), np.float32(self.l2), self.S, self.W)
            return
        # in place where it can be: each line one sweep over V × K, no new (V × K) array but α
        if self.rowwise:  # S_j += mean_k G_jk²;  α_jk = lrate_k·τ / (S_j^vexp + ε)
            self.S += (G * G).mean(axis=1, keepdims=True)
            alpha = scale / self._divide(self.S)  # (V × 1) against (K,): V × K
            alpha *= self.S > 0
        elif self.adagrad:
            alpha = G * G
            self.S += alpha
            if self.vexp == 0.5:  # the kernels' branch: √S
                xp.sqrt(self.S, out=alpha)
            else:
                xp.power(self.S, np.float32(self.vexp), out=alpha)
            alpha += np.float32(self.epsilon)
            xp.divide(scale, alpha, out=alpha)  # α = lrate·τ / (S^vexp + ε)
            alpha *= self.S > 0  # a coordinate with no gradient yet (S = 0) takes no step, as in the kernels
        else:
            alpha = scale  # (K,): one α per category
        self.W = regularised_step(xp, self.W, G, alpha, self.l1, self.l2)

    def step(self, X_B, Y_B, link: str):
        """One minibatch (module docstring); returns its summed loss before the update (device scalar)."""
        xp = self.xp
        self.t += 1
        tau = np.float32(float(self.t) ** ((self.vexp if self.adagrad else 0.0) - self.texp))
        m = X_B.shape[0]
        Z = xp.asarray(X_B @ self.W) + self.b  # (m, K)
        D, loss = residual(xp, Z, Y_B, link)
        g_b = D.mean(axis=0)  # (K,)
        G = xp.asfortranarray(xp.asarray(self.ns.transposed_product(X_B, D)))  # (V, K) column-major as W
        G *= np.float32(1.0 / m)  # after the sum, as the kernels (the first AdaGrad steps amplify rounding)
        scale = self.lrate * tau  # (K,)
        self.update(G, scale)
        if self.adagrad:
            self.Sb += g_b * g_b
            self.b = self.b - xp.where(self.Sb > 0, scale * g_b / self._divide(self.Sb), np.float32(0.0))
        else:
            self.b = self.b - scale * g_b
        return loss


def minibatches(ns, X, Y, order: np.ndarray, batch: int):
    """(X_B, Y_B) of one pass over the rows ``order`` of X (n × V device CSR float32) and Y (n × K device
    float32 0/1), cut into contiguous minibatches of ``batch``: the pass's rows are gathered once, and
    each minibatch is then a slice of them (no copy)."""
    n, V = X.shape
    order = ns.asarray(order)
    X_pass, Y_pass = ns.rows(X, order), Y[order]
    sorted_rows = canonical(X_pass)
    indptr = ns.to_host(X_pass.indptr).astype(np.int64)
    for start in range(0, n, batch):
        stop = min(n, start + batch)
        a, z = int(indptr[start]), int(indptr[stop])
        yield (ns.csr_from(X_pass.data[a:z], X_pass.indices[a:z], X_pass.indptr[start:stop + 1] - a,
                           (stop - start, V), sorted_rows), Y_pass[start:stop])


def one_pass(training: DenseTraining, X, Y, order: np.ndarray, batch: int, link: str):
    """The steps of one pass (``minibatches``): (Σ loss, the first minibatch's loss), device scalars."""
    loss = first = None
    for X_B, Y_B in minibatches(training.ns, X, Y, order, batch):
        batch_loss = training.step(X_B, Y_B, link)
        loss, first = (batch_loss, batch_loss) if loss is None else (loss + batch_loss, first)
    return loss, first


def fit_on_device(device, estimator, X, Y, task: str, arguments: dict) -> ArrayModel | None:
    """The kind's ``fit_on_device`` (``ModelKind``): ``estimator.fit(X, Y, **arguments)`` on ``device`` (an
    ``mlnb.models.array.fitting.ArrayDevice``), an ``ArrayModel``; None where these passes do not fit it
    (``takes``: the CPU fits it). ``task`` is the estimator's own."""
    if not takes(estimator, arguments):
        return None
    ns = device.ns
    xp = ns.xp
    link = LINKS[estimator.task]
    X = as_csr_float32(X)
    Y = (as_one_hot(Y, X.shape[0]) if link == "softmax" else as_label_matrix(Y, X.shape[0])).astype(np.int8)
    n, V = X.shape
    K = Y.shape[1]
    for name in ("batch_size", "npasses"):
        value = getattr(estimator, name)
        if not (isinstance(value, (int, np.integer)) and value >= 1):
            raise MlnbError(f"{name} must be an integer >= 1, got {value!r}")
    N = np.bincount(Y.indices, minlength=K).astype(np.float64)
    coef_init, intercept_init = arguments.get("coef_init"), arguments.get("intercept_init")
    b0 = prior_log_odds(N, n, link) if intercept_init is None else intercept_init
    training = DenseTraining(ns, estimator, V, K, coef_init, b0)
    if training.W.shape != (V, K) or training.b.shape != (K,):
        raise MlnbError(f"coef_init must be ({V}, {K}) and intercept_init ({K},); got {tuple(training.W.shape)} "
                        f"and {tuple(training.b.shape)}")
    X_device = ns.csr(X, np.float32)
    Y_device = ns.asarray(Y.toarray(), dtype=np.float32)  # (n, K) dense 0/1: minibatch slices are views
    rng = np.random.default_rng(estimator.random_state)
    batch = min(estimator.batch_size, n)
    units = K if link == "sigmoid" else 1
    history, reference, start_loss = [], None, None
    for epoch in range(1, estimator.npasses + 1):
        started = time.perf_counter()
        order = rng.permutation(n) if estimator.shuffle else np.arange(n)
        loss, first = one_pass(training, X_device, Y_device, order, batch, link)
        if start_loss is None:  # the loss of the starting W and b, before any update
            start_loss = float(first) / (min(batch, n) * units)
        loss = float(loss)
        finite = bool(ns.to_host(xp.isfinite(training.W).all())) and bool(ns.to_host(xp.isfinite(training.b).all()))
        ns.synchronize()
        seconds = time.perf_counter() - started
        if reference is None:
            reference = max(prior_loss(N, n, link), start_loss)
        if not finite:
            raise MlnbError(f"the weights overflowed in pass {epoch}: {lrate_too_large(estimator.lrate, X)}")
        if not loss / (n * units) <= DIVERGENCE_FACTOR * reference:
            raise MlnbError(f"training diverged in pass {epoch}: mean training loss {loss / (n * units):.3g}, more "
                            f"than {DIVERGENCE_FACTOR:g} × the {reference:.3g} of the all-prior (or starting) model; "
                            f"{lrate_too_large(estimator.lrate, X)}")
        record = {"pass": epoch, "train_loss": loss / (n * units), "seconds": seconds,
                  "docs_per_second": n / seconds, "gflops": 4.0 * X.nnz * K / seconds / 1e9}
        history.append(record)
        progress.log(format_pass(record, estimator.npasses) + f" ({ns.name})")
    untrainable = np.flatnonzero((N == 0) | (N == n))  # still fitted, but listed (as the CPU estimator lists them)
    model = None

    def finish():  # the CPU estimator's fitted attributes, from the device's W and b
        estimator.weights_, estimator.bias_ = model.weights_, model.bias_
        estimator.n_features_in_, estimator.history_ = V, history
        estimator.untrainable_categories_ = untrainable

    model = ArrayModel(device, estimator, training.W, ns.to_host(training.b), False, False, untrainable, finish)
    return model
