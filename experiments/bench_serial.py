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

``--study`` measures the whole RCV1-scale study instead (``mlnb run configs/quickstart.toml`` on
781,265 documents, 47,236 words, 20 % test, as ``bench_threads.py`` runs it), in a child process with
NUMBA_NUM_THREADS = ``--study-threads`` (2). Its parallel parts are not only numba's: thread pools
(the corpus's chunks, ``evaluate()``'s categories), numpy calls that let other threads run, and the
processes that draw the figures on many cores (``mlnb.report.drawing``; ``--drawing-from 2`` uses them
on 2 threads). So this process samples the threads of the child and of every process it starts
instead, every ~``--interval-ms`` ms, from /proc: how many are running or waiting for a core (state
R) or in the kernel on a disk (D). A thread that waits for Python's lock, for another thread or for
work sleeps (S) and is not counted. Each interval between
samples goes to the stage of the ``--profile`` table open at its start (the child logs when each
stage begins and ends; ``fit <model>`` is the span its fit took). Per stage:

    serial s   = seconds during which at most one thread wanted a core
    parallel   = the rest; its thread-seconds W = Σ (threads wanting a core) × seconds

On t cores a stage takes at least serial + W / t (the parallel work spread perfectly), so the
study's speed-up from the measured thread count to t is at most T / Σ (serial + W / t). Another
process's load does not inflate the serial seconds (its threads are not the child's), but a stage
that waits on the disk or sleeps counts as serial, as it should: more cores do not shorten it.
The bound is optimistic (bandwidth, imbalance between more threads); what it names is the work that
no number of cores shortens.

``--study-config FILE`` profiles the study of another config instead (as given: no synthetic
overrides), for example the 10M-document streamed study that ``bench_scale.py`` writes::

    python experiments/bench_scale.py --documents 10000000 --engines local --folder /work/scale
    python experiments/bench_serial.py --study --study-config scale.toml   # its [data.shards] path: /work/scale/…
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
from bench_threads import ROOT, load, make_data, stages  # noqa: E402

NUMBA_STAGES = ("NB fit", "scoring", "LR pass", "DeLong tests", "DeLong intervals", "bootstrap")
#: functions that split their work over a thread pool beyond one thread (numpy lets the threads run): parallel
#: parts too, though not numba's
POOLED = (("mlnb._kernels.jit", "map_pieces"), ("mlnb._kernels.jit", "map_threads"))
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
        modules = [m for name, m in sys.modules.items() if name == "mlnb" or name.startswith("mlnb.")]
        # a parallel function that another compiled function calls stays as it is: replaced by a Python
        # wrapper, the caller could not compile (its time is then its caller's)
        called = {name for module in modules for value in vars(module).values()
                  if isinstance(value, numba.core.dispatcher.Dispatcher) for name in value.py_func.__code__.co_names}
        for module in modules:
            for name, value in list(vars(module).items()):
                parallel = isinstance(value, numba.core.dispatcher.Dispatcher) and value.targetoptions.get("parallel") \
                    and name not in called
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


RCV1_WORDS, RCV1_DOCUMENTS = 47_236, 781_265
#: the child's environment variable for ``--drawing-from``
DRAWING_FROM = "MLNB_BENCH_DRAWING_FROM"
#: thread states that want a core: running or runnable (R), in the kernel on a disk (D)
WANTING = (b"R", b"D")


def study_child(events_path: str, arguments: list[str]) -> None:
    """The child of ``--study``: ``mlnb run …`` as the command runs it, logging to ``events_path`` (JSON) when
    each stage of its ``--profile`` table begins and ends, and the span of each model's fit."""
    from mlnb import timings

    events = []
    enter, leave, add = timings.Timings._enter, timings.Timings._leave, timings.Timings._add

    def logged_enter(self, name):
        events.append(("begin", name, time.perf_counter()))
        enter(self, name)

    def logged_leave(self):
        name = self._open[-1].name
        leave(self)
        events.append(("end", name, time.perf_counter()))

    def logged_add(self, name, wall, cpu):  # seconds measured elsewhere (each model's fit): just ended
        now = time.perf_counter()
        events.append(("span", name, now - wall, now))
        add(self, name, wall, cpu)

    timings.Timings._enter, timings.Timings._leave, timings.Timings._add = logged_enter, logged_leave, logged_add
    if os.environ.get(DRAWING_FROM):
        from mlnb.report import drawing

        drawing.PROCESSES_FROM_THREADS = int(os.environ[DRAWING_FROM])
    places = _log_parallel_calls(events)
    sys.argv = ["mlnb", *arguments]
    import mlnb_entry

    try:
        mlnb_entry.main()
    finally:
        places.remove()
        Path(events_path).write_text(json.dumps(events))


