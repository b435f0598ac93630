"""Minibatch logistic regression on Dask against one machine: one worker, and parameter mixing every M minibatches.

    python experiments/bench_mixing.py                      # 40k synthetic documents, 2 and 4 workers
    python experiments/bench_mixing.py --documents 100000 --mix-every 1 4 16 64 0

One synthetic RCV1-shaped corpus is written as svmlight and converted to binary shards (``mlnb convert``);
the same streamed study (the same hash split) runs in this process (``engine.kind = "local"``) and on a
Dask LocalCluster with W workers: with ``engine.minibatch = "one_worker"`` (the default: the one-machine
engine on one worker) and with ``"mixing"``, iterative parameter mixing every M minibatches of each
worker (``engine.mix_every``; 0 here means after each shard, read whole). Printed per run: LR's macro AUC and micro F1 on the test part and
their differences from the one-machine run, the rounds of mixing per pass and the fit seconds.
The issue's target at default settings: |Δ macro AUC| ≤ 0.002 and |Δ micro F1| ≤ 0.01 with 2 and 4 workers.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import dump_svmlight_file

from mlnb.config import load_config, toml_value
from mlnb.data.shards import convert
from mlnb.data.sources import open_source
from mlnb.data.synthetic import make_rcv1_like
from mlnb.errors import MlnbError
from mlnb.study import run_study

CONFIG = """
[data]
source = "{source}"
streaming = true
chunk_size = 2000
[data.{source}]
{data}
[models.lr]
kind = "logistic"
[eval]
bootstrap = 0
[report]
category = 0
plots = false
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=40_000)
    parser.add_argument("--features", type=int, default=10_000)
    parser.add_argument("--categories", type=int, default=103)
    parser.add_argument("--workers", type=int, nargs="*", default=[2, 4])
    parser.add_argument("--mix-every", type=int, nargs="*", default=[0, 64, 16, 4])
    parser.add_argument("--shard-documents", type=int, default=10_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="mlnb-mixing-"))
    corpus = make_rcv1_like(n_documents=args.documents, n_features=args.features, n_categories=args.categories,
                            seed=0)
    svm = folder / "corpus.svm"
    dump_svmlight_file(corpus.X, corpus.Y.toarray(), str(svm), multilabel=True, zero_based=False)
    svm_config = folder / "svm.toml"
    svm_config.write_text(CONFIG.format(source="svmlight", data=f"path = {toml_value(str(svm))}\n"
                                                                f"n_features = {args.features}\n"
                                                                f"n_categories = {args.categories}"))
    source, _ = open_source(load_config(svm_config).data, load_config(svm_config).features)
    convert(source, folder / "shards", shard_documents=args.shard_documents)
    config_path = folder / "shards.toml"
    config_path.write_text(CONFIG.format(source="shards", data=f"path = {toml_value(str(folder / 'shards'))}"))
    print(f"{args.documents:,} documents, {args.features:,} words, {args.categories} categories; load "
          f"{os.getloadavg()[0]:.1f}", flush=True)

    def run(overrides):
        started = time.perf_counter()
        for attempt in range(3):  # a LocalCluster can fail to start on a machine busy starting others
            try:
                result = run_study(load_config(config_path, overrides))
                break
            except MlnbError as error:
                if "failed to start" not in str(error) or attempt == 2:
                    raise
                print(f"  (retrying: {error})", flush=True)
        model = result.model("lr")
        history = model.model.history_
        rounds = history[0].get("mixing_rounds", "") if history else ""
        return (model.evaluation.summary["macro_auc"], model.evaluation.summary["micro_f1"], rounds,
                time.perf_counter() - started)

    here_auc, here_f1, _, seconds = run([])
    print(f"{'one machine':32s} macro AUC {here_auc:.4f}  micro F1 {here_f1:.4f}  ({seconds:.0f} s)", flush=True)
    for workers in args.workers:
        auc, f1, _, seconds = run(['engine.kind="dask"', f"engine.n_workers={workers}"])
        print(f"{f'{workers} workers, one_worker':32s} macro AUC {auc:.4f} ({auc - here_auc:+.4f})  micro F1 {f1:.4f} "
              f"({f1 - here_f1:+.4f})  ({seconds:.0f} s)", flush=True)
        for every in args.mix_every:
            overrides = ['engine.kind="dask"', f"engine.n_workers={workers}", 'engine.minibatch="mixing"',
                         f"engine.mix_every={every if every else 10**6}"]
            auc, f1, rounds, seconds = run(overrides)
            label = f"{workers} workers, mixing every {every if every else 'file'}"
            print(f"{label:32s} macro AUC {auc:.4f} ({auc - here_auc:+.4f})  micro F1 {f1:.4f} ({f1 - here_f1:+.4f})"
                  f"  {rounds} rounds/pass  ({seconds:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
