"""Benchmark: mlnb's Naive Bayes and LR beside the extreme-classification peers omikuji and LibMultiLabel
on long-tailed label spaces (issue 45, item 5): the same split of the same corpus for every learner.

    python experiments/bench_extreme.py                          # 5k and 50k categories, and Mulan bibtex
    python experiments/bench_extreme.py --corpora 5k,bibtex --repeats 3 --markdown
    pip install omikuji libmultilabel                            # or: pip install -e .[bench]; without them
                                                                 # their rows are skipped with the reason

Corpora (``CORPORA``):

    5k       LongTailCorpus(12,000 documents, 20,000 words, 5,000 categories, chunks of 2,000, seed 0; its
             defaults otherwise: 100 words and 3 label picks a document, Zipf exponents 1.1 and 1.0):
             ``split(1/6)``, 10,000 training and 2,000 test documents. Sized so that the one-vs-rest peer
             (5,000 LIBLINEAR problems) trains within ``--timeout`` on 2 shared cores: at 20,000 training
             documents it did not finish in 400 s
    50k      the same with 50,000 categories: the same documents' words, ten times the label space
    bibtex   Mulan bibtex (``../shared/data/mulan/bibtex``, read by ``mlnb.data.arff.load_arff_dataset``): its
             official split, 4,880 training and 2,515 test documents, 1,836 binary word features, 159 tags;
             skipped with the reason when ../shared/data is absent

Learners (``LEARNERS``), each trained on the training part and asked for the top 5 categories of every
test document:

    nb complement / nb multinomial   ``SparseNaiveBayes(event_model=...)`` at its defaults on the word counts
                                     (bibtex: the binary features); ``fit`` (counters and weights), ``top_k``
    lr                               ``LogisticRegression(batch_size=100, npasses=10)`` (its default solver,
                                     row-wise AdaGrad minibatches; the options of the real corpora's configs) on
                                     log TF-IDF; ``decision_function`` then ``top_k_of_scores``. Dense W: refused,
                                     before anything is allocated, when ``mlnb.budget``'s estimate for a dense
                                     model, 16·V·K bytes, exceeds the memory available
    omikuji                          Parabel-like label trees at ``Model.default_hyper_param()``, 2 threads, on
                                     log TF-IDF written in the XMC text format; training is its train call alone
                                     (reading its text file, ``read s``, apart); ``predict(pairs, top_k=5)`` per
                                     document (beam 10, its default)
    lml 1vsrest / lml tree           LibMultiLabel 0.10 ``linear.train_1vsrest`` and ``linear.train_tree`` at their
                                     API defaults (LIBLINEAR ``-s 1``, L2-loss SVM; tree K = 100, dmax = 10) on log
                                     TF-IDF; ``predict_values`` then ``top_k_of_scores``. 1vsrest holds dense
                                     float64 V × K weights: refused when 8·V·K bytes exceed the memory available

Log TF-IDF (``mlnb.features.FeatureTransform("log_tfidf")``, fitted on the training part): x = (1 + ln tf) ·
ln(n / df), rows at unit L2 norm — the usual input of linear extreme classifiers; Naive Bayes is a model of
the counts themselves. Every transform and file is made once per corpus, before and outside any timing.

Metrics (``mlnb.metrics.at_k``) of the top 5 against the test labels: P@1, P@3, P@5, nDCG@5 and PSP@5, the
propensities of Jain, Prabhu & Varma (2016; A = 0.55, B = 1.5) from the training labels (PSP@5 normalised
by the best attainable, as the Extreme Classification Repository reports it).

Every (corpus, learner) runs in a process of its own (``--timeout`` seconds at most), which reports its peak
RSS (``resource.getrusage`` ``ru_maxrss``: the whole process, the data it loaded included; ``data MiB`` is
the RSS after loading, before training). Train seconds: the least of ``--repeats`` fits (mlnb's models after
one untimed fit of the first 200 training documents, so that numba's cached kernels are loaded; every fit's
seconds are in the CSV, ``train_all_s``); predict seconds: one top-5 pass over the test documents. A learner
whose training grows linearly with K (LR, LibMultiLabel 1vsrest: a dense column per category) is not started
on a corpus where the same documents with fewer categories, in the same run, project it past ``--timeout``
(or it timed out there): the row says so with the projection. Printed per corpus: NB's train
time against omikuji's (target: ≥ 10× faster) and the P@1 gap of mlnb's best to the best peer (target
≤ 0.05). The load average is printed before and after each process; results go to
results/bench/extreme-<time>.csv.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
MULAN = ROOT.parent / "shared" / "data" / "mulan"
#: synthetic corpora: LongTailCorpus arguments and the share of chunks held out for testing
SYNTHETIC = dict(n_documents=12_000, n_features=20_000, chunk_documents=2_000, seed=0)
CORPORA = {"5k": dict(SYNTHETIC, n_categories=5_000), "50k": dict(SYNTHETIC, n_categories=50_000),
           "bibtex": None}
TEST_SHARE = 1 / 6
TOP = 5
KS = (1, 3, 5)
LEARNERS = ("nb complement", "nb multinomial", "lr", "omikuji", "lml 1vsrest", "lml tree")
PEERS = ("omikuji", "lml 1vsrest", "lml tree")
#: learners whose training time grows linearly with the categories (one dense column of W each)
LINEAR_IN_K = ("lr", "lml 1vsrest")
LR_OPTIONS = dict(batch_size=100, npasses=10)
#: mlnb's models fit this many training documents once, untimed, before the timed fits
WARM_UP_DOCUMENTS = 200
#: bytes per weight of a dense model in mlnb.budget's estimate (float32 W and its optimiser's arrays)
DENSE_MODEL_BYTES = 16
#: LibMultiLabel 1vsrest: np.zeros((V, K)) float64 weights
LML_WEIGHT_BYTES = 8
DENSE_BYTES = {"lr": (DENSE_MODEL_BYTES, "mlnb.budget's estimate for a dense model, 16·V·K bytes"),
               "lml 1vsrest": (LML_WEIGHT_BYTES, "LibMultiLabel's float64 V × K weights, 8·V·K bytes")}


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def current_rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# -- the data: written once per corpus ----------------------------------------------------------------------

def corpus_data(name: str):
    """(X_train counts, Y_train, X_test counts, Y_test, description) of a corpus, or None with the reason."""
    if name == "bibtex":
        folder = MULAN / "bibtex"
        if not (folder / "bibtex.xml").is_file():
            return None, f"Mulan bibtex not found at {folder} (../shared/data is beside the project only in the " \
                         "development checkout)"
        from mlnb.data.arff import load_arff_dataset

        data = load_arff_dataset(folder / "bibtex-train.arff", folder / "bibtex-test.arff", folder / "bibtex.xml")
        arrays = (data.X_train, data.Y_train, data.X_test, data.Y_test)
        description = "Mulan bibtex, official split"
    else:
        from mlnb.data.long_tail import LongTailCorpus

        corpus = LongTailCorpus(**CORPORA[name])
        train_chunks, test_chunks = corpus.split(TEST_SHARE)
        parts = []
        for chunks in (train_chunks, test_chunks):
            pieces = [corpus.chunk(i) for i in chunks]
            parts += [sp.vstack([X for X, _ in pieces], format="csr"), sp.vstack([Y for _, Y in pieces], format="csr")]
        arrays = tuple(parts)
        description = repr(corpus)
    X_train, Y_train, X_test, Y_test = (sp.csr_matrix(a) for a in arrays)
    X_train, X_test = X_train.astype(np.float32), X_test.astype(np.float32)
    Y_train, Y_test = Y_train.astype(np.int8), Y_test.astype(np.int8)
    for matrix in (X_train, Y_train, X_test, Y_test):
        matrix.sort_indices()
    return (X_train, Y_train, X_test, Y_test, description), ""


def write_xmc(path: Path, X: sp.csr_matrix, Y: sp.csr_matrix) -> None:
    """The XMC repository's text format that omikuji reads: a header "n V K", then per document its
    comma-separated categories, a space, and its feature:value pairs (0-based)."""
    with open(path, "w") as out:
        out.write(f"{X.shape[0]} {X.shape[1]} {Y.shape[1]}\n")
        for i in range(X.shape[0]):
            labels = ",".join(map(str, Y.indices[Y.indptr[i]:Y.indptr[i + 1]]))
            start, stop = X.indptr[i], X.indptr[i + 1]
            pairs = " ".join(f"{j}:{v:.6g}" for j, v in zip(X.indices[start:stop], X.data[start:stop]))
            out.write(f"{labels} {pairs}\n")


def prepare(name: str, folder: Path) -> dict | None:
    """Write a corpus's parts (counts, log TF-IDF, labels, the XMC file) to ``folder``; its shape, or None."""
    from mlnb.features import FeatureTransform

    data, reason = corpus_data(name)
    if data is None:
        print(f"{name}: skipped: {reason}")
        return None
    X_train, Y_train, X_test, Y_test, description = data
    transform = FeatureTransform("log_tfidf").fit(X_train)
    T_train, T_test = transform.transform(X_train), transform.transform(X_test)
    folder.mkdir(parents=True, exist_ok=True)
    for key, matrix in (("X_train", X_train), ("Y_train", Y_train), ("X_test", X_test), ("Y_test", Y_test),
                        ("T_train", T_train), ("T_test", T_test)):
        sp.save_npz(folder / f"{key}.npz", sp.csr_matrix(matrix), compressed=False)
    write_xmc(folder / "train.xmc", T_train, Y_train)
    positives = np.asarray(Y_train.sum(axis=0)).ravel()
    shape = {"corpus": name, "description": description, "n_train": X_train.shape[0], "n_test": X_test.shape[0],
             "V": X_train.shape[1], "K": Y_train.shape[1], "nnz_train": int(X_train.nnz),
             "labels_per_doc": float(Y_train.nnz / X_train.shape[0]),
             "categories_trained": int(np.count_nonzero(positives)),
             "categories_in_test": int(np.count_nonzero(np.asarray(Y_test.sum(axis=0)).ravel()))}
    print(f"{name}: {description}\n  {shape['n_train']:,} training and {shape['n_test']:,} test documents, "
          f"V = {shape['V']:,}, K = {shape['K']:,} ({shape['categories_trained']:,} with a training positive, "
          f"{shape['categories_in_test']:,} with a test positive), {shape['labels_per_doc']:.2f} labels a "
          f"training document", flush=True)
    return shape


