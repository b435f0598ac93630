"""How much of each stage runs outside its parallel regions: the part that more cores cannot shorten.

    python experiments/bench_serial.py                      # 200k/50k documents, as bench_threads
    python experiments/bench_serial.py --documents 50000 --repeats 3
    python experiments/bench_serial.py --old ../other-checkout   # the same stages of another tree, alternately

Amdahl's law: a stage that spends s of its one-thread seconds T outside parallel code takes at least
s + (T − s)/t seconds on t threads, so its speed-up is at most T / (s + (T − s)/t). On a 2-core
machine the speed-up from 1 to 16 threads cannot be timed, but s can be measured, and it is the
first bound on it: the targets of issue 26 (LR pass and NB fit ≥ 8×, scoring ≥ 10× at 16 threads)
need s below ~6 %, ~6 % and ~4 % of T.

Each stage (those of ``bench_threads.py`` whose parallel parts are numba kernels: NB fit, scoring,
the LR pass, DeLong tests and intervals, bootstrap) runs on one thread (``numba.set_num_threads(1)``),
and the CPU seconds of the calling thread (``time.thread_time``: what other processes' load does not
inflate) are split into those inside the numba functions compiled with ``parallel=True`` (every such
function of mlnb's modules, wrapped with a timer after a first untimed run compiled them) and the
``POOLED`` function (``map_pieces``: numpy in pieces on a thread pool), and the rest: numpy and scipy calls,
Python glue, serial compiled code. The minimum over ``--repeats`` runs of each.

The bound is optimistic: a parallel region itself may hold serial loops, and its threads may wait on
one another (``bench_threads.py`` measures that on the machine at hand). ``evaluate()`` and ``roc_auc``
are not here: their parallel parts are thread-pool tasks, which a one-thread run calls in line.

With ``--old DIR`` the same stages of the checkout at DIR run in a subprocess after each round of this
tree's, so that both see the same load; the table then has both.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_threads import load, make_data, stages  # noqa: E402

NUMBA_STAGES = ("NB fit", "scoring", "LR pass", "DeLong tests", "DeLong intervals", "bootstrap")
#: functions that split their work over a thread pool beyond one thread (numpy lets the threads run): parallel
#: parts too, though not numba's
POOLED = (("mlnb._numba", "map_pieces"),)
CHECKED_THREADS = (2, 4, 8, 16)


class RegionClock:
    """The CPU seconds of the calling thread spent inside mlnb's parallel numba functions while active."""

    def __init__(self):
        self.inside = 0.0
        self._depth = 0
        self._wrapped: list[tuple[object, str, object]] = []

    def _timed(self, dispatcher):
        def region(*args, **kwargs):
            self._depth += 1
            started = time.thread_time() if self._depth == 1 else None
            try:
                return dispatcher(*args, **kwargs)
            finally:
                self._depth -= 1
                if started is not None:
                    self.inside += time.thread_time() - started
        return region

    def install(self) -> int:
        """Wrap every parallel dispatcher in every loaded mlnb module, and the ``POOLED`` functions; returns how
        many there are."""
        import importlib

        wrappers = {}
        pooled = {id(getattr(importlib.import_module(module), name, None)) for module, name in POOLED} - {id(None)}
        for module in [m for name, m in sys.modules.items() if name == "mlnb" or name.startswith("mlnb.")]:
            for name, value in list(vars(module).items()):
                parallel = isinstance(value, numba.core.dispatcher.Dispatcher) and value.targetoptions.get("parallel")
                if parallel or id(value) in pooled:
                    wrapper = wrappers.setdefault(id(value), self._timed(value))
                    self._wrapped.append((module, name, value))
                    setattr(module, name, wrapper)
        return len(wrappers)

    def remove(self) -> None:
        for module, name, value in self._wrapped:
            setattr(module, name, value)
        self._wrapped.clear()


