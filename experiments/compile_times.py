"""Seconds numba takes to compile each listed kernel combination (mlnb/_kernel_signatures.py), one at a time, into
an empty cache: what the first study's compiling is made of, largest first, and their total (the CPU seconds
``mlnb.precompile.COMPILE_CPU_SECONDS`` estimates).

    NUMBA_CACHE_DIR=$(mktemp -d) python experiments/compile_times.py [--top 30]

Run it with an empty NUMBA_CACHE_DIR (a filled cache loads instead of compiling); note the load average.
"""

from __future__ import annotations

import argparse
import os
import time

from mlnb import precompile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=30)
    options = parser.parse_args()
    names = precompile._numba_types()
    rows = []
    for module, qualname, signatures in precompile.tasks():
        kernel = precompile._kernel(module, qualname)
        for text in signatures:
            started = time.perf_counter()
            kernel.compile(eval(text, {"__builtins__": {}}, names))  # noqa: S307 - the package's own list
            rows.append((time.perf_counter() - started, f"{module}.{qualname}", text[:70]))
    rows.sort(reverse=True)
    print(f"{len(rows)} combinations, {sum(row[0] for row in rows):.1f} s in all (one process; load average "
          f"{os.getloadavg()[0]:.2f})")
    for seconds, name, text in rows[:options.top]:
        print(f"{seconds:7.2f} s  {name} {text}")


if __name__ == "__main__":
    main()
