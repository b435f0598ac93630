"""Streaming studies at scale: RCV1-shaped synthetic corpora of 1M and 10M documents as shards.

For each size: generate the corpus as binary shards (47,236 words, 103 categories, ~77 distinct
words and ~3.2 labels per document; written once into --folder, never committed), then run
the same streaming study (multinomial NB and one pass of all-categories LR) in a fresh process,
once in this process (engine.kind = "local") and once on a Dask LocalCluster of --workers
processes, and print

    documents/s of the NB fit (the counting pass), of the LR pass and of scoring + evaluation;
    the peak resident memory of the largest process (which must not grow with the corpus:
    the target is <= 2 GiB at 10M documents);
    the Dask LocalCluster's throughput against the single process on this machine.

    python experiments/bench_scale.py                      # 1M and 10M documents
    python experiments/bench_scale.py --documents 200000   # a quick check
    python experiments/bench_scale.py --documents 1000000 --engines local --old /tmp/old --repeats 4
        # this tree against a worktree of older code (`git worktree add /tmp/old <commit>`), runs
        # alternating, the minimum of each stage and the ratio new/old
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

import numpy as np

from mlnb.config import toml_value
from mlnb.data import synthetic
from mlnb.data.stream import Chunk, ChunkSource, Partition

RCV1_WORDS, RCV1_CATEGORIES = 47_236, 103


class SyntheticShards(ChunkSource):
    """An RCV1-shaped corpus generated chunk by chunk (never whole), to feed ``convert``."""

    def __init__(self, n_documents: int, seed: int = 0, chunk: int = 50_000):
        rng = np.random.default_rng(seed)
        self.corpus = synthetic._Corpus(RCV1_WORDS, RCV1_CATEGORIES, 200, 1.0, rng)
        self.mean_tokens = 77.0 * synthetic._token_scale(self.corpus, 77.0, 0.75, 0.25, RCV1_WORDS, rng)
        self.n_documents_, self.seed, self.chunk = n_documents, seed, chunk
        self.n_features, self.category_names, self.name = RCV1_WORDS, list(self.corpus.names), "synthetic-rcv1"

    def partitions(self):
        return [Partition(path="synthetic", number=0, first_id=0, n_documents=self.n_documents_)]

    def read(self, partition, chunk_size):
        for start in range(0, self.n_documents_, self.chunk):
            m = min(self.chunk, self.n_documents_ - start)
            rng = np.random.default_rng([self.seed, start])
            X, Y = synthetic._generate_chunk(self.corpus, m, self.mean_tokens, 0.75, 0.25, RCV1_WORDS, rng)
            yield Chunk(X, Y, np.arange(start, start + m, dtype=np.int64), "synthetic", start + 1)


def make_shards(folder: Path, n_documents: int) -> Path:
    from mlnb import progress
    from mlnb.data.shards import MANIFEST, convert

    if (folder / MANIFEST).exists():
        print(f"reusing {folder}")
        return folder
    progress.enable(True)
    started = time.perf_counter()
    convert(SyntheticShards(n_documents), folder, shard_documents=250_000, overwrite=True)
    print(f"generated {n_documents:,} documents as shards in {time.perf_counter() - started:.0f} s")
    return folder


CONFIG = """
name = "scale"
[data]
source = "shards"
streaming = true
chunk_size = 20000
shuffle_buffer = 4
[data.shards]
path = {path}
[models.nb]
kind = "naive_bayes"
[models.lr]
kind = "logistic"
npasses = 1
[eval]
bootstrap = 0
[report]
plots = false
[engine]
kind = "{engine}"
n_workers = {workers}
"""


def run_study(folder: Path, engine: str, workers: int, out: Path, tree: Path | None = None) -> dict:
    """One `mlnb run` in a fresh process (of the code in ``tree``, default this one); its timings from
    summary.json and its peak RSS."""
    config = out / f"scale-{engine}.toml"
    config.write_text(CONFIG.format(path=toml_value(str(folder)), engine=engine, workers=workers))
    # a wrapper process whose only child is the run: its RUSAGE_CHILDREN peak is this run's largest
    # process (the mlnb process or one of its Dask workers), not an earlier run's
    wrapper = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
               "stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    started = time.perf_counter()
    tree = tree or Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", wrapper, sys.executable, "-m", "mlnb_entry", "run", str(config),
                           "--out", str(out), "--quiet"], check=True, capture_output=True, text=True, cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree)})
    wall = time.perf_counter() - started
    peak_kib = int(done.stdout.split()[-1])
    summary = json.loads(max(out.rglob("summary.json"), key=lambda p: p.stat().st_mtime).read_text())
    data, models = summary["data"], summary["models"]
    return {"engine": engine, "n_train": data["n_train"], "n_test": data["n_test"], "wall": wall,
            "count_seconds": summary["load_seconds"], "nb_fit": models["nb"]["fit_seconds"],
            "lr_pass": models["lr"]["fit_seconds"], "score": models["nb"]["score_seconds"] + models["lr"]["score_seconds"],
            "evaluate": models["nb"]["eval_seconds"] + models["lr"]["eval_seconds"],
            "macro_auc_nb": models["nb"]["macro_auc"], "macro_auc_lr": models["lr"]["macro_auc"],
            "peak_rss_gib": peak_kib / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "mlnb-scale")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--engines", nargs="+", default=["local", "dask"])
    parser.add_argument("--old", type=Path, help="a worktree of older code to run alternately with this one")
    parser.add_argument("--repeats", type=int, default=3, help="with --old: runs of each")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    if args.old:
        return compare(args)
    rows = []
    for n in args.documents:
        folder = make_shards(args.folder / f"{n}", n)
        for engine in args.engines:
            with tempfile.TemporaryDirectory() as out:
                row = run_study(folder, engine, args.workers, Path(out))
            row["documents"] = n
            rows.append(row)
            n_train, n_test = row["n_train"], row["n_test"]
            print(f"{n:>11,} docs, {engine:>5}: counting pass (NB fit) {n_train / row['count_seconds']:>9,.0f} docs/s, "
                  f"LR pass {n_train / row['lr_pass']:>8,.0f} docs/s, scoring + evaluation "
                  f"{n_test / (row['score'] + row['evaluate']):>8,.0f} docs/s (score {row['score']:.0f} s, evaluate "
                  f"{row['evaluate']:.0f} s), wall {row['wall']:.0f} s; macro AUC NB {row['macro_auc_nb']:.4f}, "
                  f"LR {row['macro_auc_lr']:.4f}; peak RSS of the largest process "
                  f"{row['peak_rss_gib']:.2f} GiB",
                  flush=True)
        local = [r for r in rows if r["documents"] == n and r["engine"] == "local"]
        dask = [r for r in rows if r["documents"] == n and r["engine"] == "dask"]
        if local and dask:
            print(f"{n:>11,} docs: Dask LocalCluster ({args.workers} workers) / one process, throughput: counting "
                  f"{local[0]['count_seconds'] / dask[0]['count_seconds']:.2f}×, LR pass "
                  f"{local[0]['lr_pass'] / dask[0]['lr_pass']:.2f}×, wall {local[0]['wall'] / dask[0]['wall']:.2f}×; "
                  f"LR macro AUC cost of parameter mixing {local[0]['macro_auc_lr'] - dask[0]['macro_auc_lr']:+.4f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    largest = max(rows, key=lambda r: r["documents"])
    print(f"peak RSS at {largest['documents']:,} documents: {largest['peak_rss_gib']:.2f} GiB "
          f"({'meets' if largest['peak_rss_gib'] <= 2 else 'misses'} the 2 GiB target)")


def compare(args) -> None:
    """This tree against ``args.old``, alternating, the minimum of each stage over ``args.repeats`` runs."""
    stages = ("wall", "count_seconds", "lr_pass", "score", "evaluate")
    for n in args.documents:
        folder = make_shards(args.folder / f"{n}", n)
        for engine in args.engines:
            best = {"old": {}, "new": {}}
            for _ in range(args.repeats):
                for name, tree in (("old", args.old.resolve()), ("new", None)):
                    with tempfile.TemporaryDirectory() as out:
                        row = run_study(folder, engine, args.workers, Path(out), tree)
                    for stage in stages:
                        best[name][stage] = min(best[name].get(stage, float("inf")), row[stage])
                    print(f"  {name} {engine}: " + ", ".join(f"{s} {row[s]:.2f} s" for s in stages)
                          + f" (load {os.getloadavg()[0]:.2f})", flush=True)
            for stage in stages:
                old, new = best["old"][stage], best["new"][stage]
                print(f"{n:>11,} docs, {engine:>5}, {stage:>13}: old {old:.2f} s, new {new:.2f} s, new/old "
                      f"{new / old:.3f} (minimum of {args.repeats})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
