"""Naive Bayes event counters: dense, sparse in memory, out of core (DuckDB) and on Dask — fit seconds and peak RSS.

    python experiments/bench_counters.py                                # (a), (b) and (c)
    python experiments/bench_counters.py --parts dense --repeats 5      # (a) only
    python experiments/bench_counters.py --parts beyond,dask --documents 800000 --max-count-memory 1024,256

(a) ``dense``: where dense counters fit — the issue's example, a LongTailCorpus (mlnb.data.long_tail) of
    1,000 training documents (and 1,000 test documents), 20,000 words and 5,000 categories:

        dense NB     NaiveBayes(alpha=0.5).fit(X, Y) and its weights_ (V × K, built on first use)
        sparse NB    SparseNaiveBayes(alpha=0.5).fit(X, Y) and its weights (built on first use: scoring one
                     document)
        sklearn OvR  OneVsRestClassifier(MultinomialNB(alpha=0.5)).fit(X, Y) on ``--ovr-categories`` categories
                     (Y dense int64), its time scaled by 5,000 / that number when fewer

    each in a fresh process: one untimed fit (numba's kernels loaded, caches warm), then the least of
    ``--repeats`` timed fits; then the 1,000 test documents' scores (``decision_function``) of the two mlnb
    models, compared: the sparse model's float32 scores equal the dense model's within float32 rounding.
(b) ``beyond``: LongTailCorpus(``--documents``, 10,000,000 words, 10,000 categories; dense float32
    counters 400 GB), ``SparseNaiveBayes(max_count_memory=1024).fit_chunks`` over its chunks of 10,000
    documents, the counters in memory while they fit 1,024 MiB and out of core (DuckDB, Parquet) beyond;
    then the top 5 categories of 1,000 test documents (a further chunk; the weights are built then);
    ``--max-count-memory 1024,256`` runs it once per budget.
    ``--documents`` is chosen so the distinct (word, category) pairs pass the budget (16 bytes a pair:
    67.1M pairs), so DuckDB is really used.
(c) ``dask``: the same counts by ``count_on_dask`` on a LocalCluster of 2 worker processes (1 thread each),
    each worker writing its word ranges' Parquet parts; then the same top 5 from those counts.

Every configuration runs in a process of its own, which reports its peak RSS (``resource.getrusage``
``ru_maxrss``: the whole process, its data included; Dask's workers report theirs). (b) and (c) digest
their counts (SHA-256 of every pair's key and value in key order, and of t, S, N, n) after the fit: equal
digests are the same counts bit for bit. The load average is printed before and after each configuration.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

DENSE_SHAPE = dict(n_documents=2_000, n_features=20_000, n_categories=5_000, chunk_documents=1_000)
BEYOND_SHAPE = dict(n_features=10_000_000, n_categories=10_000, chunk_documents=10_000)
ALPHA = 0.5
TEST_DOCUMENTS = 1_000
TOP = 5


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


# -- the children: one configuration each -------------------------------------------------------------------

def dense_data(seed: int):
    from mlnb.data.long_tail import LongTailCorpus

    corpus = LongTailCorpus(**DENSE_SHAPE, seed=seed)
    (X, Y), (X_test, _) = corpus.chunk(0), corpus.chunk(1)
    return X, Y, X_test


def child_dense(spec: dict) -> dict:
    """(a): one model's fit (least of the repeats), and the test scores of the mlnb models."""
    X, Y, X_test = dense_data(spec["seed"])
    data_rss = peak_rss_mib()
    model = spec["model"]
    repeats = spec["repeats"]
    result = {"data_rss_mib": data_rss}
    if model == "sklearn_ovr":
        from sklearn.exceptions import ConvergenceWarning  # noqa: F401  (scikit-learn imported before timing)
        from sklearn.multiclass import OneVsRestClassifier
        from sklearn.naive_bayes import MultinomialNB

        k = spec["ovr_categories"]
        Y_dense = Y[:, :k].toarray().astype(np.int64)

        def fit():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "label not present": categories with no positive
                return OneVsRestClassifier(MultinomialNB(alpha=ALPHA)).fit(X, Y_dense)
    elif model == "dense_nb":
        from mlnb.models.naive_bayes import NaiveBayes

        def fit():
            fitted = NaiveBayes(alpha=ALPHA).fit(X, Y)
            fitted.weights_  # noqa: B018  (W and b are built on first use: part of the fit)
            return fitted
    else:
        from mlnb.models.naive_bayes.sparse import SparseNaiveBayes

        def fit():
            fitted = SparseNaiveBayes(alpha=ALPHA).fit(X, Y)
            fitted.decision_function(X_test[:1])  # the weights are built on first use: part of the fit
            return fitted
    started = time.perf_counter()
    fitted = fit()
    result["first_fit_s"] = time.perf_counter() - started
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fitted = fit()
        times.append(time.perf_counter() - started)
    result["fit_s"] = min(times)
    if model != "sklearn_ovr":
        started = time.perf_counter()
        scores = fitted.decision_function(X_test)
        result["score_s"] = time.perf_counter() - started
        np.save(spec["scores"], np.asarray(scores, dtype=np.float32))
    result["peak_rss_mib"] = peak_rss_mib()
    return result


