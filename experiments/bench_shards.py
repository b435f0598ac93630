"""Benchmark: documents/s reading an RCV1-shaped corpus as svmlight text vs binary shards, in one run.

    python experiments/bench_shards.py                       # 200k documents (~120 MB of svmlight)
    python experiments/bench_shards.py --documents 50000 --repeats 5

Generates a synthetic corpus with RCV1-v2's shape (47,236 words, 103 categories, ~77 distinct
words a document; counts as values) into a temporary folder (deleted afterwards unless --keep),
writes it as svmlight (plain and .gz, 4 shards each) and as binary shards (``mlnb convert``'s
format: raw .npy files, memory-mapped), and times reading every document, in chunks of
``--chunk-size``, as validated CSR chunks:

    in-memory loader       mlnb.data.svmlight.read_svmlight (scikit-learn's reader), whole files
    svmlight stream        SvmlightSource: the compiled block parser (plain, .gz)
    svmlight stream, sk    SvmlightSource(use_numba=False): scikit-learn's parser on each block
    scan pass              the pass SvmlightSource makes when n_features / categories are not given
    shards (.npy, mmap)    ShardSource
    .npz / compressed .npz the same arrays in one .npz per shard, loaded whole (np.load cannot map an
                           .npz member), then cut into chunks the same way: the alternatives considered

Each is the minimum of --repeats runs, alternated; the files are read once before timing, so
every reader starts from the page cache (no reader pays for the disk). Ratios are against the
in-memory loader measured in the same run. The load average is printed before and after.
Then the peak resident memory of a fresh interpreter reading the whole corpus each way (against
one that only imports mlnb): the streaming readers' does not grow with the corpus. Last (unless
--text-documents 0), text: a CSV corpus read by the in-memory text loader (vectorise, seeded split)
against the streams of both sides of a hash split: the first pass (categories, and the
CountVectorizer vocabulary of the training documents) and one read pass of train and test.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from mlnb.data.shards import ShardSource, convert, read_manifest
from mlnb.data.stream import SvmlightSource, make_chunk
from mlnb.data.svmlight import read_svmlight
from mlnb.data.synthetic import make_rcv1_like

N_FEATURES, N_CATEGORIES, SHARDS = 47_236, 103, 4


def folder_bytes(paths) -> int:
    total = 0
    for path in paths:
        path = Path(path)
        total += sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size
    return total


def write_corpus(folder: Path, n_documents: int, seed: int) -> None:
    data = make_rcv1_like(n_documents=n_documents, n_features=N_FEATURES, n_categories=N_CATEGORIES, seed=seed)
    X, Y = data.X, data.Y.tocsr()
    bounds = np.linspace(0, n_documents, SHARDS + 1).astype(int)
    for k in range(SHARDS):
        path = folder / f"part-{k}.svm"
        dump_svmlight_file(X[bounds[k]:bounds[k + 1]], Y[bounds[k]:bounds[k + 1]], str(path), multilabel=True,
                           zero_based=False)
        with open(path, "rb") as plain:
            import gzip

            with gzip.open(folder / f"part-{k}.svm.gz", "wb", compresslevel=6) as packed:
                shutil.copyfileobj(plain, packed)


def write_npz(shard_folder: Path, out: Path, compressed: bool) -> None:
    """The shards' arrays as one .npz per shard (the alternative format measured)."""
    out.mkdir()
    save = np.savez_compressed if compressed else np.savez
    for shard in sorted(shard_folder.glob("shard-*")):
        save(out / f"{shard.name}.npz", **{p.stem: np.load(p) for p in shard.glob("*.npy")})


