"""Benchmark: an LR pass against its memory-bandwidth floor, on the 200k RCV1-shaped set.

    python experiments/bench_lr_floor.py              # 200k training documents, 47,236 words, 103 categories
    python experiments/bench_lr_floor.py --scale 0.25
    NUMBA_NUM_THREADS=1 python experiments/bench_lr_floor.py     # each region's time at 1 thread (and so on)

A pass of the all-categories engine (minibatch AdaGrad, batch 1000) must move at least, per
minibatch B of m documents with nnz non-zeros touching u distinct words (K categories):

    X_B, read twice (forward and backward):   2 · (8·nnz + 4·(m + 1))   bytes (float32 values, int32 indices)
    W's touched rows, read and written:        2 · 4·u·K
    S's touched rows (AdaGrad), read and written: 2 · 4·u·K
    Z / D, written once and read once:         2 · 4·m·K

bytes beyond L2 (the rest — D while the minibatch is processed, the gradient rows of a word
block — fits in L2). The script counts these bytes for the very minibatches of a seeded pass,
measures the memory bandwidth in the same run (a numpy copy of a large array and a STREAM-like
triad in numba on every core; the higher counts), and prints the floor, the time achieved
(minimum over fits of the pass time) and their ratio. Target (issue 14): ≤ 1.5× the floor.

What the update alone costs here. The floor assumes W's and S's touched rows move at streaming
bandwidth. The script also times the AdaGrad update of those very rows — each minibatch's
touched words in the order the engine visits them (first appearance), the engine's own
``_update_row`` with its prefetching, on every core, and nothing else: no products, no link —
so the rate this machine reaches on that access pattern is printed beside the floor. And the
same with each word's rows of W and S side by side in one array (W_j | S_j, 824 contiguous
bytes; not the engine's layout), which shows what such a storage would give the update.

What the parts cost alone. On the same minibatches, the script then times the engine's two
parallel regions one at a time (all minibatches through the documents region, then all through
the words region with the D and cuts the first produced), and the bare forward product
z_i = b + x_i·W (``_forward_row``, no link, no cuts; W fixed). A pass built from these kernels
must at least multiply and update: the forward product alone plus the update alone bounds such a
pass from below, printed beside the floor and beside 1.5× the floor. (The floor counts each
touched row of W once per minibatch; the forward product reads one row per non-zero, ~4 per
touched word, from L3.)
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from mlnb._kernels.jit import IEEE, njit, prange
from mlnb.models.logistic.kernels import PREFETCH_AHEAD, _forward_row, _prefetch_row, _update_row

TARGET_RATIO = 1.5


@njit(parallel=True, cache=True)
def _triad(a, b, c, scalar):
    for i in prange(a.size):
        a[i] = b[i] + scalar * c[i]


def bandwidth(megabytes: int = 512, repeats: int = 5) -> dict:
    """Bytes per second of a numpy copy (read + write) and of a parallel triad a = b + s·c (2 reads, 1 write)."""
    n = megabytes * 2**20 // 4
    src, dst = np.ones(n, dtype=np.float32), np.empty(n, dtype=np.float32)
    copies = []
    for _ in range(repeats):
        started = time.perf_counter()
        np.copyto(dst, src)
        copies.append(time.perf_counter() - started)
    a, b, c = dst, src, np.full(n, 2.0, dtype=np.float32)
    _triad(a[:1000], b[:1000], c[:1000], np.float32(3.0))
    triads = []
    for _ in range(repeats):
        started = time.perf_counter()
        _triad(a, b, c, np.float32(3.0))
        triads.append(time.perf_counter() - started)
    return {"numpy copy": 2 * 4 * n / min(copies), "numba triad": 3 * 4 * n / min(triads)}


#: the step's scalars in both timings below: the schedule's τ_t (t^(vexp − texp) = 1 with the
#: defaults) and AdaGrad's ε
_STEP, _EPS = np.float32(1.0), np.float32(1e-8)


@njit(parallel=True, cache=True, fastmath=IEEE, error_model="numpy")
def _update_alone(words, W, S, G, lrate, n_threads):
    """The engine's AdaGrad row update (``_update_row``, no penalty) of W[words], S[words], G's rows as
    gradients, the words split into equal contiguous shares of the threads, prefetched as in the engine."""
    n, K = words.size, W.shape[1]
    share = (n + n_threads - 1) // n_threads
    for worker in prange(n_threads):
        alpha = np.empty(K, dtype=np.float32)  # the engine's per-thread scratch of the row's steps
        no_scale = np.empty((0, 0), dtype=np.float32)  # the engine's "no R"
        for c in range(worker * share, min(n, (worker + 1) * share)):
            if c + PREFETCH_AHEAD < n:
                _prefetch_row(W, words[c + PREFETCH_AHEAD])
                _prefetch_row(S, words[c + PREFETCH_AHEAD])
            _update_row(W, S, G[worker, c % G.shape[1]], alpha, words[c], lrate, _STEP, True, False, True,
                        np.float32(0.5), _EPS, np.float32(0.0), np.float32(0.0), no_scale)


@njit(parallel=True, cache=True, fastmath=IEEE, error_model="numpy")
def _update_alone_side_by_side(words, WS, G, lrate, n_threads):
    """The same update with W_j = WS[j, 0] and S_j = WS[j, 1] adjacent in memory: the loop of
    ``_update_row``'s square-root branch, line for line (it takes W and S as separate matrices)."""
    n, K = words.size, WS.shape[2]
    share = (n + n_threads - 1) // n_threads
    for worker in prange(n_threads):
        for c in range(worker * share, min(n, (worker + 1) * share)):
            if c + PREFETCH_AHEAD < n:
                _prefetch_row(WS[words[c + PREFETCH_AHEAD]], 0)
                _prefetch_row(WS[words[c + PREFETCH_AHEAD]], 1)
            g, j = G[worker, c % G.shape[1]], words[c]
            for k in range(K):
                s = WS[j, 1, k] + g[k] * g[k]
                WS[j, 1, k] = s
                WS[j, 0, k] -= (lrate[k] * _STEP / (np.sqrt(s) + _EPS) if s > 0 else np.float32(0.0)) * g[k]


