"""Wall time of the README's quickstart, `mlnb run configs/quickstart.toml --quiet`, old code against new.

    git worktree add /tmp/qs_old <commit before the change>
    python experiments/bench_quickstart.py --old /tmp/qs_old [--new TREE] [--repeats 3] [--also-help]

Each run is a fresh process (start-up included: the imports are part of what a user waits for), with
the current directory and PYTHONPATH set to the tree being measured: the editable install would
otherwise import the working tree for both (the current directory comes first on sys.path). Old and
new runs alternate, so that other work on the machine slows both alike; the minimum of each is
reported, with their ratio and the load average. Results go to a temporary folder that is removed.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NEW = Path(__file__).resolve().parents[1]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(tree: Path, args: list[str], out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one command in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mlnb_entry", *args, *(["--out", str(out)] if args[0] == "run" else [])],
                          cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if done.returncode != 0:
        sys.exit(f"{tree}: `mlnb {' '.join(args)}` failed (exit {done.returncode}):\n{done.stderr}")
    return seconds, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="a worktree of the code to compare with")
    parser.add_argument("--new", type=Path, default=NEW, help="the tree to measure (default: this one)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--config", default="configs/quickstart.toml")
    parser.add_argument("--also-help", action="store_true", help="time `mlnb --help` too")
    options = parser.parse_args()
    commands = {"run": ["run", options.config, "--quiet"]}
    if options.also_help:
        commands["--help"] = ["--help"]
    # wall time is what a user waits for; CPU time (all threads) is less disturbed by other work on the machine
    best = {(name, which, clock): float("inf") for name in commands for which in ("old", "new")
            for clock in ("wall", "cpu")}
    with tempfile.TemporaryDirectory(prefix="bench_quickstart_") as scratch:
        for which, tree in (("old", options.old.resolve()), ("new", options.new.resolve())):
            # untimed: a fresh worktree compiles every numba kernel into its __pycache__ on its first run
            timed_run(tree, commands["run"], Path(scratch) / which)
        for repeat in range(options.repeats):
            for name, args in commands.items():
                for which, tree in (("old", options.old.resolve()), ("new", options.new.resolve())):
                    seconds, cpu = timed_run(tree, args, Path(scratch) / which)
                    best[name, which, "wall"] = min(best[name, which, "wall"], seconds)
                    best[name, which, "cpu"] = min(best[name, which, "cpu"], cpu)
                    print(f"  {repeat + 1}/{options.repeats} {which} mlnb {' '.join(args)}: {seconds:.2f} s wall, "
                          f"{cpu:.2f} s CPU (load {os.getloadavg()[0]:.2f})", flush=True)
    print(f"cores {os.cpu_count()}, load average now {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for name in commands:
        for clock in ("wall", "cpu"):
            old, new = best[name, "old", clock], best[name, "new", clock]
            print(f"mlnb {name}, {clock} time: old {old:.2f} s, new {new:.2f} s (minimum of {options.repeats}): "
                  f"{old / new:.2f}x")


if __name__ == "__main__":
    main()
