"""What exact (lazy, just-in-time) regularisation costs a minibatch LR pass, side by side with another tree.

    python experiments/bench_lr_regularisation.py --old /tmp/mlnb-head     # a checkout of an earlier commit
    python experiments/bench_lr_regularisation.py --documents 200000 --repeats 5

Times one pass of ``LogisticRegression(npasses=1).fit`` (batch 1000, the numba kernel, every core) on
one synthetic RCV1-shaped training set, for each updater — row-wise AdaGrad (the default, lrate 0.1)
and per-coordinate AdaGrad (lrate 0.3) — at l2 = 1e-4 (the default) and l2 = 0 (no regulariser: no
catch-up), and the default updater at l1 = 1e-5, in this tree and, with ``--old``, in the other tree
(run as subprocesses alternately, so that both see the same machine load; each time is the minimum of
``--repeats`` passes after one warm-up pass that compiles or loads numba's cache; a setting the other
tree does not have is left out there). Printed: seconds per pass and the ratios this/old and
(l2 = 1e-4)/(l2 = 0) within each tree and updater.

Then the least that exactness can cost per coordinate (this tree, in this process, one thread): the exact
step of a coordinate with its own step size needs one exponential, e^(−l2·α), in every minibatch that
updates it, and one more for its catch-up, e^(−l2·c·(T − T_last)), when the minibatch before did not
update it (row-wise AdaGrad needs these once per row, K times fewer). The script counts both
for the very minibatches of the seeded pass, times the cheapest such work — the engine's float32
``exp_nonpositive`` times a weight, in a vector loop over that many coordinates, nothing else — and
prints it beside the pass without regularisation at one thread (timed in the same process).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

SETTINGS = {"rowwise l2=1e-4": {"updater": "rowwise_adagrad", "lrate": 0.1, "l2": 1e-4},
            "rowwise l2=0": {"updater": "rowwise_adagrad", "lrate": 0.1, "l2": 0.0},
            "adagrad l2=1e-4": {"updater": "adagrad", "lrate": 0.3, "l2": 1e-4},
            "adagrad l2=0": {"updater": "adagrad", "lrate": 0.3, "l2": 0.0},
            "rowwise l1=1e-5": {"updater": "rowwise_adagrad", "lrate": 0.1, "l1": 1e-5, "l2": 0.0}}
UPDATERS = ("rowwise", "adagrad")

CHILD = r"""
import json, sys, time
import numpy as np
from mlnb.data.synthetic import make_rcv1_like
from mlnb.models.logistic import LogisticRegression
documents, repeats, settings = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
data = make_rcv1_like(n_documents=documents, n_features=47_236, n_categories=103, test_fraction=0.2, seed=0)
X, Y = data.X_train, data.Y_train
out = {}
for name, params in settings.items():
    try:
        LogisticRegression(npasses=1, **params).fit(X, Y)  # warm-up: compile / load the cache
    except Exception:  # an older tree without this updater
        continue
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        LogisticRegression(npasses=1, **params).fit(X, Y)
        times.append(time.perf_counter() - started)
    out[name] = min(times)