def measure(documents: int, repeats: int, resamples: int) -> dict:
    """{stage: (one-thread CPU seconds, of them outside the parallel regions)}, minima over ``repeats``."""
    X, Y, X_test, Y_test = make_data(documents, max(documents // 4, 1))
    work, _ = stages(X, Y, X_test, Y_test, resamples)
    numba.set_num_threads(1)
    for name in NUMBA_STAGES:  # compile or load every kernel before the wrappers go in
        work[name][0]()
    clock = RegionClock()
    clock.install()
    found = {}
    try:
        for name in NUMBA_STAGES:
            run = work[name][0]
            for _ in range(repeats):
                clock.inside = 0.0
                started = time.thread_time()
                run()
                total = time.thread_time() - started
                outside = total - clock.inside
                best_total, best_outside = found.get(name, (np.inf, np.inf))
                found[name] = (min(best_total, total), min(best_outside, outside))
    finally:
        clock.remove()
    return found


def bound(total: float, outside: float, threads: int) -> float:
    """Amdahl's bound on the speed-up at ``threads`` threads."""
    return total / (outside + (total - outside) / threads)


def print_table(runs: dict) -> None:
    tags = list(runs)
    head = f"{'stage':<17}" + "".join(f"{tag:>44}" for tag in tags)
    print(head)
    print(f"{'':<17}" + "".join(f"{'1-thread s  outside s  share  bound 2/16':>44}" for _ in tags))
    print("-" * len(head))
    for name in NUMBA_STAGES:
        cells = []
        for tag in tags:
            total, outside = runs[tag][name]
            cells.append(f"{total:10.3f}  {outside:9.4f}  {100 * outside / total:4.1f}%  "
                         f"{bound(total, outside, 2):5.2f}×/{bound(total, outside, 16):5.1f}×")
        print(f"{name:<17}" + "".join(f"{cell:>44}" for cell in cells))
    print("(outside: CPU seconds of the one thread outside the parallel regions; bound: Amdahl's limit on the "
          "speed-up at 2 and 16 threads)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=200_000, help="training documents (test: a quarter)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each stage; the minima are kept")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples")
    parser.add_argument("--rounds", type=int, default=1, help="rounds (with --old: this tree, then the other)")
    parser.add_argument("--old", default="", help="another checkout, measured alternately in a subprocess")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the subprocess's answer
    options = parser.parse_args()
    if options.json:
        print(json.dumps(measure(options.documents, options.repeats, options.resamples)))
        return
    print(f"{os.cpu_count()} CPUs, numba {numba.__version__}; load {load()}", flush=True)
    runs: dict = {}
    for r in range(options.rounds):
        mine = measure(options.documents, options.repeats, options.resamples)
        runs["this tree"] = {k: tuple(min(a, b) for a, b in zip(v, runs.get("this tree", {}).get(k, (np.inf,) * 2)))
                             for k, v in mine.items()}
        if options.old:
            env = {**os.environ, "PYTHONPATH": str(Path(options.old).resolve())}
            done = subprocess.run([sys.executable, str(Path(options.old) / "experiments" / "bench_serial.py")
                                   if (Path(options.old) / "experiments" / "bench_serial.py").exists()
                                   else __file__, "--json", "--documents", str(options.documents),
                                   "--repeats", str(options.repeats), "--resamples", str(options.resamples)],
                                  cwd=options.old, env=env, capture_output=True, text=True, check=False)
            if done.returncode:
                sys.exit(f"the run of {options.old} failed: {done.stderr.strip()[-2000:]}")
            theirs = json.loads(done.stdout.strip().splitlines()[-1])
            runs["--old"] = {k: tuple(min(a, b) for a, b in zip(v, runs.get("--old", {}).get(k, (np.inf,) * 2)))
                             for k, v in theirs.items()}
        print(f"round {r + 1}/{options.rounds} done; load {load()}", flush=True)
    print()
    print_table(runs)


if __name__ == "__main__":
    main()
