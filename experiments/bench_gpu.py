"""The array engine on a GPU beside the CPU engine on every core and a naive GPU reference, in one run.

    python experiments/bench_gpu.py                        # on a machine with a GPU and CuPy (< 3 min on an H100)
    python experiments/bench_gpu.py --device cpu-numpy --documents 20000 --features 5000 --train 6000 --test 2000

Data: one RCV1-shaped synthetic corpus (``make_rcv1_like``: by default 781,265 documents, 47,236 words,
103 categories, ~77 words per document), split in halves by the seeded hash of the quickstart. The
stages run on its first ``--train`` training and ``--test`` test documents (200k and 50k, the
issue's shape), with their matrices already on the device; the whole study on all of it.

Stages (seconds: the minimum of ``--repeats`` runs, the device synchronised; every contender
warmed up first on a small slice, so that numba's and CuPy's compilation is not timed):

    nb_fit     counts Fᵀ = X̂ᵀ·Y and counts → W, b (multinomial on presence, the quickstart's NB)
    scoring    Z = X̂·W + b of the test documents
    lr_pass    one pass of minibatch AdaGrad (minibatches of 1,000; the CPU engine's schedule and
               L2 flow in the array engine; plain dense AdaGrad over all of W in the naive one)
    auc        every category's exact AUC of the test scores
    roc_lift   every category's ROC on a 101-point grid and its lift
    study      the quickstart (configs/quickstart.toml, eval.bootstrap = 0) on the whole corpus:
               `engine.device = "cpu"` against the array engine (wall seconds of ``run_models``,
               with each model's fit, score and evaluation seconds)

Contenders: ``array`` (mlnb.models.array on --device), ``naive`` (the same library, written the
plain way: sparse products, dense AdaGrad over all of W, a sort per category), ``cpu`` (mlnb's
numba engine on every core). ``--device cpu-numpy`` runs the array and naive contenders with numpy
(to check the script here; those timings say nothing about a GPU). Correctness is printed beside
the timings: max |ΔW| of NB against the CPU engine, whether the AUCs are bit-equal, the LR macro-AUC
difference, and each study's macro AUC.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
import warnings

import numpy as np
import scipy.sparse as sp

from mlnb.config import load_config
from mlnb.data.synthetic import make_rcv1_like
from mlnb.models.logistic import array as array_lr
from mlnb.models.naive_bayes import array as array_nb
from mlnb.metrics import array_ranking
from mlnb.models.array import scoring as array_scoring
from mlnb.models.array.device import namespace
from mlnb.metrics.ranking import fpr_grid, rank_curve, roc_auc_per_category, roc_lift, roc_on_grid
from mlnb.models._linear import prior_log_odds
from mlnb.models.logistic import LogisticRegression
from mlnb.models.naive_bayes import NaiveBayes
from mlnb.study import run_models

DEVICES = {"gpu": "gpu", "cpu-numpy": "array-numpy"}
STARTED = time.perf_counter()


def log(line: str) -> None:
    print(f"[{time.perf_counter() - STARTED:6.1f} s] {line}", flush=True)


def timed(function, ns, repeats: int) -> tuple[float, object]:
    """(minimum seconds of ``repeats`` calls, the last result), the device synchronised after each."""
    best, result = float("inf"), None
    for _ in range(repeats):
        ns.synchronize()
        started = time.perf_counter()
        result = function()
        ns.synchronize()
        best = min(best, time.perf_counter() - started)
    return best, result


# -- the naive reference: the same library, written the plain way ------------------------------
def naive_nb(ns, X, Y, alpha=0.5):
    """F = Yᵀ·X̂ (sparse × sparse, float32), then W = log θ − log θ̄ from five dense (K × V) arrays."""
    xp = ns.xp
    Xb = ns.xsp.csr_matrix(((X.data > 0).astype(np.float32), X.indices, X.indptr), shape=X.shape)
    F = (Y.T @ Xb).toarray()  # (K, V)
    t = xp.asarray(Xb.sum(axis=0)).ravel()
    V = X.shape[1]
    F_bar = t - F
    log_theta = xp.log(F + alpha) - xp.log(F.sum(axis=1, keepdims=True) + alpha * V)
    log_theta_bar = xp.log(F_bar + alpha) - xp.log(F_bar.sum(axis=1, keepdims=True) + alpha * V)
    N = xp.asarray(Y.sum(axis=0)).ravel()
    b = xp.log(N) - xp.log(X.shape[0] - N)
    return xp.ascontiguousarray((log_theta - log_theta_bar).T), b


def naive_lr_pass(ns, X, Y, order, batch, W, b, lrate=0.3, l2=1e-4, eps=1e-8):
    """Minibatch AdaGrad, dense over all of W: G = X_Bᵀ·(σ(Z) − Y_B)/m + l2·W, S += G², W −= lrate·G/√S."""
    xp = ns.xp
    S, Sb = xp.zeros_like(W), xp.zeros_like(b)
    order = ns.asarray(order)
    Xp, Yp = X[order], Y[order]
    for start in range(0, X.shape[0], batch):
        X_B, Y_B = Xp[start:start + batch], Yp[start:start + batch]
        P = 1 / (1 + xp.exp(-(xp.asarray(X_B @ W) + b)))
        D = P - Y_B
        G = xp.asarray(X_B.T @ D) / X_B.shape[0] + l2 * W
        S += G * G
        W -= lrate * G / (xp.sqrt(S) + eps)
        g_b = D.mean(axis=0)
        Sb += g_b * g_b
        b -= lrate * g_b / (xp.sqrt(Sb) + eps)
    return W, b


def lr_pass_parts(ns, training, X, Y, order, batch):
    """Seconds of each part of the array engine's pass, each timed alone over the pass's minibatches
    (the device synchronised around each part): the rows gathered and cut into minibatches, Z = X_B·W, the residual,
    G = X_Bᵀ·D, and the update of W and S (on copies: ``training`` is left as it was)."""
    xp = ns.xp
    V = X.shape[1]
    ns.synchronize()
    started = time.perf_counter()
    slices = list(array_lr.minibatches(ns, X, Y, order, batch))
    ns.synchronize()
    parts = {"slices": time.perf_counter() - started}

    def part(name, function):
        ns.synchronize()
        begun = time.perf_counter()
        out = [function(*item) for item in slices]
        ns.synchronize()
        parts[name] = time.perf_counter() - begun
        return out

    Z = part("X_B·W", lambda X_B, Y_B: xp.asarray(X_B @ training.W) + training.b)
    D = part("residual", lambda X_B, Y_B, z=iter(Z): array_lr.residual(xp, next(z), Y_B, "sigmoid")[0])
    G = part("X_Bᵀ·D", lambda X_B, Y_B, d=iter(D):
             xp.asfortranarray(xp.asarray(ns.transposed_product(X_B, next(d)))))
    copy = array_lr.DenseTraining(ns, LogisticRegression(), V, training.W.shape[1], ns.to_host(training.W),
                                  ns.to_host(training.b))
    scale = copy.lrate * np.float32(0.5)
    part("update", lambda X_B, Y_B, g=iter(G): copy.update(next(g), scale))
    return parts


def naive_auc(ns, Y_dense, S):
    """One sort per category, then the positives' midranks by binary search."""
    xp = ns.xp
    out = []
    for k in range(S.shape[1]):
        z = S[:, k]
        ordered = xp.sort(z)
        positives = z[Y_dense[:, k] > 0]
        P, N = positives.size, z.size - positives.size
        ranks = xp.searchsorted(ordered, positives, side="left") + xp.searchsorted(ordered, positives, side="right") + 1
        out.append((float(ranks.sum()) - P * (P + 1)) / (2.0 * P * N) if P and N else float("nan"))
    return np.array(out)