def beyond_corpus(documents: int, seed: int):
    """The training chunks and one test chunk after them."""
    from mlnb.data.long_tail import LongTailCorpus

    chunk = BEYOND_SHAPE["chunk_documents"]
    corpus = LongTailCorpus(n_documents=documents + chunk, **BEYOND_SHAPE, seed=seed)
    return corpus, range(corpus.n_chunks - 1), corpus.n_chunks - 1


def digest(counts) -> str:
    """SHA-256 of every pair's key and value in key order (batch by batch for a store), then t, S, N, n."""
    keys, values = hashlib.sha256(), hashlib.sha256()
    batches = [(counts.key, counts.value)] if hasattr(counts, "key") else counts.iter_pairs(1 << 22)
    for key, value in batches:
        keys.update(np.ascontiguousarray(key, dtype=np.int64).tobytes())
        values.update(np.ascontiguousarray(value, dtype=np.float64).tobytes())
    whole = hashlib.sha256(keys.digest() + values.digest())
    for margin in (counts.t, counts.S, counts.N):
        whole.update(np.ascontiguousarray(margin, dtype=np.float64).tobytes())
    whole.update(str(int(counts.n)).encode())
    return whole.hexdigest()


def top_of(model, corpus, test_chunk: int, result: dict) -> np.ndarray:
    X_test = corpus.chunk(test_chunk)[0][:TEST_DOCUMENTS]
    started = time.perf_counter()
    categories, _ = model.top_k(X_test, TOP)
    result["top_k_s"] = time.perf_counter() - started
    return categories


def child_beyond(spec: dict) -> dict:
    """(b): SparseNaiveBayes.fit_chunks under the budget, in this process."""
    from mlnb.models.naive_bayes.sparse import SparseNaiveBayes
    from mlnb.models.naive_bayes.sparse_counts import SparseCounts

    corpus, train, test_chunk = beyond_corpus(spec["documents"], spec["seed"])
    model = SparseNaiveBayes(alpha=ALPHA, max_count_memory=spec["max_count_memory"], count_folder=spec["folder"])
    started = time.perf_counter()
    model.fit_chunks(corpus.chunks(train))
    result = {"fit_s": time.perf_counter() - started, "fit_peak_rss_mib": peak_rss_mib()}
    counts = model.counts_
    result.update(pairs=int(counts.n_pairs), out_of_core=not isinstance(counts, SparseCounts),
                  documents=int(counts.n))
    np.save(spec["top"], top_of(model, corpus, test_chunk, result))
    result["peak_rss_mib"] = peak_rss_mib()
    started = time.perf_counter()
    result["digest"] = digest(counts)
    result["digest_s"] = time.perf_counter() - started
    return result