def update_alone_seconds(touched: list, V: int, K: int, repeats: int = 3) -> dict:
    """Minimum seconds over ``repeats`` of the AdaGrad update alone of every minibatch's touched rows."""
    import numba

    threads = numba.get_num_threads()
    rng = np.random.default_rng(1)
    W = rng.standard_normal((V, K)).astype(np.float32) * np.float32(0.01)
    S = np.ones((V, K), dtype=np.float32)
    WS = np.stack([W, S], axis=1)  # (V, 2, K)
    G = rng.standard_normal((threads, 64, K)).astype(np.float32) * np.float32(0.01)  # gradients in L1/L2
    lrate = np.full(K, 0.3, dtype=np.float32)
    _update_alone(touched[0][:64], W, S, G, lrate, threads)
    _update_alone_side_by_side(touched[0][:64], WS, G, lrate, threads)
    times = {"apart (the engine's W, S)": [], "side by side (W_j | S_j)": []}
    for _ in range(repeats):
        started = time.perf_counter()
        for words in touched:
            _update_alone(words, W, S, G, lrate, threads)
        times["apart (the engine's W, S)"].append(time.perf_counter() - started)
        started = time.perf_counter()
        for words in touched:
            _update_alone_side_by_side(words, WS, G, lrate, threads)
        times["side by side (W_j | S_j)"].append(time.perf_counter() - started)
    return {name: min(values) for name, values in times.items()}