def read_npz(folder: Path, n_features: int, n_categories: int, chunk_size: int) -> int:
    documents = 0
    for path in sorted(folder.glob("shard-*.npz")):
        with np.load(path, allow_pickle=False) as arrays:
            a = {key: arrays[key] for key in arrays.files}  # each member read whole
        m = a["ids"].size
        for start in range(0, m, chunk_size):
            stop = min(start + chunk_size, m)
            x0, x1, y0, y1 = a["X_indptr"][start], a["X_indptr"][stop], a["Y_indptr"][start], a["Y_indptr"][stop]
            X = sp.csr_matrix((a["X_data"][x0:x1], a["X_indices"][x0:x1], a["X_indptr"][start:stop + 1] - x0),
                              shape=(stop - start, n_features))
            Y = sp.csr_matrix((np.ones(y1 - y0, np.int8), a["Y_indices"][y0:y1], a["Y_indptr"][start:stop + 1] - y0),
                              shape=(stop - start, n_categories))
            documents += make_chunk(X, Y, a["ids"][start:stop], str(path), start + 1).n_documents
    return documents


def count(chunks) -> int:
    return sum(c.n_documents for c in chunks)


PEAK_RSS = """
import glob, sys
from mlnb.data.shards import ShardSource
from mlnb.data.stream import SvmlightSource
from mlnb.data.svmlight import read_svmlight
kind, path, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])
if kind == "in-memory":
    read_svmlight(sorted(glob.glob(path)))
elif kind != "nothing":
    source = SvmlightSource(path, n_features=47236, n_categories=103) if kind == "svmlight" else ShardSource(path)
    sum(c.n_documents for c in source.chunks(chunk))
# VmHWM: this process's peak resident memory (ru_maxrss would carry the parent's peak over exec)
print([int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM")][0])
"""


def peak_rss(kind: str, path, chunk_size: int) -> int:
    """Peak resident memory (bytes) of a fresh interpreter that imports mlnb and reads every document."""
    run = subprocess.run([sys.executable, "-c", PEAK_RSS, kind, str(path), str(chunk_size)], capture_output=True,
                         text=True, check=True)
    return int(run.stdout.split()[-1])


