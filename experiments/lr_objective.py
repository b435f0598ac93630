"""Does minibatch LR minimise its documented objective? Distance to the exact optimum, per pass.

    python experiments/lr_objective.py                       # synthetic RCV1-shaped data, both tasks
    python experiments/lr_objective.py --data rcv1subset1    # ../shared/data's rcv1subset1 (the training half)

The documented objective (``mlnb/models/logistic/estimator.py``), over the training documents:

    F(W, b) = (1/n) Σ_i loss_i(W, b) + (l2/2)·‖W‖² + l1·‖W‖₁

(multilabel: loss_i = Σ_k softplus(z_ik) − y_ik·z_ik; multiclass: logsumexp(z_i) − z_i·y_i). Its exact
minimiser comes from ``solver = "lbfgs"`` at a tight tolerance (checked against scikit-learn's
LogisticRegression at C = 1/(n·l2) in tests/models/logistic/test_lbfgs.py). The minibatch engine
(AdaGrad, exact lazy regularisation) is then run pass after pass, and after each pass this prints

    gap   = (F(W_t) − F*) / F*             the relative excess objective
    dist  = ‖W_t − W*‖ / ‖W*‖              the relative distance of the weights

for the multilabel task at batch_size 1000 and the multiclass (softmax) task at batch_size 100, each
with a constant step (texp = vexp = ½, the default) and with a decaying one (texp = 1, so
α = lrate·t^(−½)/√S). The issue's target: gap ≤ 1e-4 and dist ≤ 0.02 after enough passes.

    python experiments/lr_objective.py --solvers svrg        # solver = "svrg" at the same batch sizes

With ``--solvers svrg`` it fits ``solver = "svrg"`` (variance-reduced minibatch steps, ``mlnb/models/logistic/svrg.py``)
at the same batch size and prints, per outer iteration, the gap and the passes over the data so far (one
full pass and svrg_inner_passes minibatch passes each), beside the passes L-BFGS took to the same gap.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp

from pathlib import Path

from mlnb.data.svmlight import load_svmlight_dataset
from mlnb.data.synthetic import make_rcv1_like

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "rcv1subset"
from mlnb.models.logistic import lbfgs
from mlnb.models.logistic import LogisticRegression


def objective(X, Y, W, b, link: str, l1: float, l2: float) -> float:
    part = lbfgs.sum_in_blocks(X, Y, lbfgs.loss_and_gradient, W.astype(np.float64), b.astype(np.float64), link)
    return float(part.loss.sum() / X.shape[0] + 0.5 * l2 * np.sum(W.astype(np.float64) ** 2)
                 + l1 * np.abs(W).sum())


def multiclass_labels(Y: sp.csr_matrix, rng) -> sp.csr_matrix:
    """One class per document: its first category (documents without one dropped by the caller)."""
    Y = sp.csr_matrix(Y)
    first = np.array([Y.indices[Y.indptr[i]] if Y.indptr[i + 1] > Y.indptr[i] else -1 for i in range(Y.shape[0])])
    return first


def study(X, Y, link: str, batch: int, l1: float, l2: float, passes: int, lrate: float, texp: float, seed: int):
    n, V = X.shape
    K = Y.shape[1]
    task = "multilabel" if link == "sigmoid" else "multiclass"
    reference = LogisticRegression(solver="lbfgs", task=task, l1=l1, l2=l2, tol=1e-9, max_iter=2000).fit(X, Y)
    W_star, b_star = reference.weights_.astype(np.float64), reference.bias_.astype(np.float64)
    F_star = objective(X, Y, W_star, b_star, link, l1, l2)
    model = LogisticRegression(task=task, batch_size=batch, l1=l1, l2=l2, lrate=lrate, texp=texp, npasses=1,
                               random_state=seed)
    rows = []
    started = time.perf_counter()
    for p in range(1, passes + 1):
        model.partial_fit(X, Y) if p > 1 else model.fit(X, Y)
        F = objective(X, Y, model.weights_, model.bias_, link, l1, l2)
        gap = (F - F_star) / F_star
        dist = np.linalg.norm(model.weights_ - W_star) / np.linalg.norm(W_star)
        rows.append((p, gap, dist))
        if p in (1, 2, 5, 10, 20, 50, 100, 200, 400) or p == passes:
            print(f"  {task:10s} batch {batch:5d} texp {texp:4.2f}  pass {p:4d}: gap {gap:9.2e}  dist {dist:7.4f}"
                  f"  ({time.perf_counter() - started:.0f} s)", flush=True)
    return F_star, rows


def svrg_study(X, Y, link: str, batch: int, l1: float, l2: float, iterations: int, seed: int) -> None:
    task = "multilabel" if link == "sigmoid" else "multiclass"
    reference = LogisticRegression(solver="lbfgs", task=task, l1=l1, l2=l2, tol=1e-9, max_iter=3000).fit(X, Y)
    W_star = reference.weights_.astype(np.float64)
    # both solvers' histories hold F over the categories they fit (not those without a positive or a negative
    # document, fixed at W = 0 and their prior): the same sum, so F* is L-BFGS's last
    F_star = reference.history_[-1]["objective"]
    to_target = next(((h["passes"], h["seconds"]) for h in reference.history_
                      if (h["objective"] - F_star) / F_star <= 1e-4), (None, None))
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_iter = iterations, tol never reached: a ConvergenceWarning
        model = LogisticRegression(solver="svrg", task=task, batch_size=batch, l1=l1, l2=l2, max_iter=iterations,
                                   tol=1e-12, random_state=seed).fit(X, Y)
    seconds = time.perf_counter() - started
    for record in model.history_:
        gap = (record["objective"] - F_star) / F_star
        if record["iteration"] in (1, 2, 4, 6, 8, 10, 15, 20, 30, 40, 50) or record is model.history_[-1]:
            print(f"  {task:10s} batch {batch:5d} svrg  iteration {record['iteration']:3d}: gap {gap:9.2e}  "
                  f"passes {record['passes']:4d}  step {record['step']:g}", flush=True)
    hit = next(((h["passes"], h["seconds"]) for h in model.history_ if (h["objective"] - F_star) / F_star <= 1e-4),
               (None, None))
    dist = np.linalg.norm(model.weights_ - W_star) / np.linalg.norm(W_star)

    def when(found):
        return "not reached" if found[0] is None else f"{found[0]} passes, {found[1]:.1f} s"

    print(f"  to gap 1e-4: svrg {when(hit)}; L-BFGS {when(to_target)}; svrg's final dist {dist:.4f} "
          f"({seconds:.0f} s in all)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="synthetic", choices=["synthetic", "rcv1subset1", "rcv1subset2"],
                        help="synthetic RCV1-shaped data, or an RCV1-v2 subset of ../shared/data (its training half)")
    parser.add_argument("--documents", type=int, default=20_000)
    parser.add_argument("--features", type=int, default=5_000)
    parser.add_argument("--categories", type=int, default=20)
    parser.add_argument("--passes", type=int, default=100)
    parser.add_argument("--l2", type=float, default=1e-4)
    parser.add_argument("--l1", type=float, default=0.0)
    parser.add_argument("--lrate", type=float, default=0.3)
    parser.add_argument("--texp", type=float, nargs="*", default=[0.5, 1.0])
    parser.add_argument("--tasks", nargs="*", default=["multilabel", "multiclass"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--solvers", nargs="*", default=["minibatch"], choices=["minibatch", "svrg"])
    parser.add_argument("--iterations", type=int, default=30, help="svrg: outer iterations")
    args = parser.parse_args()
    if args.data == "synthetic":
        data = make_rcv1_like(n_documents=args.documents, n_features=args.features, n_categories=args.categories,
                              test_fraction=0.2, seed=args.seed)
    else:
        path = SHARED / f"{args.data}.svm.gz"
        if not path.exists():
            raise SystemExit(f"{path} is not there: --data {args.data} needs ../shared/data beside the repository")
        data = load_svmlight_dataset(path, n_features=47_236, seed=args.seed)
    X, Y = data.X_train, data.Y_train
    print(f"{X.shape[0]:,} documents, {X.shape[1]:,} words, {Y.shape[1]} categories; l2 {args.l2:g} l1 {args.l1:g}")
    for task in args.tasks:
        if task == "multilabel":
            Xt, Yt, link, batch = X, Y, "sigmoid", 1000
        else:
            first = multiclass_labels(Y, None)
            keep = first >= 0
            classes, labels = np.unique(first[keep], return_inverse=True)
            Xt, link, batch = X[keep], "softmax", 100
            Yt = sp.csr_matrix((np.ones(labels.size, np.int8), (np.arange(labels.size), labels)),
                               shape=(labels.size, classes.size))
        if "svrg" in args.solvers:
            svrg_study(Xt, Yt, link, batch, args.l1, args.l2, args.iterations, args.seed)
        if "minibatch" in args.solvers:
            for texp in args.texp:
                study(Xt, Yt, link, batch, args.l1, args.l2, args.passes, args.lrate, texp, args.seed)


if __name__ == "__main__":
    main()
