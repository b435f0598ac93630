"""What every pass of the minibatch solver checks and reports, in memory, streamed and on a device alike
(``estimator``, ``array``): the divergence check against the all-prior model's loss, what to change after a
divergence, and the one line a pass logs."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from mlnb._kernels.csr import value_bounds
from mlnb.models._linear import prior_log_odds

#: a pass whose mean training loss exceeds this many times the loss of the all-prior model (W = 0,
#: b = the training log-odds; or of the warm start, if higher) has diverged. Healthy training stays
#: within 2×; lrate 10, far too large but still learning, reaches ~70× in its first pass; lrate 1e9
#: gives 10^7–10^9×. The loss grows about linearly with lrate, so this fires from lrate ~10^3–10^5.
DIVERGENCE_FACTOR = 1e4

#: a divergence with training feature values beyond this names their scale, not lrate alone: word counts and
#: TF-IDF stay below it, and at the default lrate 0.1 training diverged with every value 1e7 but not 1e5
LARGE_FEATURE = 1e3


def prior_loss(counts, n: int, link: str) -> float:
    """The mean training loss of W = 0 and b = the default start (the training log-odds), from the
    category counts N_k (K,) of n documents alone: multilabel Σ_k N_k·softplus(−b_k) + (n − N_k)·softplus(b_k)
    per document and category; multiclass logsumexp(b) − Σ_c N_c·b_c / n per document."""
    N = np.asarray(counts, dtype=np.float64).ravel()  # (K,)
    b = prior_log_odds(N, n, link)
    if link == "softmax":
        return float(logsumexp(b) - N @ b / n)
    return float((N @ np.logaddexp(0.0, -b) + (n - N) @ np.logaddexp(0.0, b)) / (n * N.size))


def lrate_too_large(lrate, X=None) -> str:
    """What to change after a divergence: lrate, and the features' scale when the training features X (CSR,
    if known) reach beyond ``LARGE_FEATURE``: an AdaGrad step moves each weight by about lrate, so a score
    by about lrate·|x|, and features at their bound (1e15) diverge at any usual lrate."""
    shown = lrate if np.ndim(lrate) else f"{lrate:g}"
    largest = 0.0
    if X is not None and X.nnz:
        low, high = value_bounds(X.data)
        largest = max(high, -low)
    if largest > LARGE_FEATURE:
        return (f"lrate {shown} is too large for feature values up to {largest:.3g} (a step moves a score by "
                "about lrate × |x|): rescale the features (features.transform = 'binary' or 'log_tfidf') "
                "or lower lrate")
    return f"lrate {shown} is too large for these data; lower it"


def duration(seconds: float) -> str:
    """42 s, 3 min 20 s, 2 h 05 min."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:02.0f} s"
    return f"{seconds // 3600:.0f} h {seconds % 3600 // 60:02.0f} min"


def format_pass(record: dict, last_pass: int | None, remaining_seconds: float | None = None) -> str:
    """One BIDMach-style line per pass (with the ETA of the passes still to run, from the passes' seconds
    without compiling: the seconds of a pass that compiled the kernels are given apart)."""
    heldout = f", held-out loss {record['heldout_loss']:.5f}" if "heldout_loss" in record else ""
    of = "" if last_pass is None else f"/{last_pass}"
    eta = f", ETA {duration(remaining_seconds)}" if remaining_seconds else ""
    compiling = f" (+ {record['compile_seconds']:.2f} s compiling)" if record.get("compile_seconds") else ""
    return (f"LR pass {record['pass']}{of}: train loss {record['train_loss']:.5f}{heldout}, "
            f"{record['seconds']:.2f} s{compiling}, {record['docs_per_second']:,.0f} docs/s, "
            f"{record['gflops']:.2f} GFLOP/s{eta}")