def _worker_peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_dask(spec: dict) -> dict:
    """(c): count_on_dask on a LocalCluster of 2 worker processes, the parts written by the workers."""
    import logging

    from distributed import Client, LocalCluster

    from mlnb.models.naive_bayes.sparse import SparseNaiveBayes
    from mlnb.models.naive_bayes.sparse_dask import count_on_dask

    corpus, train, test_chunk = beyond_corpus(spec["documents"], spec["seed"])
    started = time.perf_counter()
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=logging.CRITICAL, env={"NUMBA_NUM_THREADS": "1"})
    client = Client(cluster, set_as_default=False)
    result = {"cluster_start_s": time.perf_counter() - started}
    try:
        started = time.perf_counter()
        counts = count_on_dask(client, corpus.chunk, train, corpus.n_features, corpus.n_categories,
                               n_partitions=spec["partitions"], folder=Path(spec["folder"]) / "dask-counts")
        result["fit_s"] = time.perf_counter() - started
        result["worker_peak_rss_mib"] = sorted(client.run(_worker_peak_rss_mib).values())
    finally:
        client.close()
        cluster.close()
    result.update(client_fit_peak_rss_mib=peak_rss_mib(), pairs=int(counts.n_pairs), documents=int(counts.n),
                  parts=len(counts.parts))
    model = SparseNaiveBayes(alpha=ALPHA).fit_counts(counts)
    np.save(spec["top"], top_of(model, corpus, test_chunk, result))
    result["peak_rss_mib"] = peak_rss_mib()
    result["digest"] = digest(counts)
    return result


CHILDREN = {"dense": child_dense, "beyond": child_beyond, "dask": child_dask}


# -- the parent ------------------------------------------------------------------------------------------------

def run_child(spec: dict, timeout: float) -> dict:
    print(f"  [{spec['part']} {spec.get('model', '')}] load {load()}", flush=True)
    done = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True,
                          timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"{spec['part']} failed (exit {done.returncode})")
    result = json.loads(lines[-1][len("RESULT "):])
    print(f"    {json.dumps(result)}  load after {load()}", flush=True)
    return result


def part_dense(args, folder: Path) -> None:
    print(f"(a) where dense fits: LongTailCorpus {DENSE_SHAPE}, 1,000 training + 1,000 test documents")
    results = {}
    for model in ("dense_nb", "sparse_nb", "sklearn_ovr"):
        if model == "sklearn_ovr" and args.ovr_categories == 0:
            continue
        spec = dict(part="dense", model=model, seed=args.seed, repeats=args.repeats, scores=str(folder / f"{model}.npy"),
                    ovr_categories=args.ovr_categories)
        results[model] = run_child(spec, timeout=args.timeout)
    K = DENSE_SHAPE["n_categories"]
    if "sklearn_ovr" in results:
        scale = K / args.ovr_categories
        results["sklearn_ovr"]["fit_s_all_categories"] = results["sklearn_ovr"]["fit_s"] * scale
    dense, sparse = np.load(folder / "dense_nb.npy"), np.load(folder / "sparse_nb.npy")
    difference = np.abs(dense.astype(np.float64) - sparse)
    relative = float((difference / np.maximum(1.0, np.abs(dense))).max())
    equal = bool(np.allclose(sparse, dense, rtol=2e-6, atol=2e-6 * float(np.abs(dense).max())))
    base = results["sparse_nb"]
    print(f"\n| (a) {DENSE_SHAPE['n_features']:,} words × {K:,} categories | fit s (least of {args.repeats}) | "
          "first fit s | peak RSS MiB | fit / sparse NB | RSS / sparse NB |")
    print("|---|---|---|---|---|---|")
    for model, name in (("dense_nb", "dense NaiveBayes"), ("sparse_nb", "SparseNaiveBayes"),
                        ("sklearn_ovr", "scikit-learn OvR MultinomialNB")):
        if model not in results:
            continue
        r = results[model]
        fit = r.get("fit_s_all_categories", r["fit_s"])
        label = name if model != "sklearn_ovr" or args.ovr_categories == K else \
            f"{name} ({args.ovr_categories:,} categories, × {K / args.ovr_categories:g})"
        print(f"| {label} | {fit:.3f} | {r['first_fit_s']:.3f} | {r['peak_rss_mib']:.0f} | "
              f"{fit / base['fit_s']:.1f}× | {r['peak_rss_mib'] / base['peak_rss_mib']:.2f}× |")
    print(f"scores of {TEST_DOCUMENTS:,} test documents: sparse against dense max |Δ| {difference.max():.3g}, "
          f"max |Δ| / max(1, |dense|) {relative:.3g}: {'equal within float32 rounding' if equal else 'NOT EQUAL'}; "
          f"scoring dense {results['dense_nb']['score_s']:.3f} s, sparse {base['score_s']:.3f} s")