print(json.dumps(out))
"""


def run_tree(tree: Path, documents: int, repeats: int) -> dict:
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    result = subprocess.run([sys.executable, "-c", CHILD, str(documents), str(repeats), json.dumps(SETTINGS)],
                            cwd=tree, env=environment, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=100_000, help="documents generated (80 %% train)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="alternations of this tree and --old")
    parser.add_argument("--old", type=Path, default=None, help="another checkout of mlnb to compare with")
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    trees = {"this": here} | ({"old": args.old.resolve()} if args.old else {})
    best: dict[str, dict] = {}
    for round_ in range(args.rounds):
        for label, tree in trees.items():
            load = os.getloadavg()[0]
            started = time.perf_counter()
            times = run_tree(tree, args.documents, args.repeats)
            print(f"round {round_ + 1} {label:4s} (load {load:.1f}, {time.perf_counter() - started:.0f} s): "
                  + "  ".join(f"{name} {seconds:.3f} s" for name, seconds in times.items()), flush=True)
            best[label] = {name: min(seconds, best.get(label, {}).get(name, float("inf")))
                           for name, seconds in times.items()}
    print(f"\nseconds per pass, minimum over rounds ({int(args.documents * 0.8):,} training documents):")
    for label, times in best.items():
        print(f"  {label:4s} " + "  ".join(f"{name} {seconds:.3f}" for name, seconds in times.items()))
        for updater in UPDATERS:
            if f"{updater} l2=1e-4" in times and f"{updater} l2=0" in times:
                print(f"       {updater}: l2=1e-4 / l2=0 = {times[f'{updater} l2=1e-4'] / times[f'{updater} l2=0']:.3f}")
    if "old" in best:
        print("  this / old: " + "  ".join(f"{name} {best['this'][name] / best['old'][name]:.3f}"
                                           for name in SETTINGS if name in best["old"]))
    exact_regularisation_floor(args.documents, args.repeats)


def exact_regularisation_floor(documents: int, repeats: int) -> None:
    """Print the exponentials one exactly regularised pass needs and the least time they take (module
    docstring), beside the unregularised pass, both at one thread."""
    import numba
    import numpy as np

    from mlnb.data.synthetic import make_rcv1_like
    from mlnb.models._float32_math import exp_nonpositive
    from mlnb.models.logistic import LogisticRegression
    from mlnb.models.logistic.minibatch import InMemorySource

    @numba.njit(fastmath={"nnan", "ninf", "nsz"})
    def decay(W, Y, out, rows):  # out = e^(−Y)·W over ``rows`` rows in all: one exponential and one product each
        done = 0  # (into another array: W decayed again and again would reach subnormal numbers, slow on x86)
        while done < rows:
            n = min(rows - done, W.shape[0])
            for i in range(n):
                for k in range(W.shape[1]):
                    out[i, k] = exp_nonpositive(-Y[i, k]) * W[i, k]
            done += n

    data = make_rcv1_like(n_documents=documents, n_features=47_236, n_categories=103, test_fraction=0.2, seed=0)
    X, Y = data.X_train, data.Y_train
    V, K = X.shape[1], Y.shape[1]
    last = np.full(V, -1)  # the minibatch that last updated each word (−1: none yet)
    updates = catch_ups = 0
    rng = np.random.default_rng(LogisticRegression().random_state)  # the fit's own first-pass order
    for step, (X_B, _) in enumerate(InMemorySource(X, Y, LogisticRegression().batch_size).minibatches(rng)):
        rows = np.unique(X_B.indices)
        updates += rows.size
        catch_ups += int(((last[rows] >= 0) & (last[rows] < step - 1)).sum())
        last[rows] = step
    coordinates = (updates + catch_ups) * K
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        # a block of rows that stays in the cache, gone over again and again: the exponentials' cost alone
        W = np.full((16_384, K), 0.5, dtype=np.float32)
        Y_ = np.random.default_rng(0).exponential(2.0, size=W.shape).astype(np.float32)
        out = np.empty_like(W)
        decay(W, Y_, out, 1)  # compile
        exps = min(_seconds(decay, W, Y_, out, updates + catch_ups) for _ in range(repeats))
        per_coordinate = {"updater": "adagrad", "lrate": 0.3, "l2": 0.0}
        LogisticRegression(npasses=1, **per_coordinate).fit(X[:2000], Y[:2000])
        plain = min(LogisticRegression(npasses=1, **per_coordinate).fit(X, Y).history_[0]["seconds"]
                    for _ in range(repeats))
    finally:
        numba.set_num_threads(threads)
    print(f"\nthe least exactness costs, one thread: {updates * K / 1e6:.1f}M exponentials for the updated "
          f"coordinates and {catch_ups * K / 1e6:.1f}M for the catch-ups of one pass ({catch_ups / updates:.0%} of "
          f"the updated rows were behind); alone, in a vector loop: {exps:.3f} s "
          f"({exps / coordinates * 1e9:.2f} ns each), against {plain:.3f} s for the per-coordinate AdaGrad pass "
          f"without regularisation: at least +{exps / plain:.0%} with a step size per coordinate; row-wise "
          f"AdaGrad needs {(updates + catch_ups) / 1e6:.2f}M, one per row: +{exps / K / plain:.1%} "
          f"(load {os.getloadavg()[0]:.1f})")


def _seconds(function, *args) -> float:
    started = time.perf_counter()
    function(*args)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
