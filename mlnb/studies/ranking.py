r"""The ranking metrics at k of a sweep point or a learning-curve point: the numbers ``mlnb run`` reports
(``mlnb.study.loop._rank_at_k``), from the same functions on the point's own evaluation documents.

A point is one ``mlnb.study.run_on`` (a sweep setting on a validation repeat, or a curve's training sample
evaluated on the test part). For each of its models:

    rankings     each evaluation document's k = ``eval.ranking_k`` best categories, from the evaluated scores
                 in memory or from the spill (``mlnb.study.stores.ScoreStore.top_k``, as the run)
    propensities p_l = 1 / (1 + C · exp(−A · ln(N_l + B))),  C = (ln N − 1) · (B + 1)^A  from the point's
                 own training counts (N documents, N_l positives of category l; ``propensities_from_counts``,
                 A = ``eval.propensity_a``, B = ``eval.propensity_b``; none below 3 training documents)
    metrics      at every cut-off j of ``ranking_cutoffs(k)`` = sorted({1, 3, k} ∩ [1, k]):
                 P@j = mean_d Σ_{i≤j} y_(i) / j,  nDCG@j = mean_d DCG@j / IDCG@j,
                 PSP@j = Σ_d PSP@j raw_d / Σ_d PSP@j best_d  (``mlnb.metrics.at_k``)

so that a point equals the run of the same settings on the same documents to the last digit (the means of
``rank_models``, whatever its bootstrap: the intervals never change a mean). Multiclass (``task =
"multiclass"``) measures none, as the run does: with one true class per document, how well the classes are
ranked is the run summary's top-k accuracy (``eval.top_k``), not a ranking metric at k.
"""

from __future__ import annotations

import numpy as np

from mlnb.config import StudyConfig
from mlnb.metrics.at_k_study import propensities_from_counts, rank_models, ranking_cutoffs

__all__ = ["RANKING_FAMILIES", "ranking_columns", "ranking_of_loop"]

#: the ranking metrics a sweep or a curve records at every cut-off j, in this order: P@j, nDCG@j, PSP@j
RANKING_FAMILIES = ("P", "nDCG", "PSP")


def ranking_columns(config: StudyConfig) -> tuple[str, ...]:
    """The ranking columns of a sweep's or a curve's rows: P@j for every cut-off j of
    ``ranking_cutoffs(eval.ranking_k)``, then nDCG@j, then PSP@j; none for multiclass or ``eval.ranking_k = 0``."""
    if config.task == "multiclass":
        return ()
    ks = ranking_cutoffs(config.eval.ranking_k)
    return tuple(f"{family}@{j}" for family in RANKING_FAMILIES for j in ks)


def ranking_of_loop(config: StudyConfig, loop) -> dict[str, dict[str, float]]:
    """{model name: {column of ``ranking_columns``: mean over the evaluation documents}} of every run of a
    ``mlnb.study.LoopResult`` whose scores are still open (in memory or spilled: call before
    ``loop.store.close()``); PSP@j is NaN without propensities (fewer than 3 training documents).
    Empty dicts where ``ranking_columns`` is empty."""
    columns = ranking_columns(config)
    if not columns or not loop.runs:
        return {run.name: {} for run in loop.runs}
    ev = config.eval
    labels, rankings = loop.store.top_k(loop.runs, ev.ranking_k)
    propensity = propensities_from_counts(loop.train_positives, loop.n_train, ev.propensity_a, ev.propensity_b)
    per_model, _ = rank_models(rankings, labels, ranking_cutoffs(ev.ranking_k), propensity, n_boot=0,
                               compare=False)
    return {name: {column: float(measured["metrics"].get(column, np.nan)) for column in columns}
            for name, measured in per_model.items()}
