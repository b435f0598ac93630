"""Many corpora in one study (``mlnb bench``): the same models on each, then ranks and tests across them.

A bench config is a study config with a ``[bench]`` table. Its ``bench.corpora`` names study
configs, one per corpus; from each the bench takes what describes the corpus — ``[data]``,
``[features]``, ``task``, ``report.category`` / ``category_name`` and ``name`` — and from the bench
file everything else: the models, ``[eval]``, ``[curve]``, ``[report]``, the seed. ``bench.set``
overrides are applied to every corpus after that (e.g. a cap on training documents). Every corpus
config is built, and validated, before anything is fitted.

Each corpus is then an ordinary study (``mlnb.study.run_study``, the one loop), and with
``bench.curves = true`` an ordinary learning curve (``mlnb.studies.curve.run_curve``). Across
corpora, the N × k table of ``bench.metric`` (test part, corpus × model) is compared by average
ranks, the Friedman test with Iman and Davenport's F, Nemenyi's critical difference and Wilcoxon's
signed-ranks test with Holm's adjustment (``mlnb.metrics.across_corpora``, Demšar 2006).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from mlnb import progress
from mlnb.config import MULTICLASS_METRICS, BenchConfig, StudyConfig, load_config, with_overrides
from mlnb.errors import MlnbError
from mlnb.metrics.across_corpora import (FriedmanResult, critical_difference, friedman_test, pairwise_tests,
                                         rank_table)
from mlnb.metrics.evaluation import LOWER_IS_BETTER
from mlnb.study import StudyResult, model_labels, run_study
from mlnb.studies.curve import CurveResult, run_curve

__all__ = ["BenchResult", "corpus_configs", "crossover_rows", "run_bench"]


def corpus_configs(config: StudyConfig, source: str = "config") -> list[StudyConfig]:
    """One validated study config per entry of ``bench.corpora``: the corpus's data, the bench's models."""
    bench = config.bench
    if len(bench.corpora) < 2:
        raise MlnbError(f"{source}: bench.corpora: expected at least 2 corpus configs (study configs whose [data] "
                        f"name a corpus, e.g. \"configs/smsspam.toml\"), got {len(bench.corpora)}")
    made, names = [], {}
    for i, path in enumerate(bench.corpora):
        where = f"{source}: bench.corpora[{i}] = {path!r}"
        if not Path(path).is_file():
            raise MlnbError(f"{where}: no such config file (paths are read from the current folder)")
        corpus = load_config(path)
        if corpus.bench.corpora:
            raise MlnbError(f"{where}: is itself a bench (it has bench.corpora); name study configs of single corpora")
        if corpus.name in names:
            raise MlnbError(f"{where}: its name {corpus.name!r} is that of bench.corpora[{names[corpus.name]}] too; "
                            "each corpus names its results folder: give one of them another name = \"...\"")
        names[corpus.name] = i
        if bench.metric in MULTICLASS_METRICS and corpus.task != "multiclass":
            raise MlnbError(f"{source}: bench.metric = {bench.metric!r} is a multiclass metric, but bench.corpora[{i}] "
                            f"= {path!r} is {corpus.task}; choose one every task has, e.g. 'macro_auc'")
        report = replace(config.report, category=corpus.report.category, category_name=corpus.report.category_name)
        merged = replace(config, name=corpus.name, task=corpus.task, data=corpus.data, features=corpus.features,
                         report=report, bench=BenchConfig())
        made.append(with_overrides(merged, list(bench.set), origin=f"{where} with the bench's models and bench.set"))
    return made


@dataclass
class BenchResult:
    config: StudyConfig  # the bench config
    corpora: list[StudyConfig]  # the corpus configs as run
    metric: str
    higher_is_better: bool
    labels: dict  # model name -> label
    table: pd.DataFrame  # corpus (index) × model name: the metric on the test part
    info: pd.DataFrame  # corpus (index): task, n_train, n_test, n_categories, n_features_used
    friedman: FriedmanResult
    critical_difference: float  # Nemenyi, at bench.alpha
    pairs: pd.DataFrame  # one row per pair of models (across_corpora.pairwise_tests)
    crossovers: pd.DataFrame = field(default_factory=pd.DataFrame)  # curves: one row per corpus × compared pair
    curves: dict = field(default_factory=dict)  # corpus -> CurveResult (bench.curves)

    @property
    def models(self) -> list[str]:
        return list(self.table.columns)

    def ranks(self) -> pd.DataFrame:
        """corpus × model ranks, 1 = best, ties averaged."""
        return pd.DataFrame(rank_table(self.table.to_numpy(), self.higher_is_better), index=self.table.index,
                            columns=self.table.columns)


def _metric_of(result: StudyResult, metric: str, corpus: str) -> dict[str, float]:
    values = {}
    for run in result.models:
        value = run.evaluation.summary.get(metric)
        if value is None:
            raise MlnbError(f"bench.metric = {metric!r}: corpus {corpus!r} ({result.config.task}) has no such "
                            "metric; choose one every corpus's task has, e.g. 'macro_auc'")
        if not np.isfinite(value):
            raise MlnbError(f"bench.metric = {metric!r} is undefined (NaN) for model {run.name!r} on corpus "
                            f"{corpus!r}: the models cannot be ranked there")
        values[run.name] = float(value)
    return values


def crossover_rows(corpus: str, curve: CurveResult, metric: str) -> list[dict]:
    """Per compared pair: where its mean curves of ``metric`` cross, and which model leads at the
    smallest and at the largest training size (Ng & Jordan 2001: NB first, LR later)."""
    metric = metric if metric in curve.metrics else curve.metrics[0]
    means = curve.table.groupby(["model", "size"])[metric].mean()
    sizes = sorted(curve.table["size"].unique())
    lower = metric in LOWER_IS_BETTER
    rows = []
    for pair, found in curve.crossings.items():
        a, b = pair.split("-vs-")

        def leader(size, a=a, b=b):
            va, vb = means.loc[(a, size)], means.loc[(b, size)]
            if not (np.isfinite(va) and np.isfinite(vb)) or va == vb:
                return "tie"
            return a if (va < vb) == lower else b

        crossings = found.get(metric, [])
        rows.append({"corpus": corpus, "a": a, "b": b, "metric": metric, "smallest_size": int(sizes[0]),
                     "largest_size": int(sizes[-1]), "leader_at_smallest": leader(sizes[0]),
                     "leader_at_largest": leader(sizes[-1]),
                     "first_crossing": round(float(crossings[0])) if crossings else np.nan,
                     "crossings": "; ".join(f"{s:.0f}" for s in crossings)})
    return rows


def run_bench(config: StudyConfig, source: str = "config",
              on_study: Callable[[StudyResult], None] | None = None,
              on_curve: Callable[[CurveResult], None] | None = None) -> BenchResult:
    """Run every corpus's study (and curve), then the across-corpora statistics.

    ``on_study`` / ``on_curve`` receive each corpus's result as soon as it is done (to write its
    results folder), so that only the metric table is held for the whole bench."""
    bench = config.bench
    corpora = corpus_configs(config, source)  # every corpus validated before any is run
    rows, info, crossovers, curves = {}, {}, [], {}
    for corpus in corpora:
        progress.log(f"bench: corpus {corpus.name}")
        result = run_study(corpus)
        rows[corpus.name] = _metric_of(result, bench.metric, corpus.name)
        info[corpus.name] = {"task": corpus.task, "n_train": result.data.get("n_train"),
                             "n_test": result.data.get("n_test"), "n_categories": len(result.category_names),
                             "n_features_used": result.data.get("n_features_used")}
        if on_study is not None:
            on_study(result)
        del result
        if bench.curves:
            curve = run_curve(corpus)
            crossovers += crossover_rows(corpus.name, curve, bench.metric)
            curves[corpus.name] = curve
            if on_curve is not None:
                on_curve(curve)
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "corpus"
    higher = bench.metric not in LOWER_IS_BETTER
    names = list(table.columns)
    friedman = friedman_test(table.to_numpy(), higher)
    pairs = pairwise_tests(table.to_numpy(), names, higher, bench.alpha)
    return BenchResult(config=config, corpora=corpora, metric=bench.metric, higher_is_better=higher,
                       labels=model_labels(config), table=table,
                       info=pd.DataFrame.from_dict(info, orient="index").rename_axis("corpus"), friedman=friedman,
                       critical_difference=critical_difference(len(names), len(table), bench.alpha), pairs=pairs,
                       crossovers=pd.DataFrame(crossovers), curves=curves)