# -- the children: one learner on one corpus each ----------------------------------------------------------

def read(folder: Path, *keys: str):
    return [sp.load_npz(folder / f"{key}.npz").tocsr() for key in keys]


def least_of(fit, repeats: int) -> tuple[float, list[float]]:
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        fit()
        seconds.append(time.perf_counter() - started)
    return min(seconds), seconds


def child(spec: dict) -> dict:
    folder, learner, repeats = Path(spec["folder"]), spec["learner"], spec["repeats"]
    from mlnb.metrics.at_k import propensities, ranking_metrics, top_k_of_scores

    features = "X" if learner.startswith("nb") else "T"
    X_train, Y_train, X_test, Y_test = read(folder, f"{features}_train", "Y_train", f"{features}_test", "Y_test")
    data_mib = current_rss_mib()
    result: dict = {"data_mib": data_mib}
    model = {}
    warm_up = None

    if learner.startswith("nb"):
        from mlnb.models.naive_bayes.sparse import SparseNaiveBayes

        def fit(rows=slice(None)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the untrainable categories' note: the table says what matters
                model["m"] = SparseNaiveBayes(event_model=learner.split()[1]).fit(X_train[rows], Y_train[rows])
        warm_up = fit

        def predict():
            return model["m"].top_k(X_test, TOP)[0]
    elif learner == "lr":
        from mlnb.models import LogisticRegression

        def fit(rows=slice(None)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # notes on untrainable categories: the table says what matters
                model["m"] = LogisticRegression(**LR_OPTIONS).fit(X_train[rows], Y_train[rows])
        warm_up = fit

        def predict():
            return top_k_of_scores(model["m"].decision_function(X_test), TOP)[0]
    elif learner == "omikuji":
        import omikuji
        from omikuji import ffi, lib

        pool = omikuji._ThreadPoolHandle(2)
        started = time.perf_counter()
        dataset = lib.load_omikuji_data_set(ffi.new("char[]", str(folder / "train.xmc").encode()), pool.ptr)
        result["read_s"] = time.perf_counter() - started
        if dataset == ffi.NULL:
            raise RuntimeError(f"omikuji could not read {folder / 'train.xmc'}")
        dataset = ffi.gc(dataset, lib.free_omikuji_data_set)

        def fit():
            pointer = lib.train_omikuji_model(dataset, omikuji.Model.default_hyper_param(), pool.ptr)
            if pointer == ffi.NULL:
                raise RuntimeError("omikuji failed to train")
            model["m"] = omikuji.Model(pointer, pool)

        def predict():
            top = np.full((X_test.shape[0], TOP), -1, dtype=np.int64)
            for i in range(X_test.shape[0]):
                start, stop = X_test.indptr[i], X_test.indptr[i + 1]
                pairs = list(zip(X_test.indices[start:stop].tolist(), X_test.data[start:stop].tolist()))
                found = [label for label, _ in model["m"].predict(pairs, top_k=TOP)]
                top[i, :len(found)] = found
            return top
    else:
        import libmultilabel.linear as linear

        X64, T64 = X_train.astype(np.float64), X_test.astype(np.float64)
        Y_fit = Y_train.astype(np.float64)

        def fit():
            if learner == "lml 1vsrest":
                model["m"] = linear.train_1vsrest(Y_fit, X64, options="", verbose=False)
            else:
                model["m"] = linear.train_tree(Y_fit, X64, options="", verbose=False)

        def predict():
            return top_k_of_scores(np.asarray(linear.predict_values(model["m"], T64)), TOP)[0]

    if warm_up is not None:  # numba's cached kernels loaded (and the model's first-use paths run) before timing
        warm_up(slice(0, WARM_UP_DOCUMENTS))
    result["train_s"], result["train_all_s"] = least_of(fit, repeats)
    result["first_train_s"] = result["train_all_s"][0]
    started = time.perf_counter()
    top = predict()
    result["predict_s"] = time.perf_counter() - started
    ranking = ranking_metrics(Y_test, top, ks=KS, propensity=propensities(Y_train))
    for key in ("P@1", "P@3", "P@5", "nDCG@5", "PSP@5"):
        result[key] = ranking.means[key]
    result["peak_mib"] = peak_rss_mib()
    return result


def run_child(spec: dict, timeout: float) -> dict:
    print(f"  {spec['learner']:<15} load before {load()}", flush=True)
    try:
        done = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                              text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"skipped": f"timed out after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"skipped": f"failed (exit {done.returncode}): {tail}"}
    return json.loads(lines[-1][len("RESULT "):])


# -- the parent ---------------------------------------------------------------------------------------------

def refusal(learner: str, shape: dict, available: int | None) -> str:
    """Why a learner is not run on a corpus, before any process starts: its package is missing, or its dense
    V × K weights exceed the memory available; "" when it runs."""
    if learner == "omikuji" and importlib.util.find_spec("omikuji") is None:
        return "omikuji is not installed; pip install omikuji (or pip install -e .[bench])"
    if learner.startswith("lml") and importlib.util.find_spec("libmultilabel") is None:
        return "libmultilabel is not installed; pip install libmultilabel (or pip install -e .[bench])"
    if learner in DENSE_BYTES and available is not None \
            and DENSE_BYTES[learner][0] * shape["V"] * shape["K"] > available:
        return f"refused: dense W needs {dense_note(learner, shape, available)}"
    return ""


def dense_note(learner: str, shape: dict, available: int) -> str:
    from mlnb.budget import human

    per_weight, what = DENSE_BYTES[learner]
    return (f"{human(per_weight * shape['V'] * shape['K'])} ({what}, V = {shape['V']:,}, K = {shape['K']:,}) of "
            f"{human(available)} available")


def projection(learner: str, shape: dict, rows: list[dict], timeout: float) -> str:
    """Why a learner whose training grows linearly with K (``LINEAR_IN_K``) is not started: on a corpus of this
    run with the same training documents and fewer categories it took t seconds (or timed out), so here it needs
    about t · K / K_there, beyond ``--timeout``; "" otherwise."""
    if learner not in LINEAR_IN_K:
        return ""
    for r in rows:
        if r["learner"] != learner or r["n_train"] != shape["n_train"] or r["V"] != shape["V"] \
                or r["K"] >= shape["K"] or r["corpus"] == "bibtex":
            continue
        factor = shape["K"] / r["K"]
        if "train_s" in r and r["train_s"] * factor > timeout:
            return (f"not started: {r['train_s']:.0f} s at {r['K']:,} categories × {factor:.0f} = about "
                    f"{r['train_s'] * factor:.0f} s here (one dense column per category), beyond --timeout "
                    f"{timeout:.0f} s")
        if r.get("skipped", "").startswith("timed out"):
            return (f"not started: {r['skipped']} at {r['K']:,} categories, and it trains one dense column per "
                    f"category ({factor:.0f}× as many here)")
    return ""


def ratios(rows: list[dict]) -> list[str]:
    """Per corpus: NB's train time against omikuji's, and the P@1 gap of mlnb's best to the best peer."""
    lines = []
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        part = {r["learner"]: r for r in rows if r["corpus"] == corpus and "train_s" in r}
        omikuji = part.get("omikuji")
        for nb in ("nb complement", "nb multinomial"):
            if nb in part and omikuji is not None:
                ratio = omikuji["train_s"] / part[nb]["train_s"]
                lines.append(f"{corpus}: {nb} trains {ratio:,.1f}× faster than omikuji ({part[nb]['train_s']:.3f} s "
                             f"against {omikuji['train_s']:.2f} s): {'met' if ratio >= 10 else 'NOT met'} (≥ 10×)")
        ours = [part[name] for name in ("nb complement", "nb multinomial", "lr") if name in part]
        peers = [part[name] for name in PEERS if name in part]
        if ours and peers:
            mine, best = max(ours, key=lambda r: r["P@1"]), max(peers, key=lambda r: r["P@1"])
            gap = best["P@1"] - mine["P@1"]
            lines.append(f"{corpus}: P@1 of mlnb's best ({mine['learner']}, {mine['P@1']:.3f}) against the best peer "
                         f"({best['learner']}, {best['P@1']:.3f}): gap {gap:+.3f}: "
                         f"{'met' if gap <= 0.05 else 'NOT met'} (≤ 0.05)")
    return lines


def markdown(rows: list[dict]) -> str:
    out = ["| corpus | learner | train s | predict s (top 5) | peak RSS MiB (data) | P@1 | P@3 | P@5 | nDCG@5 "
           "| PSP@5 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "train_s" not in r:
            out.append(f"| {r['corpus']} | {r['learner']} | {r['skipped']} | | | | | | | |")
            continue
        out.append(f"| {r['corpus']} | {r['learner']} | {r['train_s']:.3f} | {r['predict_s']:.3f} | "
                   f"{r['peak_mib']:,.0f} ({r['data_mib']:,.0f}) | {r['P@1']:.3f} | {r['P@3']:.3f} | {r['P@5']:.3f} | "
                   f"{r['nDCG@5']:.3f} | {r['PSP@5']:.3f} |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", default="5k,50k,bibtex", help=f"comma-separated, of {', '.join(CORPORA)}")
    parser.add_argument("--learners", default=",".join(LEARNERS), help=f"comma-separated, of {', '.join(LEARNERS)}")
    parser.add_argument("--repeats", type=int, default=1, help="timed fits per learner (the least is reported)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one learner may take on one corpus")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown too")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(json.loads(args.child))), flush=True)
        return
    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    learners = [name.strip() for name in args.learners.split(",") if name.strip()]
    unknown = [c for c in corpora if c not in CORPORA] + [name for name in learners if name not in LEARNERS]
    if unknown or args.repeats < 1:
        parser.error(f"unknown corpora or learners {unknown}, or --repeats below 1")
    from mlnb.budget import available_memory

    print(f"{platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}, load {load()}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-extreme-") as temporary:
        for corpus in corpora:
            folder = Path(temporary) / corpus
            started = time.perf_counter()
            shape = prepare(corpus, folder)
            if shape is None:
                continue
            print(f"  data written in {time.perf_counter() - started:.1f} s (untimed)", flush=True)
            for learner in learners:
                available = available_memory()
                reason = refusal(learner, shape, available) or projection(learner, shape, rows, args.timeout)
                if reason.startswith("not started") and learner in DENSE_BYTES and available is not None:
                    reason += f" (its dense W, {dense_note(learner, shape, available)}, was admitted by memory)"
                result = {"skipped": reason} if reason else run_child(
                    {"folder": str(folder), "learner": learner, "repeats": args.repeats}, args.timeout)
                row = {**shape, "learner": learner, **result}
                rows.append(row)
                if "skipped" in row:
                    print(f"  {learner:<15} {row['skipped']}", flush=True)
                else:
                    extra = f", read {row['read_s']:.2f} s" if "read_s" in row else ""
                    print(f"  {learner:<15} train {row['train_s']:8.3f} s (first {row['first_train_s']:.3f} s{extra})  "
                          f"predict {row['predict_s']:7.3f} s  peak {row['peak_mib']:7,.0f} MiB "
                          f"(data {row['data_mib']:,.0f})  P@1 {row['P@1']:.3f}  P@3 {row['P@3']:.3f}  "
                          f"P@5 {row['P@5']:.3f}  nDCG@5 {row['nDCG@5']:.3f}  PSP@5 {row['PSP@5']:.3f}  "
                          f"load after {load()}", flush=True)
    print()
    for line in ratios(rows):
        print(line)
    if args.markdown:
        print()
        print(markdown(rows))
    if rows:
        import pandas as pd

        out = ROOT / "results" / "bench" / f"extreme-{time.strftime('%Y%m%d-%H%M%S')}.csv"
        out.parent.mkdir(parents=True, exist_ok=True)
        table = pd.DataFrame(rows)
        if "train_all_s" in table:
            table["train_all_s"] = table["train_all_s"].map(lambda v: json.dumps(v) if isinstance(v, list) else v)
        table.to_csv(out, index=False)
        print(f"\nresults: {out.relative_to(ROOT)}  (load {load()})")


if __name__ == "__main__":
    main()