def part_beyond_and_dask(args, folder: Path, parts: list[str]) -> None:
    V, K = BEYOND_SHAPE["n_features"], BEYOND_SHAPE["n_categories"]
    budgets = [float(b) for b in args.max_count_memory.split(",")]
    print(f"(b)/(c) beyond: LongTailCorpus of {args.documents:,} training documents, {V:,} words × {K:,} "
          f"categories (dense float32 counters {V * K * 4 / 1e9:,.0f} GB); max_count_memory "
          + ", ".join(f"{b:g} MiB ({b * 2**20 // 16 / 1e6:.1f}M pairs)" for b in budgets))
    beyond, dask = [], None
    common = dict(documents=args.documents, seed=args.seed)
    if "beyond" in parts:
        for budget in budgets:
            spec = dict(part="beyond", folder=str(folder), top=str(folder / f"top-beyond-{budget:g}.npy"),
                        max_count_memory=budget, **common)
            beyond.append((budget, run_child(spec, timeout=args.timeout)))
    if "dask" in parts:
        spec = dict(part="dask", folder=str(folder), top=str(folder / "top-dask.npy"), partitions=args.partitions,
                    **common)
        dask = run_child(spec, timeout=args.timeout)
    print(f"\n| (b)/(c) {args.documents:,} documents | fit s | peak RSS MiB | pairs | out of core | "
          f"top-{TOP} of {TEST_DOCUMENTS:,} s |")
    print("|---|---|---|---|---|---|")
    for budget, r in beyond:
        print(f"| (b) fit_chunks, one process, max_count_memory = {budget:g} | {r['fit_s']:.1f} | "
              f"{r['fit_peak_rss_mib']:.0f} (with top-k {r['peak_rss_mib']:.0f}) | {r['pairs']:,} | "
              f"{r['out_of_core']} | {r['top_k_s']:.2f} |")
    if dask is not None:
        r = dask
        print(f"| (c) count_on_dask, 2 workers | {r['fit_s']:.1f} (+ {r['cluster_start_s']:.1f} start) | client "
              f"{r['client_fit_peak_rss_mib']:.0f}, workers {', '.join(f'{w:.0f}' for w in r['worker_peak_rss_mib'])} | "
              f"{r['pairs']:,} | {r['parts']} Parquet parts | {r['top_k_s']:.2f} |")
    if len(beyond) > 1:
        same = len({r["digest"] for _, r in beyond}) == 1
        print(f"(b) across budgets: counts {'equal bit for bit' if same else 'DIFFERENT'}")
    if beyond and dask is not None:
        budget, first = beyond[0]
        same = first["digest"] == dask["digest"]
        same_top = np.array_equal(np.load(folder / f"top-beyond-{budget:g}.npy"), np.load(folder / "top-dask.npy"))
        print(f"(c) against (b) at {budget:g} MiB: fit {dask['fit_s'] / first['fit_s']:.2f}×; counts "
              f"{'equal bit for bit' if same else 'DIFFERENT'} (digest {first['digest'][:16]}…); "
              f"top-{TOP} categories {'equal' if same_top else 'DIFFERENT'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="dense,beyond,dask", help="comma-separated: dense, beyond, dask")
    parser.add_argument("--documents", type=int, default=800_000, help="(b)/(c) training documents")
    parser.add_argument("--max-count-memory", default="1024", help="(b) MiB of counters in memory; "
                        "comma-separated for one run of (b) each")
    parser.add_argument("--partitions", type=int, default=16, help="(c) word ranges, one reduce task each")
    parser.add_argument("--repeats", type=int, default=3, help="(a) timed fits per model (the least is kept)")
    parser.add_argument("--ovr-categories", type=int, default=DENSE_SHAPE["n_categories"],
                        help="(a) categories scikit-learn's OvR fits (its time scaled to all); 0 skips it")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", default=None, help="where the counts and DuckDB's spill go (default: a "
                        "temporary folder, removed at the end)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per configuration")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        spec = json.loads(args.child)
        print("RESULT " + json.dumps(CHILDREN[spec["part"]](spec)), flush=True)
        return
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(parts) - set(CHILDREN)
    if unknown:
        parser.error(f"--parts: unknown {sorted(unknown)}; expected some of {sorted(CHILDREN)}")
    print(f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load()}")
    root = Path(args.folder) if args.folder else Path(tempfile.gettempdir())
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="bench-counters-", dir=root))
    try:
        if "dense" in parts:
            part_dense(args, folder)
        if {"beyond", "dask"} & set(parts):
            part_beyond_and_dask(args, folder, parts)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"load at the end {load()}")


if __name__ == "__main__":
    main()
