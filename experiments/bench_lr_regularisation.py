"""What exact (lazy, just-in-time) regularisation costs a minibatch LR pass, side by side with another tree.

    python experiments/bench_lr_regularisation.py --old /tmp/mlnb-head     # a checkout of an earlier commit
    python experiments/bench_lr_regularisation.py --documents 200000 --repeats 5

Times one pass of ``LogisticRegression(npasses=1).fit`` (AdaGrad, batch 1000, the numba kernel, every
core) on one synthetic RCV1-shaped training set, for l2 = 1e-4 (the default), l2 = 0 (no regulariser:
no catch-up region) and l1 = 1e-5, in this tree and, with ``--old``, in the other tree (run as
subprocesses alternately, so that both see the same machine load; each time is the minimum of
``--repeats`` passes after one warm-up pass that compiles or loads numba's cache). Printed: seconds per
pass and the ratios this/old and (l2 = 1e-4)/(l2 = 0) within each tree.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

SETTINGS = {"l2=1e-4": {"l2": 1e-4}, "l2=0": {"l2": 0.0}, "l1=1e-5": {"l1": 1e-5, "l2": 0.0}}

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
    LogisticRegression(npasses=1, **params).fit(X, Y)  # warm-up: compile / load the cache
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
        print(f"  {label:4s} " + "  ".join(f"{name} {seconds:.3f}" for name, seconds in times.items())
              + f"   l2=1e-4 / l2=0: {times['l2=1e-4'] / times['l2=0']:.3f}")
    if "old" in best:
        print("  this / old: " + "  ".join(f"{name} {best['this'][name] / best['old'][name]:.3f}"
                                           for name in SETTINGS))


if __name__ == "__main__":
    main()
