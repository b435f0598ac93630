"""Paired per-category comparison of two models' AUCs on the same test documents, and its verdict.

For every category: DeLong's test of AUC_a − AUC_b (``mlnb.metrics.significance``), or where
its positives (or negatives) are few the exact paired permutation test (``auc_permutation``;
column ``test`` of the table says which), p-values Holm-corrected over the categories where the
test is defined; then
counts of categories won / tied / lost by model a (won = significantly higher
at ``alpha`` after Holm) and, as in Yang & Liu (1999), a sign test over the
raw per-category differences. With ``n_boot`` resamples, the paired bootstrap
interval of the macro AUC difference (``uncertainty.paired_bootstrap_intervals``:
both models on the same stratified draws). For single-label (multiclass) models,
whose decisions are per document, McNemar's test of the two models' per-document
correctness can be attached (``mcnemar``).

**Verdict** (``Comparison.verdict``), the same for multilabel and multiclass tasks:

1. the paired bootstrap interval of macro AUC_a − macro AUC_b, where computed: a winner when
   it excludes 0, else none — it decides alone, the tests below are not consulted;
2. without that interval (no bootstrap, or scores not in memory), the sign test, where it has
   power: with t untied categories its smallest two-sided p is 2 · 2^−t, so below alpha = 0.05
   it needs t ≥ 6 — with fewer categories the verdict says that it cannot reject, instead of
   "no clear winner";
3. otherwise DeLong + Holm: a winner when some categories are significantly better for one
   model and none for the other ("higher in k categories, lower in none").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from mlnb.metrics.significance import holm, McNemarResult, SignTestResult, auc_difference_tests, sign_test
from mlnb.metrics.uncertainty import paired_bootstrap_intervals


@dataclass(frozen=True)
class Verdict:
    """Which model ranks better (None: no test says), by what, and whether the sign test could tell."""

    winner: str | None
    basis: str  # "bootstrap" (paired interval of the macro difference), "sign test", "delong" (+ Holm), "none"
    sign_test_has_power: bool


@dataclass
class Comparison:
    label_a: str
    label_b: str
    table: pd.DataFrame  # one row per category: name, train_pos, auc_a, auc_b, difference, z, p, p_holm
    sign: SignTestResult
    alpha: float
    name_a: str = "a"  # the models' names in the study (for files, colours and summaries)
    name_b: str = "b"
    mcnemar: McNemarResult | None = None  # per-document correctness of a against b (multiclass)
    macro_difference: float = float("nan")  # macro AUC_a − macro AUC_b over the categories both ranked
    macro_interval: tuple | None = None  # (low, high) paired bootstrap interval of it, or None
    level: float = 0.95  # of macro_interval

    def sign_test_has_power(self) -> bool:
        """Whether the sign test can reach p < alpha at all: its smallest p is 2 · 2^−t."""
        tested = self.sign.wins + self.sign.losses
        return tested > 0 and 2.0 * 0.5 ** tested < self.alpha

    def verdict(self) -> Verdict:
        """Who ranks better, and by which test (module docstring)."""
        counts = self.counts()
        a, b = counts["a_significantly_better"], counts["b_significantly_better"]
        if self.macro_interval is not None and np.isfinite(self.macro_interval).all():
            low, high = self.macro_interval
            winner = self.name_a if low > 0 else self.name_b if high < 0 else None
            return Verdict(winner, "bootstrap", self.sign_test_has_power())
        if self.sign_test_has_power() and self.sign.p_value < self.alpha:
            return Verdict(self.name_a if self.sign.wins > self.sign.losses else self.name_b, "sign test", True)
        if (a > 0) != (b > 0):
            return Verdict(self.name_a if a else self.name_b, "delong", self.sign_test_has_power())
        return Verdict(None, "none", self.sign_test_has_power())

    @property
    def significant(self) -> pd.Series:
        return self.table["p_holm"] < self.alpha

    def counts(self) -> dict:
        defined = self.table["p_value"].notna()
        better = self.significant & (self.table["difference"] > 0)
        worse = self.significant & (self.table["difference"] < 0)
        return {"a_significantly_better": int(better.sum()), "b_significantly_better": int(worse.sum()),
                "no_significant_difference": int((defined & ~self.significant).sum()),
                "not_testable": int((~defined).sum())}

    def tests_used(self) -> dict:
        """How many testable categories got each test: {"delong": …, "permutation": …} (a table without
        column ``test`` is DeLong's throughout)."""
        defined = self.table["p_value"].notna()
        tests = self.table["test"] if "test" in self.table else pd.Series("delong", index=self.table.index)
        return {name: int((tests[defined] == name).sum()) for name in ("delong", "permutation")}

    def summary(self) -> dict:
        summary = {"a": self.name_a, "b": self.name_b, "model_a": self.label_a, "model_b": self.label_b,
                   "alpha": self.alpha, **self.counts(),
                   "sign_test": {"a_higher": self.sign.wins, "b_higher": self.sign.losses,
                                 "ties": self.sign.ties, "p_value": self.sign.p_value},
                   "tests": self.tests_used()}
        if self.macro_interval is not None:
            summary["macro_auc_difference"] = {"estimate": self.macro_difference, "low": self.macro_interval[0],
                                               "high": self.macro_interval[1], "level": self.level,
                                               "method": "paired stratified bootstrap"}
        verdict = self.verdict()
        summary["verdict"] = {"winner": verdict.winner, "basis": verdict.basis,
                              "sign_test_has_power": verdict.sign_test_has_power}
        if self.mcnemar is not None:
            summary["mcnemar"] = {"a_right_b_wrong": self.mcnemar.b, "a_wrong_b_right": self.mcnemar.c,
                                  "statistic": self.mcnemar.statistic, "p_value": self.mcnemar.p_value,
                                  "method": self.mcnemar.method}
        return summary


def compare_scores(Y_test, scores_a, scores_b, category_names, train_positives, label_a="a", label_b="b",
                   alpha: float = 0.05, name_a: str = "a", name_b: str = "b",
                   mcnemar: McNemarResult | None = None, exclude=None, n_boot: int = 0, seed: int = 0,
                   level: float = 0.95) -> Comparison:
    """DeLong per category (a − b; the permutation test where positives or negatives are few:
    ``significance.auc_difference_tests``), Holm over categories, sign test over the differences, and with
    ``n_boot`` > 0 the paired bootstrap interval of the macro AUC difference.

    mcnemar : McNemar's test of the two models' per-document correctness
              (``mcnemar_test(predicted_a == true, predicted_b == true)``), kept as given
    exclude : category indices left out of the tests (e.g. without training positives: what
              either model scores there is no evidence about the models); their rows stay, untested
    n_boot, seed, level : of the paired bootstrap (0: none)
    """
    comparison = comparison_from_tests(auc_difference_tests(Y_test, scores_a, scores_b), category_names,
                                       train_positives, label_a, label_b, alpha, name_a, name_b, mcnemar, exclude)
    if n_boot:
        columns = [np.reshape(v, (-1, 1)) if not sp.issparse(v) and np.ndim(v) == 1 else v
                   for v in (Y_test, scores_a, scores_b)]  # one category given as vectors
        comparison.macro_interval = paired_bootstrap_intervals(*columns, n_boot=n_boot, seed=seed, level=level,
                                                               exclude=exclude)["macro_auc"]
        comparison.level = level
    return comparison


def comparison_from_tests(delong_table, category_names, train_positives, label_a="a", label_b="b",
                          alpha: float = 0.05, name_a: str = "a", name_b: str = "b",
                          mcnemar: McNemarResult | None = None, exclude=None) -> Comparison:
    """``compare_scores`` from the per-category DeLong table already computed (e.g. column by column
    by ``auc_difference_tests_by_column``)."""
    table = delong_table.reset_index(drop=True)
    if exclude is not None and len(exclude):
        table.loc[np.asarray(exclude), ["difference", "z", "p_value"]] = np.nan
        if "test" in table:
            table.loc[np.asarray(exclude), "test"] = "none"
        table["p_holm"] = holm(table["p_value"].to_numpy())
    table.insert(0, "category", np.arange(len(table)))
    table.insert(1, "name", list(category_names))
    table.insert(2, "train_pos", np.asarray(train_positives).astype(int))
    differences = table["difference"].to_numpy()
    return Comparison(label_a=label_a, label_b=label_b, table=table, sign=sign_test(differences), alpha=alpha,
                      name_a=name_a, name_b=name_b, mcnemar=mcnemar,
                      macro_difference=float(np.nanmean(differences)) if np.isfinite(differences).any()
                      else float("nan"))