def _log_parallel_calls(events: list) -> RegionClock:
    """Every mlnb module imported, and each outermost call of its parallel functions (``RegionClock``'s)
    from the main thread logged to ``events`` as ("call", name, start, end): where a stage's serial
    seconds are spent, inside such a function (a region whose threads wait for one another) or outside."""
    import importlib
    import pkgutil
    import threading

    import mlnb

    for module in pkgutil.walk_packages(mlnb.__path__, "mlnb."):
        try:
            importlib.import_module(module.name)
        except Exception:  # noqa: BLE001  (an optional extra's module: cupy, MLflow)
            continue
    main, depth = threading.main_thread().ident, [0]
    clock = RegionClock()

    def logged(dispatcher, name):
        def call(*args, **kwargs):
            if threading.get_ident() != main:
                return dispatcher(*args, **kwargs)
            depth[0] += 1
            started = time.perf_counter()
            try:
                return dispatcher(*args, **kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    events.append(("call", name, started, time.perf_counter()))
        return call

    clock._timed = lambda value: logged(value, getattr(value, "__name__", "?"))
    clock.install()
    return clock


def _read(path: str) -> bytes | None:
    try:
        descriptor = os.open(path, os.O_RDONLY)
        try:
            return os.read(descriptor, 4096)
        finally:
            os.close(descriptor)
    except OSError:  # the thread or process ended meanwhile
        return None


def _descendants(pid: int) -> list[int]:
    """The process and every process it started, and they started (the fork server and the processes
    that draw the figures), from /proc's lists of each thread's children."""
    found, queue = [], [pid]
    while queue:
        process = queue.pop()
        found.append(process)
        try:
            tids = os.listdir(f"/proc/{process}/task")
        except OSError:
            continue
        for tid in tids:
            children = _read(f"/proc/{process}/task/{tid}/children")
            queue += [int(child) for child in (children or b"").split()]
    return found


def _wanting_threads(processes: list[int]) -> int | None:
    """How many threads of the processes want a core now (``WANTING``); None once the first has ended."""
    wanting = 0
    for number, process in enumerate(processes):
        try:
            tids = os.listdir(f"/proc/{process}/task")
        except OSError:
            if number == 0:
                return None
            continue
        for tid in tids:
            stat = _read(f"/proc/{process}/task/{tid}/stat")
            if stat is not None:
                state = stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3]  # the field after the name (may hold ')')
                wanting += state in WANTING
    return wanting