def pass_bytes(X, K: int, batch_size: int, seed: int) -> dict:
    """The bytes a pass must move beyond L2, by kind, for the minibatches of a seeded shuffled pass."""
    order = np.random.default_rng(seed).permutation(X.shape[0])
    lengths = np.diff(X.indptr)
    parts = {"X_B twice": 0.0, "W rows read+write": 0.0, "S rows read+write": 0.0, "Z/D": 0.0}
    touched_total = 0
    touched = []
    for start in range(0, X.shape[0], batch_size):
        rows = order[start:start + batch_size]
        m = rows.size
        nnz = int(lengths[rows].sum())
        visited = np.concatenate([X.indices[X.indptr[r]:X.indptr[r + 1]] for r in rows])
        words, first = np.unique(visited, return_index=True)
        touched.append(visited[np.sort(first)].astype(np.int64))  # in the order of first appearance
        u = words.size
        touched_total += u
        parts["X_B twice"] += 2 * (8 * nnz + 4 * (m + 1))
        parts["W rows read+write"] += 2 * 4 * u * K
        parts["S rows read+write"] += 2 * 4 * u * K
        parts["Z/D"] += 2 * 4 * m * K
    steps = -(-X.shape[0] // batch_size)
    return {"parts": parts, "total": sum(parts.values()), "mean_touched": touched_total / steps, "steps": steps,
            "touched": touched}


@njit(parallel=True, cache=True, fastmath=IEEE, error_model="numpy")
def _forward_alone(indptr, indices, data, W, b, D, n_threads):
    """z_i = b + x_i·W for every document i (the engine's ``_forward_row``), equal contiguous shares."""
    m = D.shape[0]
    share = (m + n_threads - 1) // n_threads
    no_scale, no_factors = np.empty((0, 0), dtype=np.float32), np.empty(0, dtype=np.float32)  # the engine's "none"
    for worker in prange(n_threads):
        for i in range(worker * share, min(m, (worker + 1) * share)):
            _forward_row(indptr, indices, data, i, W, b, no_scale, D, no_factors)


def parts_alone_seconds(X, Y, batch_size: int, seed: int, repeats: int = 3, l2: float | None = None) -> dict:
    """Minimum seconds over ``repeats`` of the bare forward product over every minibatch of the seeded
    pass, and of each parallel region of the engine's own one-pass fit (``LogisticRegression(npasses=1)``
    with the default updater and L2, or ``l2``): region 0 (the row cuts and the catch-up of the rows
    read; only with a per-coordinate regularised updater), region 1 (the documents), region 2 (the
    words and their update), and the bias and the end-of-pass flush, each timed around the kernel's own
    calls (``NumbaKernel.step`` is the sequence; nothing here repeats it) and summed over the pass."""
    import numba

    import mlnb.models.logistic.kernels as kernels
    from mlnb.models.logistic import LogisticRegression
    from mlnb.models.logistic.minibatch import InMemorySource

    threads = numba.get_num_threads()
    batches = list(InMemorySource(X, Y, batch_size).minibatches(np.random.default_rng(seed)))
    regions = {"_catch_up_region": "region 0 (cuts, catch-up)", "_documents_region": "region 1 (documents)",
               "_words_region": "region 2 (words, update)", "_update_bias": "bias + flush",
               "_flush_region": "bias + flush"}
    times = {"forward product": []} | {name: [] for name in dict.fromkeys(regions.values())}
    spent: dict = {}
    originals = {name: getattr(kernels, name) for name in regions}

    def timed(name, function):
        def call(*args):
            started = time.perf_counter()
            result = function(*args)
            spent[regions[name]] = spent.get(regions[name], 0.0) + time.perf_counter() - started
            return result
        return call

    K = Y.shape[1]
    W, b = np.zeros((X.shape[1], K), dtype=np.float32), np.full(K, -3.0, dtype=np.float32)
    D = np.zeros((batch_size, K), dtype=np.float32)
    settings = {} if l2 is None else {"l2": l2}
    try:
        for name, function in originals.items():
            setattr(kernels, name, timed(name, function))
        for _ in range(repeats):  # the first round may include compiling: the minimum counts
            started = time.perf_counter()
            for X_B, _ in batches:
                _forward_alone(X_B.indptr, X_B.indices, X_B.data, W, b, D[:X_B.shape[0]], threads)
            times["forward product"].append(time.perf_counter() - started)
            spent.clear()
            LogisticRegression(npasses=1, batch_size=batch_size, random_state=seed, **settings).fit(X, Y)
            for name in times:
                if name != "forward product":
                    times[name].append(spent.get(name, 0.0))
    finally:
        for name, function in originals.items():
            setattr(kernels, name, function)
    return {name: min(values) for name, values in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the 200k training documents")
    parser.add_argument("--fits", type=int, default=3, help="one-pass fits timed (the minimum counts)")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--l2", type=float, default=None, help="the fits' l2 (default: the engine's, 1e-4); "
                        "0 times the pass without regularisation, so without region 0")
    args = parser.parse_args()
    settings = {"batch_size": args.batch_size} if args.l2 is None else {"batch_size": args.batch_size, "l2": args.l2}

    import numba

    from mlnb.data.synthetic import make_rcv1_like
    from mlnb.models.logistic import LogisticRegression

    data = make_rcv1_like(n_documents=int(250_000 * args.scale), n_features=47_236, n_categories=103,
                          test_fraction=0.2, seed=0)
    X, Y = data.X_train, data.Y_train
    K = Y.shape[1]
    print(f"data: {X.shape[0]:,} training documents, {X.shape[1]:,} words, {K} categories, {X.nnz:,} non-zeros; "
          f"{os.cpu_count()} cores, numba threads {numba.get_num_threads()}; load {os.getloadavg()[0]:.2f}")
    traffic = pass_bytes(X, K, args.batch_size, seed=0)
    print(f"per pass ({traffic['steps']} minibatches of {args.batch_size}, {traffic['mean_touched']:,.0f} distinct "
          f"words each on average):")
    for name, value in traffic["parts"].items():
        print(f"  {name:20s} {value / 1e9:7.2f} GB")
    print(f"  {'total':20s} {traffic['total'] / 1e9:7.2f} GB")

    LogisticRegression(npasses=1, batch_size=args.batch_size).fit(X[:2000], Y[:2000])  # compile / load
    measured = bandwidth()
    best = max(measured.values())
    print("bandwidth: " + ", ".join(f"{name} {value / 1e9:.1f} GB/s" for name, value in measured.items())
          + f"; load {os.getloadavg()[0]:.2f}")
    floor = traffic["total"] / best
    passes = []
    for _ in range(args.fits):
        model = LogisticRegression(npasses=1, **settings).fit(X, Y)
        passes.append(model.history_[0]["seconds"])
    achieved = min(passes)
    training = getattr(model, "_training", None)  # (an older engine has none)
    policy = getattr(training.kernel, "policy", None) if training is not None else None
    if policy is not None and policy.recent:
        per_unit = {threads: sorted(times)[len(times) // 2] for threads, times in policy.recent.items()}
        if len(per_unit) == 2:
            one, many = per_unit[1], per_unit[max(per_unit)]
            print(f"thread policy at the end: one thread {one / many:.2f}× the time per unit of work of "
                  f"{max(per_unit)} threads")
    ratio = achieved / floor
    bounds = update_alone_seconds(traffic["touched"], X.shape[1], K)
    print("\nthe AdaGrad update alone of the same rows (no products, no link), min of 3; load "
          f"{os.getloadavg()[0]:.2f}:")
    update_bytes = traffic["parts"]["W rows read+write"] + traffic["parts"]["S rows read+write"]
    for name, seconds in bounds.items():
        print(f"  W and S rows {name:28s} {seconds:.3f} s = {seconds / floor:.2f}× the floor "
              f"({update_bytes / seconds / 1e9:.1f} GB/s)")
    parts = parts_alone_seconds(X, Y, args.batch_size, seed=0, l2=args.l2)
    print("\nthe forward product alone, and each region of the pass, over the same minibatches, min of 3; load "
          f"{os.getloadavg()[0]:.2f}:")
    for name, seconds in parts.items():
        print(f"  {name:28s} {seconds:.3f} s = {seconds / floor:.2f}× the floor")
    bound = parts["forward product"] + bounds["apart (the engine's W, S)"]
    print(f"  the engine's forward product + its update, each alone: {bound:.3f} s = {bound / floor:.2f}× the floor "
          f"(the target: ≤ {TARGET_RATIO * floor:.3f} s)")
    regions = sum(seconds for name, seconds in parts.items() if name != "forward product")
    print(f"  the regions of the pass together: {regions:.3f} s (a pass: {achieved:.3f} s)")
    print(f"\nfloor at {best / 1e9:.1f} GB/s: {floor:.3f} s per pass; achieved {achieved:.3f} s "
          f"(min of {args.fits}: {', '.join(f'{p:.3f}' for p in passes)}); ratio {ratio:.2f}× -> "
          f"{'MET' if ratio <= TARGET_RATIO else 'NOT met'} (target ≤ {TARGET_RATIO}×); load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
