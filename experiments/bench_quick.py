"""Where a small study's time goes, `mlnb run CONFIG` against `mlnb run CONFIG --quick`, stage by stage.

    python experiments/bench_quick.py [--configs configs/quickstart.toml configs/smsspam.toml] [--repeats 3]

Each run is a fresh process (`python -m mlnb_entry run CONFIG --quiet`, start-up included), the full and
the quick run alternating so that other work on the machine slows both alike. Per config and kind the
run of least wall time is reported with its stages from summary.json (wall and CPU seconds: the CPU
seconds are less disturbed by other work), the figures' share of it, and the load average around the
runs. A config whose data is missing is skipped. Results go to a temporary folder that is removed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the stages that are the models' own work
MODELS = ("features", "fit", "decide", "score")


def one_run(config: str, quick: bool, out: Path) -> tuple[float, dict]:
    """(wall seconds, {stage: (wall, CPU seconds)}) of one run in a fresh process."""
    before = set(out.rglob("summary.json"))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mlnb_entry", "run", config, "--quiet", "--out", str(out),
                           *(["--quick"] if quick else [])], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"`mlnb run {config}{' --quick' if quick else ''}` failed (exit {done.returncode}):\n{done.stderr}")
    (summary,) = set(out.rglob("summary.json")) - before
    stages = {row["stage"]: (row["seconds"], row["cpu_seconds"]) for row in json.loads(summary.read_text())["timings"]}
    return wall, stages


def split(stages: dict) -> str:
    """The stages in groups: start-up, load, the models, evaluation, bootstrap, figures, writing."""
    def seconds(names, clock):
        return sum(stages[name][clock] for name in stages if name in names or name.split()[0] in names)

    groups = {"start-up": ("start-up",), "load": ("load",), "compiling": ("compiling",), "models": MODELS,
              "evaluate": ("evaluate", "intervals", "comparisons"), "bootstrap": ("bootstrap",),
              "plots": ("plots",), "writing": ("writing",)}
    total = stages["total"]
    parts = [f"{name} {seconds(names, 0):.2f}/{seconds(names, 1):.2f}" for name, names in groups.items()]
    return (" ".join(parts) + f" | total {total[0]:.2f}/{total[1]:.2f} s (wall/CPU); figures "
            f"{100 * stages.get('plots', (0, 0))[0] / total[0]:.0f} % of the wall, "
            f"{100 * stages.get('plots', (0, 0))[1] / max(total[1], 1e-9):.0f} % of the CPU time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=["configs/quickstart.toml", "configs/smsspam.toml"])
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    loads = [os.getloadavg()[0]]
    best: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench_quick_") as scratch:
        for config in options.configs:
            try:
                subprocess.run([sys.executable, "-m", "mlnb_entry", "show-config", config], cwd=ROOT, check=True,
                               capture_output=True)
            except subprocess.CalledProcessError:
                print(f"{config}: skipped (its config does not load)")
                continue
            for _ in range(options.repeats):
                for quick in (False, True):
                    try:
                        wall, stages = one_run(config, quick, Path(scratch))
                    except SystemExit as error:
                        if "no such file" in str(error) or "not found" in str(error):
                            print(f"{config}: skipped (its data is missing)")
                            break
                        raise
                    loads.append(os.getloadavg()[0])
                    key = (config, "--quick" if quick else "full")
                    if key not in best or wall < best[key][0]:
                        best[key] = (wall, stages)
    for (config, kind), (wall, stages) in best.items():
        print(f"{config} {kind}: {wall:.2f} s wall (least of {options.repeats})\n  {split(stages)}")
    print(f"load average (1 min) during the runs: {min(loads):.1f}-{max(loads):.1f}")


if __name__ == "__main__":
    main()