# -- the run -----------------------------------------------------------------------------------
def stages(ns, data, train: int, test: int, repeats: int, results: dict) -> None:
    xp = ns.xp
    X, Y = data.X_train[:train], data.Y_train[:train]
    X_test, Y_test = data.X_test[:test], data.Y_test[:test]
    n, V = X.shape
    K = Y.shape[1]
    log(f"stages on {n:,} training and {X_test.shape[0]:,} test documents, {V:,} words, {K} categories, "
        f"{X.nnz / n:.1f} words per document")
    Xd, Yd = ns.csr(X, np.float32), ns.csr(Y, np.float32)
    Xd_test = ns.csr(X_test, np.float32)
    Y_dense = ns.asarray(Y.toarray(), dtype=np.float32)
    Y_test_dense = ns.asarray(Y_test.toarray(), dtype=np.float32)
    table = results.setdefault("stages", {})

    # NB fit
    def array_nb_fit():
        return array_nb.fit_device_arrays(ns, NaiveBayes(binarize=True), Xd, Yd, "multilabel")

    def cpu_nb_fit():
        model = NaiveBayes(binarize=True).fit(X, Y)
        model.weights_  # noqa: B018 (W is built here)
        return model

    seconds_array, fitted = timed(array_nb_fit, ns, repeats)
    seconds_naive, _ = timed(lambda: naive_nb(ns, Xd, Yd), ns, repeats)
    seconds_cpu, cpu_nb = timed(cpu_nb_fit, ns, max(1, repeats // 2))
    delta = float(np.abs(ns.to_host(fitted.W) - cpu_nb.weights_).max())
    table["nb_fit"] = {"array": seconds_array, "naive": seconds_naive, "cpu": seconds_cpu, "max_abs_dW": delta}

    # scoring
    seconds_array, Z = timed(lambda: array_scoring.linear_scores(ns, Xd_test, fitted.W, fitted.b, True), ns, repeats)
    W_d, b_d = fitted.W, ns.asarray(fitted.b)

    def naive_scores():
        Xb = ns.xsp.csr_matrix(((Xd_test.data > 0).astype(np.float32), Xd_test.indices, Xd_test.indptr),
                               shape=Xd_test.shape)
        return xp.asarray(Xb @ W_d) + b_d

    seconds_naive, _ = timed(naive_scores, ns, repeats)
    seconds_cpu, Z_cpu = timed(lambda: cpu_nb.decision_function(X_test), ns, repeats)
    table["scoring"] = {"array": seconds_array, "naive": seconds_naive, "cpu": seconds_cpu,
                        "max_abs_dZ": float(np.abs(ns.to_host(Z) - Z_cpu).max())}

    # LR pass (a failure is printed, and the other stages still run)
    def lr_stage():
        estimator = LogisticRegression(npasses=1)
        order = np.random.default_rng(0).permutation(n)
        prior = prior_log_odds(np.asarray(Y.sum(axis=0)).ravel(), n).astype(np.float32)

        def array_pass(fused=True):
            training = array_lr.DenseTraining(ns, estimator, V, K, None, prior)
            if not fused:  # the array code of the step (on a GPU the default runs it as one fused kernel)
                training.fused = None
            array_lr.one_pass(training, Xd, Y_dense, order, 1000, "sigmoid")
            return training

        def naive_pass():
            b0 = ns.asarray(prior.copy())  # the naive pass updates b in place (on numpy, asarray is prior itself)
            return naive_lr_pass(ns, Xd, Y_dense, order, 1000, xp.zeros((V, K), dtype=np.float32), b0)

        lr_repeats = max(1, repeats // 2)
        seconds_array, training = timed(array_pass, ns, lr_repeats)
        seconds_naive, _ = timed(naive_pass, ns, lr_repeats)
        seconds_unfused, unfused = timed(lambda: array_pass(fused=False), ns, lr_repeats)
        fused_delta = float(xp.abs(training.W - unfused.W).max())
        parts = lr_pass_parts(ns, training, Xd, Y_dense, order, 1000)
        log("lr_pass parts (ms per pass): " + ", ".join(f"{name} {value * 1e3:.1f}" for name, value in parts.items()))
        cpu_lr = None
        best_cpu = float("inf")
        for _ in range(lr_repeats):
            cpu_lr = LogisticRegression(npasses=1).fit(X, Y)
            best_cpu = min(best_cpu, cpu_lr.history_[0]["seconds"])  # the pass alone, as the others
        Z_lr = array_scoring.linear_scores(ns, Xd_test, training.W, ns.to_host(training.b))
        auc_array = np.nanmean(array_ranking.auc_per_category(ns, Y_test, Z_lr))
        auc_cpu = np.nanmean(roc_auc_per_category(Y_test, cpu_lr.decision_function(X_test)))
        table["lr_pass"] = {"array": seconds_array, "naive": seconds_naive, "cpu": best_cpu,
                            "macro_auc_array": float(auc_array), "macro_auc_cpu": float(auc_cpu),
                            "unfused_ms": seconds_unfused * 1e3, "max_abs_dW_fused_unfused": fused_delta}

    try:
        lr_stage()
    except Exception:  # noqa: BLE001  (one prepared run on a lent machine: report, go on)
        log("lr_pass failed:\n" + traceback.format_exc())

    # AUC per category, ROC and lift
    seconds_array, auc = timed(lambda: array_ranking.auc_per_category(ns, Y_test, Z), ns, repeats)
    seconds_naive, _ = timed(lambda: naive_auc(ns, Y_test_dense, Z), ns, max(1, repeats // 2))
    Z_host = ns.to_host(Z)
    seconds_cpu, auc_cpu = timed(lambda: roc_auc_per_category(Y_test, Z_host), ns, repeats)
    table["auc"] = {"array": seconds_array, "naive": seconds_naive, "cpu": seconds_cpu,
                    "bit_equal": bool(np.array_equal(auc, auc_cpu, equal_nan=True))}
    grid = fpr_grid(101)
    seconds_array, tpr = timed(lambda: array_ranking.roc_lift(array_ranking.roc_on_grid(ns, Y_test, Z, grid), grid),
                               ns, max(1, repeats // 2))
    Y_test_csc = sp.csc_matrix(Y_test)

    def cpu_roc():
        rows = []
        for k in range(K):
            y = np.zeros(Z_host.shape[0], dtype=bool)
            y[Y_test_csc.indices[Y_test_csc.indptr[k]:Y_test_csc.indptr[k + 1]]] = True
            rows.append(roc_on_grid(rank_curve(y, Z_host[:, k]), grid))
        return roc_lift(np.vstack(rows), grid)

    seconds_cpu, tpr_cpu = timed(cpu_roc, ns, max(1, repeats // 2))
    table["roc_lift"] = {"array": seconds_array, "naive": None, "cpu": seconds_cpu,
                         "bit_equal": bool(np.array_equal(tpr, tpr_cpu, equal_nan=True))}
    for stage, row in table.items():
        cells = "  ".join(f"{who} {row[who] * 1e3:9.2f} ms" if row.get(who) is not None else f"{who}       —    "
                          for who in ("array", "naive", "cpu"))
        extra = ", ".join(f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}"
                          for key, value in row.items() if key not in ("array", "naive", "cpu"))
        speedup = row["cpu"] / row["array"]
        log(f"{stage:9s} {cells}   cpu/array {speedup:6.1f}x   ({extra})")


def study(device: str, data, results: dict) -> None:
    out = results.setdefault("study", {})
    log(f"the quickstart on all {data.X.shape[0]:,} documents ({data.X_train.shape[0]:,} training, "
        f"{data.X_test.shape[0]:,} test), eval.bootstrap = 0")
    for name in ("cpu", device):  # untimed, on a slice: the kernels of the study's every stage compiled or loaded
        config = load_config("configs/quickstart.toml", ["eval.bootstrap=0", f"engine.device={name}"])
        run_models(config, data.X_train[:20_000], data.Y_train[:20_000], data.X_test[:20_000], data.Y_test[:20_000],
                   data.category_names)
    log("study warmed up on 20,000 documents")
    for name in ("cpu", device):
        config = load_config("configs/quickstart.toml", ["eval.bootstrap=0", f"engine.device={name}"])
        started = time.perf_counter()
        runs = run_models(config, data.X_train, data.Y_train, data.X_test, data.Y_test, data.category_names)
        wall = time.perf_counter() - started
        out[name] = {"wall": wall, **{run.name: {"fit": run.fit_seconds, "score": run.score_seconds,
                                                 "eval": run.eval_seconds,
                                                 "macro_auc": run.evaluation.summary["macro_auc"]} for run in runs}}
        log(f"study engine.device = {name!r}: {wall:.2f} s; " + "; ".join(
            f"{run.name}: fit {run.fit_seconds:.3f} s, score {run.score_seconds:.3f} s, evaluation "
            f"{run.eval_seconds:.2f} s, macro AUC {run.evaluation.summary['macro_auc']:.6f}" for run in runs))
    log(f"study: cpu / {device} = {out['cpu']['wall'] / out[device]['wall']:.2f}x (wall)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=sorted(DEVICES), default="gpu")
    parser.add_argument("--documents", type=int, default=781_265, help="the corpus (the study uses all of it)")
    parser.add_argument("--features", type=int, default=47_236)
    parser.add_argument("--categories", type=int, default=103)
    parser.add_argument("--train", type=int, default=200_000, help="training documents of the stages")
    parser.add_argument("--test", type=int, default=50_000, help="test documents of the stages")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-study", action="store_true", help="the stages only")
    parser.add_argument("--study-after", type=float, default=100.0,
                        help="skip the study when the stages end later than this many seconds (the whole run "
                             "must stay within 3 minutes)")
    parser.add_argument("--out", default="", help="write the results as JSON here")
    options = parser.parse_args()
    warnings.simplefilter("ignore")
    device = DEVICES[options.device]
    ns = namespace(device)
    import numba

    results = {"device": options.device, "python": sys.version.split()[0], "machine": platform.machine(),
               "cores": os.cpu_count(), "numba_threads": numba.get_num_threads(), "options": vars(options)}
    if ns.on_gpu:
        properties = ns.xp.cuda.runtime.getDeviceProperties(0)
        results["gpu"] = properties["name"].decode() if isinstance(properties["name"], bytes) else properties["name"]
        results["cupy"] = ns.xp.__version__
    log(f"{results.get('gpu', 'no GPU')} ({options.device}), {results['cores']} cores, numba {results['numba_threads']} "
        f"threads, load {os.getloadavg()[0]:.2f}")
    data = make_rcv1_like(n_documents=options.documents, n_features=options.features,
                          n_categories=options.categories, seed=0)
    log(f"generated {data.X.shape[0]:,} documents")
    warm = min(2000, options.train), min(1000, options.test)
    try:
        stages(ns, data, *warm, repeats=1, results={})  # compiles numba's and CuPy's kernels, untimed
        log("warmed up")
        stages(ns, data, min(options.train, data.X_train.shape[0]), min(options.test, data.X_test.shape[0]),
               options.repeats, results)
    except Exception:  # noqa: BLE001  (one prepared run on a lent machine: report, and still run the study)
        log("the stages failed:\n" + traceback.format_exc())
    if options.no_study:
        pass
    elif time.perf_counter() - STARTED > options.study_after:
        log(f"study skipped: the stages ended after {options.study_after:.0f} s (--study-after)")
    else:
        try:
            study(device, data, results)
        except Exception:  # noqa: BLE001
            log("the study failed:\n" + traceback.format_exc())
    results["seconds"] = time.perf_counter() - STARTED
    log(f"done in {results['seconds']:.1f} s (load {os.getloadavg()[0]:.2f})")
    if options.out:
        with open(options.out, "w", encoding="utf-8") as file:
            json.dump(results, file, indent=2, default=float)


if __name__ == "__main__":
    main()