def sample_study(threads: int, documents: int, interval: float, out: Path, drawing_from: int = 0,
                 config: str = "") -> tuple[list, list, float, str]:
    """Run the study in a child with NUMBA_NUM_THREADS = threads, sampling the states of its threads and
    of the processes it starts every ``interval`` seconds: (samples [(perf_counter, threads wanting a
    core)], stage events, process wall, stdout). ``drawing_from``: the child's
    ``mlnb.report.drawing.PROCESSES_FROM_THREADS`` (0: as it is). ``config``: that config's study, as
    it is, instead of the quickstart's at RCV1 scale (``documents``)."""
    events_path = out / "events.json"
    env = {**os.environ, "NUMBA_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)}
    if drawing_from:
        env[DRAWING_FROM] = str(drawing_from)
    study = [str(Path(config).resolve())] if config else [
        "configs/quickstart.toml", "--set", f"data.synthetic.n_documents={documents}",
        "--set", f"data.synthetic.n_features={RCV1_WORDS}", "--set", "data.test_fraction=0.2"]
    command = [sys.executable, __file__, "--study-child", str(events_path), "run", study[0],
               "--quiet", "--profile", "--out", str(out), *study[1:]]
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples, processes, looked = [], [child.pid], 0.0
    while child.poll() is None:
        now = time.perf_counter()
        if now - looked > 0.02:  # the processes it started, looked for every 20 ms
            processes, looked = _descendants(child.pid), now
        wanting = _wanting_threads(processes)
        if wanting is None:
            break
        samples.append((now, wanting))
        time.sleep(interval)
    stdout, stderr = child.communicate()
    wall = time.perf_counter() - started
    if child.returncode != 0 or not events_path.exists():
        sys.exit(f"the study failed (exit {child.returncode}): {stderr.strip()[-2000:]}")
    return samples, json.loads(events_path.read_text()), wall, stdout


def stage_spans(events: list) -> list[tuple[float, float, int, str]]:
    """(start, end, depth, stage) of every stage entered or added; a fit's span is inside its ``fit`` stage."""
    spans, open_ = [], []
    for event in events:
        if event[0] == "begin":
            open_.append((event[1], event[2]))
        elif event[0] == "end":
            name, start = open_.pop()
            spans.append((start, event[2], len(open_), name))
        else:
            spans.append((event[2], event[3], len(open_) + 1, event[1]))
    return spans


def parallelism_profile(samples: list, events: list) -> tuple[dict, float]:
    """{stage: [seconds, serial seconds, parallel thread-seconds]} over the recording (its first to its last
    stage), each sampled interval going to the innermost stage open at its start (``other`` where none
    is); and the recording's seconds."""
    spans = stage_spans([e for e in events if e[0] != "call"])
    first, last = min(s[0] for s in spans), max(s[1] for s in spans)
    table: dict = {}
    for name in [s[3] for s in sorted(spans)] + ["other"]:
        table.setdefault(name, [0.0, 0.0, 0.0])
    for (at, wanting), (after, _) in zip(samples, samples[1:]):
        if not first <= at < last:
            continue
        inside = [s for s in spans if s[0] <= at < s[1]]
        name = max(inside, key=lambda s: s[2])[3] if inside else "other"
        seconds = min(after, last) - at
        row = table[name]
        row[0] += seconds
        if wanting <= 1:
            row[1] += seconds
        else:
            row[2] += wanting * seconds
    return table, last - first


def serial_places(samples: list, events: list) -> dict:
    """{(stage, place): serial seconds}: each interval in which at most one thread wanted a core, by the
    stage open at its start and the parallel function the main thread was in then ("outside" if none)."""
    import bisect

    spans = stage_spans([e for e in events if e[0] != "call"])
    calls = sorted((e[2], e[3], e[1]) for e in events if e[0] == "call")
    starts = [c[0] for c in calls]
    first, last = min(s[0] for s in spans), max(s[1] for s in spans)
    found: dict = {}
    for (at, wanting), (after, _) in zip(samples, samples[1:]):
        if wanting > 1 or not first <= at < last:
            continue
        inside = [s for s in spans if s[0] <= at < s[1]]
        stage = max(inside, key=lambda s: s[2])[3] if inside else "other"
        i = bisect.bisect_right(starts, at) - 1
        place = calls[i][2] if i >= 0 and calls[i][1] > at else "outside"
        found[stage, place] = found.get((stage, place), 0.0) + min(after, last) - at
    return found


def study_bound(options) -> None:
    """``--study``: the whole study's parallelism profile and Amdahl's bound on more cores."""
    import tempfile

    threads = options.study_threads
    print(f"{os.cpu_count()} CPUs, numba {numba.__version__}; load {load()}", flush=True)
    what = (f"`mlnb run {options.study_config}`" if options.study_config else
            f"`mlnb run configs/quickstart.toml`, {options.study_documents:,} documents, {RCV1_WORDS:,} words, 20 % test")
    print(f"the whole study ({what}) on {threads} threads, its threads sampled every ~{options.interval_ms:g} ms",
          flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        samples, events, wall, stdout = sample_study(threads, options.study_documents, options.interval_ms / 1000,
                                                     Path(scratch), options.drawing_from, options.study_config)
    table, recorded = parallelism_profile(samples, events)
    gaps = np.diff([at for at, _ in samples])
    print(f"{len(samples):,} samples, a median {1000 * np.median(gaps):.2f} ms apart (at most "
          f"{1000 * gaps.max():.1f} ms); load {load()}\n")
    counts = [4, 8, 16]
    head = (f"{'stage':<13}{'seconds':>9}{'serial s':>10}{'parallel':>10}{'threads':>9}  "
            + "  ".join(f"{'≥ s at ' + str(t):>9}" for t in counts))
    print(head)
    print("-" * len(head))
    totals = np.zeros(3)
    for name, (seconds, serial, work) in table.items():
        if seconds <= 0:
            continue
        totals += (seconds, serial, work)
        wide = seconds - serial
        print(f"{name:<13}{seconds:9.3f}{serial:10.3f}{wide:10.3f}{(work / wide if wide > 0 else 0):9.2f}  "
              + "  ".join(f"{serial + work / t:9.3f}" for t in counts))
    print("-" * len(head))
    seconds, serial, work = totals
    print(f"{'total':<13}{seconds:9.3f}{serial:10.3f}{seconds - serial:10.3f}"
          f"{(work / (seconds - serial) if seconds > serial else 0):9.2f}  "
          + "  ".join(f"{serial + work / t:9.3f}" for t in counts))
    print(f"\n(seconds: sampled over the recording, {recorded:.3f} s; serial: at most one thread wanted a core; "
          f"parallel: seconds with more, threads: their mean; ≥ s at t: serial + thread-seconds / t)")
    print(f"Amdahl's bound on the study's speed-up from {threads} threads: "
          + ", ".join(f"{seconds / (serial + work / t):.2f}× at {t}" for t in counts)
          + f"; serial share {100 * serial / seconds:.1f} %")
    print(f"process wall {wall:.2f} s (start-up and imports included: {wall - recorded:.2f} s outside the recording)")
    places = sorted(serial_places(samples, events).items(), key=lambda item: -item[1])
    print("\nwhere the serial seconds are (stage, and the parallel function the main thread was in, or "
          "'outside' them), the largest:")
    for (stage, place), seconds in places[:options.places]:
        print(f"  {stage:<13} {place:<32} {seconds:7.3f} s")
    profile = stdout.split("where the time went (--profile):")[-1].strip()
    print("\nthe study's own --profile table:\n" + profile)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=200_000, help="training documents (test: a quarter)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each stage; the minima are kept")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap resamples")
    parser.add_argument("--rounds", type=int, default=1, help="rounds (with --old: this tree, then the other)")
    parser.add_argument("--old", default="", help="another checkout, measured alternately in a subprocess")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the subprocess's answer
    parser.add_argument("--study", action="store_true", help="the whole RCV1-scale study's parallelism profile")
    parser.add_argument("--study-documents", type=int, default=RCV1_DOCUMENTS, help="documents of the study")
    parser.add_argument("--study-threads", type=int, default=2, help="NUMBA_NUM_THREADS of the study")
    parser.add_argument("--study-config", default="", help="--study: this config's study, as it is (not the "
                                                           "quickstart at RCV1 scale)")
    parser.add_argument("--interval-ms", type=float, default=1.0, help="milliseconds between samples")
    parser.add_argument("--places", type=int, default=20, help="the largest serial places to list (--study)")
    parser.add_argument("--drawing-from", type=int, default=0,
                        help="--study: draw the figures in processes from this many threads (mlnb.report.drawing)")
    if len(sys.argv) > 2 and sys.argv[1] == "--study-child":  # the study's process: the rest is mlnb's
        study_child(sys.argv[2], sys.argv[3:])
        return
    options = parser.parse_args()
    if options.study:
        study_bound(options)
        return
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