def bench_text(folder: Path, n_documents: int, repeats: int, chunk_size: int) -> None:
    """Text streams (both sides of a hash split) against the in-memory text loader, per vectorizer."""
    import csv
    import random

    from mlnb.data.stream import text_sources
    from mlnb.data.text import TextOptions, load_text_dataset

    rng = random.Random(0)
    words = [f"w{i}" for i in range(20_000)]
    path = folder / "docs.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        for _ in range(n_documents):
            writer.writerow([" ".join(rng.choices(words, k=80)), rng.choice("abcde")])
    print(f"\ntext: {n_documents:,} CSV documents of 80 words (20,000-word vocabulary); load {os.getloadavg()}")
    print(f"{'vectorizer':10s} {'in-memory loader':>17s} {'first pass':>12s} {'read pass':>12s}   (documents/s)")
    for vectorizer in ("hashing", "count"):
        options = TextOptions(vectorizer=vectorizer)
        best = {"in-memory": np.inf, "first pass": np.inf, "read pass": np.inf}
        for _ in range(repeats):
            started = time.perf_counter()
            load_text_dataset(path, text_options=options, test_fraction=0.5)
            best["in-memory"] = min(best["in-memory"], time.perf_counter() - started)
            started = time.perf_counter()
            train, test = text_sources(path, text_options=options, seed=0, test_fraction=0.5)
            best["first pass"] = min(best["first pass"], time.perf_counter() - started)
            started = time.perf_counter()
            assert count(train.chunks(chunk_size)) + count(test.chunks(chunk_size)) == n_documents
            best["read pass"] = min(best["read pass"], time.perf_counter() - started)
        print(f"{vectorizer:10s} " + " ".join(f"{n_documents / best[k]:>{w},.0f}" for k, w in
                                               (("in-memory", 17), ("first pass", 12), ("read pass", 12))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=200_000)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="write the corpus here and keep it")
    parser.add_argument("--text-documents", type=int, default=50_000,
                        help="also time the text streams on this many CSV documents (0: skip)")
    args = parser.parse_args()
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; load {os.getloadavg()}")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench_shards_"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        write_corpus(folder, args.documents, args.seed)
        print(f"corpus: {args.documents:,} documents written in {time.perf_counter() - started:.1f} s")
        plain = sorted(folder.glob("part-*.svm"))
        packed = sorted(folder.glob("part-*.svm.gz"))
        options = dict(n_features=N_FEATURES, n_categories=N_CATEGORIES)
        source = SvmlightSource(str(folder / "part-*.svm"), **options)
        started = time.perf_counter()
        convert(source, folder / "shards", shard_documents=50_000)
        convert_seconds = time.perf_counter() - started
        write_npz(folder / "shards", folder / "npz", compressed=False)
        write_npz(folder / "shards", folder / "npzc", compressed=True)
        n_shards = len(read_manifest(folder / "shards")["shards"])
        count(SvmlightSource(str(folder / "part-*.svm"), **options).chunks(args.chunk_size))  # compile numba

        chunk = args.chunk_size
        readers = {
            "in-memory loader (sklearn, whole)": (lambda: sum(X.shape[0] for (X, _) in read_svmlight(plain)[0]), plain),
            "svmlight stream, plain": (lambda: count(SvmlightSource(str(folder / "part-*.svm"), **options)
                                                     .chunks(chunk)), plain),
            "svmlight stream, .gz": (lambda: count(SvmlightSource(str(folder / "part-*.svm.gz"), **options)
                                                   .chunks(chunk)), packed),
            "svmlight stream, plain, sklearn parser": (
                lambda: count(SvmlightSource(str(folder / "part-*.svm"), use_numba=False, **options)
                              .chunks(chunk)), plain),
            "scan pass (no dimensions given), plain": (
                lambda: SvmlightSource(str(folder / "part-*.svm")).n_documents, plain),
            "shards (.npy, mmap)": (lambda: count(ShardSource(folder / "shards").chunks(chunk)), [folder / "shards"]),
            ".npz (uncompressed), loaded whole": (lambda: read_npz(folder / "npz", N_FEATURES, N_CATEGORIES, chunk),
                                                  [folder / "npz"]),
            ".npz (compressed), loaded whole": (lambda: read_npz(folder / "npzc", N_FEATURES, N_CATEGORIES, chunk),
                                                [folder / "npzc"]),
        }
        for _, files in readers.values():  # into the page cache
            for path in files:
                for file in (Path(path).rglob("*") if Path(path).is_dir() else [Path(path)]):
                    if file.is_file():
                        file.read_bytes()
        best = {name: np.inf for name in readers}
        for _ in range(args.repeats):
            for name, (run, _) in readers.items():
                started = time.perf_counter()
                documents = run()
                best[name] = min(best[name], time.perf_counter() - started)
                assert documents == args.documents, (name, documents)
        baseline = best["in-memory loader (sklearn, whole)"]
        print(f"load after: {os.getloadavg()}; chunk size {chunk:,}; {n_shards} binary shards; "
              f"convert (svmlight stream -> shards) {convert_seconds:.1f} s")
        print(f"{'reader':42s} {'documents/s':>12s} {'x in-memory':>12s} {'MB on disk':>11s}")
        for name, (_, files) in readers.items():
            print(f"{name:42s} {args.documents / best[name]:12,.0f} {baseline / best[name]:12.1f} "
                  f"{folder_bytes(files) / 1e6:11.0f}")
        print(f"\npeak RSS of a fresh process reading all {args.documents:,} documents in chunks of {chunk:,} (MB):")
        for kind, path in (("nothing", "-"), ("in-memory", folder / "part-*.svm"), ("svmlight", folder / "part-*.svm"),
                           ("svmlight", folder / "part-*.svm.gz"), ("shards", folder / "shards")):
            print(f"  {kind:10s} {Path(path).name:14s} {peak_rss(kind, path, chunk) / 1e6:8.0f}")
        if args.text_documents:
            bench_text(folder, args.text_documents, args.repeats, chunk)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
