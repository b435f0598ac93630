"""Benchmark: time to the same macro AUC — mlnb's all-categories LR, scikit-learn one-vs-rest SGD and
Vowpal Wabbit, in one run.

    python experiments/bench_lr.py                    # 250k synthetic docs (200k train) + the RCV1 subsets
    python experiments/bench_lr.py --scale 0.1        # a tenth of the synthetic set: a quick run
    python experiments/bench_lr.py --documents 976580 # 781,264 training documents (RCV1 scale)
    pip install vowpalwabbit                          # or: pip install -e .[bench]; without it VW is skipped

Each contender is trained at several settings, each setting timed as the minimum over ``--repeats``
runs, and scored on the held-out part by its macro AUC (the mean over categories with positive and
negative test documents of scikit-learn's roc_auc_score of the decision scores):

    mlnb         LogisticRegression(npasses=P).fit(X, Y), P in --mlnb-passes; scores decision_function
    sklearn SGD  one SGDClassifier(loss="log_loss", alpha=a) per category, P passes of partial_fit
                 (= fit with max_iter=P, tol=None), a in --sgd-alphas; scores X·coef + intercept.
                 The time after p passes is the sum over categories of their first p passes (one
                 core, as OneVsRestClassifier with n_jobs=1; mlnb uses every core).
    part of a pass  mlnb and sklearn SGD are also trained by one pass over the first f·n training
                 documents, f in --fractions: time to quality counts documents as well as passes, so
                 a contender that learns from fewer documents reaches X sooner. The training set is
                 put in one seeded random order first, so the first f·n documents are a random
                 sample and the same sample for both. (VW is timed by whole passes only: X is its
                 own best, reached at its largest number of passes.)
    VW           vowpalwabbit 9 (optional): --multilabel_oaa K --loss_function logistic --probabilities
                 -b B --holdout_off --ring_size (> test documents), trained from its cache
                 (-c, --passes P, P in --vw-passes) by its default learner (adaptive, normalised,
                 invariant SGD); parse + cache time shown apart (first run minus a run from the cache).
    VW L-BFGS    the same with --bfgs --l2 1e-6 --predict_only_model, P in --bfgs-passes (without --l2 it
                 stops after a few passes near chance).
                 VW's scores: --probabilities gives σ(score) per category (float32); the scores
                 used are log(p / (1 − p)) in float64, and the share of p saturated at 0 or 1 is
                 printed (a saturated p ties with its equals, as its score cannot be recovered).

X = the best macro AUC of the weakest contender (the lowest of the contenders' best AUCs), so every
contender reaches it; the time to X is its fastest setting reaching AUC ≥ X. Printed: each setting,
then per contender its best AUC and time to X, and mlnb's ratios. Targets (issue 14): mlnb ≥ 30×
scikit-learn and ≥ 10× VW in time to X, and a higher best AUC than both. The machine is shared: the
load average is printed beside every timing. Results go to results/bench/lr-<time>.csv.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import roc_auc_score

from mlnb.data.svmlight import load_svmlight_dataset
from mlnb.data.synthetic import make_rcv1_like
from mlnb.models import LogisticRegression

RCV1_SUBSETS = Path(__file__).resolve().parents[2] / "shared" / "data" / "rcv1subset"
TARGETS = {"sklearn SGD": 30.0, "VW": 10.0, "VW L-BFGS": 10.0}


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def macro_auc(Y_test: sp.csr_matrix, scores: np.ndarray) -> float:
    Y = Y_test.toarray()
    positives = Y.sum(axis=0)
    defined = np.flatnonzero((positives > 0) & (positives < Y.shape[0]))
    return float(np.mean([roc_auc_score(Y[:, k], scores[:, k]) for k in defined]))


def min_seconds(run, repeats: int):
    best, result = np.inf, None
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


# -- the contenders: each yields rows (setting, seconds, macro AUC) -----------------------------------

def mlnb_rows(data, passes, fractions, repeats):
    for f in fractions:
        r = round(f * data.X_train.shape[0])
        X_part, Y_part = data.X_train[:r], data.Y_train[:r]  # sliced once, outside the timing
        seconds, model = min_seconds(lambda: LogisticRegression(npasses=1).fit(X_part, Y_part),
                                     repeats)
        auc = macro_auc(data.Y_test, model.decision_function(data.X_test))
        yield {"contender": "mlnb", "setting": f"1 pass on {f:g} of train", "seconds": seconds, "macro_auc": auc}
    for P in passes:
        seconds, model = min_seconds(lambda P=P: LogisticRegression(npasses=P).fit(data.X_train, data.Y_train),
                                     repeats)
        auc = macro_auc(data.Y_test, model.decision_function(data.X_test))
        yield {"contender": "mlnb", "setting": f"passes={P}", "seconds": seconds, "macro_auc": auc}


def sgd_rows(data, passes, fractions, alphas, repeats):
    X, X_test = data.X_train, data.X_test
    Y = data.Y_train.toarray().astype(np.int8)
    K, V = Y.shape[1], X.shape[1]
    for alpha in alphas:
        for f in fractions:
            r = round(f * X.shape[0])
            X_part, Y_part = X[:r], Y[:r]  # sliced once, outside the timing
            best, W, b = np.inf, np.zeros((V, K)), np.zeros(K)
            for _ in range(repeats):
                elapsed = 0.0
                for k in range(K):
                    model = SGDClassifier(loss="log_loss", alpha=alpha, random_state=0)
                    started = time.perf_counter()
                    model.partial_fit(X_part, Y_part[:, k], classes=[0, 1])
                    elapsed += time.perf_counter() - started
                    W[:, k], b[k] = model.coef_[0], model.intercept_[0]
                best = min(best, elapsed)
            auc = macro_auc(data.Y_test, np.asarray(X_test @ W) + b)
            yield {"contender": "sklearn SGD", "setting": f"alpha={alpha:g} 1 pass on {f:g} of train",
                   "seconds": best, "macro_auc": auc}
        best = np.full(passes, np.inf)  # seconds to the end of pass p, summed over categories
        for _ in range(repeats):
            elapsed = np.zeros(passes)
            W, b = np.zeros((passes, V, K)), np.zeros((passes, K))  # the weights after each pass
            for k in range(K):
                model = SGDClassifier(loss="log_loss", alpha=alpha, random_state=0)
                for p in range(passes):
                    started = time.perf_counter()
                    model.partial_fit(X, Y[:, k], classes=[0, 1])
                    elapsed[p:] += time.perf_counter() - started
                    W[p, :, k], b[p, k] = model.coef_[0], model.intercept_[0]
            best = np.minimum(best, elapsed)
        for p in range(passes):
            auc = macro_auc(data.Y_test, np.asarray(X_test @ W[p]) + b[p])
            yield {"contender": "sklearn SGD", "setting": f"alpha={alpha:g} passes={p + 1}", "seconds": best[p],
                   "macro_auc": auc}


class VowpalWabbit:
    """VW trained from text files it parses (and caches), as its command line would be run."""

    def __init__(self, data, bits: int, folder: Path):
        import vowpalwabbit  # the optional benchmark extra

        self.vw = vowpalwabbit
        self.K = data.Y_train.shape[1]
        self.folder = folder
        self.train = folder / "train.vw"
        self.cache = folder / "train.cache"
        self._write(data.X_train, data.Y_train, self.train)
        test = folder / "test.vw"
        self._write(data.X_test, data.Y_test, test)
        self.test_lines = ["|" + line.split("|", 1)[1] for line in test.read_text().splitlines()]
        self.common = (f"--multilabel_oaa {self.K} --loss_function logistic --probabilities -b {bits} "
                       f"--holdout_off --ring_size {len(self.test_lines) + 1} --quiet")

    @staticmethod
    def _write(X, Y, path: Path):
        """LIBSVM multilabel text (scikit-learn's writer), then VW's 'labels | features' lines."""
        X = X.astype(np.float64)
        X.data = np.round(X.data, 6)  # as the RCV1 files have them: VW parses what a user's file holds
        raw = path.with_suffix(".svm")
        dump_svmlight_file(X, Y.astype(np.int64), str(raw), zero_based=True, multilabel=True)
        with raw.open() as lines, path.open("w") as out:
            for line in lines:
                out.write(line.replace(" ", " | ", 1))
        raw.unlink()

    def fit(self, passes: int, extra: str = "", make_cache: bool = False) -> float:
        """Seconds to train (workspace and run over the data; the model is written after, untimed)."""
        cache = f"-c --cache_file {self.cache}" + (" -k" if make_cache else "")
        started = time.perf_counter()
        workspace = self.vw.Workspace(f"-d {self.train} {cache} --passes {passes} {self.common} {extra} "
                                      f"-f {self.folder / 'model'}")
        workspace.run_parser()
        seconds = time.perf_counter() - started
        workspace.finish()
        return seconds

    def scores(self, extra: str = "") -> tuple[np.ndarray, float]:
        """(log(p / (1 − p)) per test document and category (n × K), share of p saturated at 0 or 1), from
        the last model trained, read back in a fresh workspace (predicting in the training one after its
        run gives stale values)."""
        # a ring of examples smaller than the test set reuses examples whose probabilities are not cleared
        workspace = self.vw.Workspace(f"-i {self.folder / 'model'} -t --probabilities {extra} "
                                      f"--ring_size {len(self.test_lines) + 1} --quiet")
        p = np.array([workspace.predict(line) for line in self.test_lines], dtype=np.float32).astype(np.float64)
        assert p.shape == (len(self.test_lines), self.K), p.shape
        workspace.finish()
        saturated = float(np.mean((p <= 0) | (p >= 1)))
        with np.errstate(divide="ignore"):
            scores = np.log(p) - np.log1p(-p)
        return np.nan_to_num(scores, posinf=1e300, neginf=-1e300), saturated  # saturated p: tied, at the ends


def vw_rows(data, vw_passes, bfgs_passes, bfgs_l2, repeats, bits, parse_times):
    folder = Path(tempfile.mkdtemp(prefix="mlnb-bench-vw-"))
    try:
        vw = VowpalWabbit(data, bits, folder)
        # parse + cache: a first pass that writes the cache, minus a pass from it
        first = vw.fit(1, make_cache=True)
        from_cache = min(vw.fit(1) for _ in range(repeats))
        parse_times.append({"data": data.name, "first pass with parsing": first, "pass from cache": from_cache,
                            "parse + cache": first - from_cache})
        print(f"  VW parse + cache: {first - from_cache:.2f} s (first pass {first:.2f} s, a pass from the cache "
              f"{from_cache:.2f} s; {load()})", flush=True)
        bfgs = f"--bfgs --l2 {bfgs_l2:g} --predict_only_model"
        for contender, passes, extra in (("VW", vw_passes, ""), ("VW L-BFGS", bfgs_passes, bfgs)):
            for P in passes:
                try:
                    seconds = min(vw.fit(P, extra) for _ in range(repeats))
                except RuntimeError as error:
                    print(f"  {contender} passes={P}: failed ({error})", flush=True)
                    break
                scores, saturated = vw.scores("--predict_only_model" if "bfgs" in extra else "")
                yield {"contender": contender, "setting": f"passes={P}", "seconds": seconds,
                       "macro_auc": macro_auc(data.Y_test, scores), "saturated": saturated}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- one data set ----------------------------------------------------------------------------------

def split(dataset, name: str) -> SimpleNamespace:
    """The train and test parts, sliced once (a Dataset slices on every access); the training
    documents in one seeded random order, so that a prefix of them is a random sample."""
    order = np.random.default_rng(0).permutation(dataset.X_train.shape[0])
    return SimpleNamespace(name=name, X_train=dataset.X_train[order], Y_train=dataset.Y_train[order],
                           X_test=dataset.X_test, Y_test=dataset.Y_test)


def bench(data, args, parse_times) -> pd.DataFrame:
    X = data.X_train
    print(f"\n{data.name}: {X.shape[0]:,} train / {data.X_test.shape[0]:,} test documents, {X.shape[1]:,} "
          f"features, {data.Y_train.shape[1]} categories, {X.nnz:,} training non-zeros", flush=True)
    contenders = [mlnb_rows(data, args.mlnb_passes, args.fractions, args.repeats)]
    if not args.skip_sklearn:
        contenders.append(sgd_rows(data, args.sgd_passes, args.fractions, args.sgd_alphas, args.repeats))
    if args.skip_vw:
        print("  VW: skipped (--skip-vw)")
    else:
        try:
            import vowpalwabbit  # noqa: F401
            contenders.append(vw_rows(data, args.vw_passes, args.bfgs_passes, args.bfgs_l2, args.repeats, args.bits,
                                      parse_times))
        except ImportError:
            print("  VW: skipped, the vowpalwabbit package is not installed (pip install vowpalwabbit, or the "
                  "'bench' extra: pip install -e .[bench])")
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # categories without training positives, in every library
        for contender in contenders:
            for row in contender:
                rows.append({"data": data.name, **row})
                extra = f", {row['saturated']:.1%} of p saturated" if "saturated" in row else ""
                print(f"  {row['contender']:12s} {row['setting']:34s} {row['seconds']:9.3f} s   macro AUC "
                      f"{row['macro_auc']:.4f}{extra}   ({load()})", flush=True)
    table = pd.DataFrame(rows)
    best = table.groupby("contender")["macro_auc"].max()
    if args.target_auc is None:
        X_auc = best.min()
        print(f"  X = {X_auc:.4f} (the best AUC of the weakest contender, {best.idxmin()})")
    else:
        X_auc = args.target_auc
        print(f"  X = {X_auc:.4f} (given: --target-auc)")
    reached = table[table["macro_auc"] >= X_auc - 1e-12]
    fastest = reached.loc[reached.groupby("contender")["seconds"].idxmin()].set_index("contender")
    mlnb_seconds = fastest["seconds"].get("mlnb", np.nan)
    for contender in best.index:
        if contender not in fastest.index:
            print(f"  {contender:12s} best AUC {best[contender]:.4f}; never reached {X_auc:.4f}")
            continue
        line = (f"  {contender:12s} best AUC {best[contender]:.4f}; time to AUC ≥ {X_auc:.4f}: "
                f"{fastest.loc[contender, 'seconds']:8.2f} s ({fastest.loc[contender, 'setting']})")
        if contender != "mlnb":
            ratio = fastest.loc[contender, "seconds"] / mlnb_seconds
            target = TARGETS.get(contender, np.nan)
            verdict = "met" if ratio >= target else "NOT met"
            higher = "higher" if best["mlnb"] > best[contender] else "NOT higher"
            line += (f"; mlnb {ratio:.1f}× faster (target ≥ {target:g}×: {verdict}), mlnb's best AUC {higher} "
                     f"({best['mlnb'] - best[contender]:+.4f})")
        print(line, flush=True)
    table["X"] = X_auc
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="share of the 250,000 synthetic documents")
    parser.add_argument("--documents", type=int, help="synthetic documents, 80%% train (instead of --scale)")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs per setting (minimum taken)")
    parser.add_argument("--mlnb-passes", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--fractions", type=float, nargs="*", default=[1 / 32, 1 / 16, 1 / 8, 3 / 16, 1 / 4, 3 / 8, 1 / 2,
                                                                      3 / 4],
                        help="also one pass over this share of the training documents (mlnb and sklearn SGD; the "
                             "same shares for both, so that time to X is read off the same grid)")
    parser.add_argument("--sgd-passes", type=int, default=3, help="passes of each scikit-learn SGD run")
    parser.add_argument("--sgd-alphas", type=float, nargs="+", default=[1e-6, 1e-5, 1e-4])
    parser.add_argument("--vw-passes", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--bfgs-passes", type=int, nargs="*", default=[15, 30])
    parser.add_argument("--bfgs-l2", type=float, default=1e-6,
                        help="VW L-BFGS's --l2: without it L-BFGS stops after a few passes near chance (AUC < 0.52 "
                             "on rcv1subset1 at 10 and 30 passes; 0.942 at 30 passes with 1e-6, 1e-4 or 1e-2)")
    parser.add_argument("--bits", type=int, default=23, help="VW's -b (≥ 23 for 103 categories)")
    parser.add_argument("--target-auc", type=float,
                        help="X given instead of measured, e.g. VW's best from an earlier run at the same scale, so "
                             "that a run with --skip-vw still reads time to the same X")
    parser.add_argument("--skip-sklearn", action="store_true")
    parser.add_argument("--skip-vw", action="store_true")
    parser.add_argument("--skip-subsets", action="store_true")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--out", default="results/bench")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; {load()}")
    warm = make_rcv1_like(n_documents=500, n_features=1000, n_categories=5, seed=1)
    compile_seconds, _ = min_seconds(lambda: LogisticRegression(npasses=1).fit(warm.X_train, warm.Y_train), 1)
    print(f"numba compile / cache load: {compile_seconds:.2f} s (excluded below)")
    tables, parse_times = [], []
    if not args.skip_synthetic:
        n = args.documents or round(250_000 * args.scale)
        synthetic = make_rcv1_like(n_documents=n, n_features=47_236, n_categories=103, test_fraction=0.2, seed=0)
        tables.append(bench(split(synthetic, f"synthetic {n:,}"), args, parse_times))
        del synthetic
    subsets = sorted(RCV1_SUBSETS.glob("rcv1subset*.svm.gz"))
    if not subsets:
        print(f"\nRCV1 subsets: skipped, none found in {RCV1_SUBSETS}")
    for path in [] if args.skip_subsets else subsets:
        subset = load_svmlight_dataset(path, n_features=47_236, seed=0)
        tables.append(bench(split(subset, path.name.split(".")[0]), args, parse_times))
    table = pd.concat(tables, ignore_index=True)
    print("\n" + table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if parse_times:
        print("\nVW parse + cache time (not in VW's times above):\n"
              + pd.DataFrame(parse_times).to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"lr-{time.strftime('%Y%m%d-%H%M%S')}.csv"
    table.to_csv(path, index=False)
    print(f"\nwritten: {path}")


if __name__ == "__main__":
    main()
