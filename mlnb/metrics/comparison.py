"""Paired per-category comparison of two models' AUCs on the same test documents.

For every category: DeLong's test of AUC_a − AUC_b (``mlnb.metrics.significance``),
p-values Holm-corrected over the categories where the test is defined; then
counts of categories won / tied / lost by model a (won = significantly higher
at ``alpha`` after Holm) and, as in Yang & Liu (1999), a sign test over the
raw per-category differences. For single-label (multiclass) models, whose
decisions are per document, McNemar's test of the two models' per-document
correctness can be attached (``mcnemar``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mlnb.metrics.significance import holm, McNemarResult, SignTestResult, delong_tests, sign_test


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

    def summary(self) -> dict:
        summary = {"a": self.name_a, "b": self.name_b, "model_a": self.label_a, "model_b": self.label_b,
                   "alpha": self.alpha, **self.counts(),
                   "sign_test": {"a_higher": self.sign.wins, "b_higher": self.sign.losses,
                                 "ties": self.sign.ties, "p_value": self.sign.p_value}}
        if self.mcnemar is not None:
            summary["mcnemar"] = {"a_right_b_wrong": self.mcnemar.b, "a_wrong_b_right": self.mcnemar.c,
                                  "statistic": self.mcnemar.statistic, "p_value": self.mcnemar.p_value,
                                  "method": self.mcnemar.method}
        return summary


def compare_scores(Y_test, scores_a, scores_b, category_names, train_positives, label_a="a", label_b="b",
                   alpha: float = 0.05, name_a: str = "a", name_b: str = "b",
                   mcnemar: McNemarResult | None = None, exclude=None) -> Comparison:
    """DeLong per category (a − b), Holm over categories, sign test over the differences.

    mcnemar : McNemar's test of the two models' per-document correctness
              (``mcnemar_test(predicted_a == true, predicted_b == true)``), kept as given
    exclude : category indices left out of the tests (e.g. without training positives: what
              either model scores there is no evidence about the models); their rows stay, untested
    """
    return comparison_from_tests(delong_tests(Y_test, scores_a, scores_b), category_names, train_positives,
                                 label_a, label_b, alpha, name_a, name_b, mcnemar, exclude)


def comparison_from_tests(delong_table, category_names, train_positives, label_a="a", label_b="b",
                          alpha: float = 0.05, name_a: str = "a", name_b: str = "b",
                          mcnemar: McNemarResult | None = None, exclude=None) -> Comparison:
    """``compare_scores`` from the per-category DeLong table already computed (e.g. column by column
    by ``delong_tests_by_column``)."""
    table = delong_table.reset_index(drop=True)
    if exclude is not None and len(exclude):
        table.loc[np.asarray(exclude), ["difference", "z", "p_value"]] = np.nan
        table["p_holm"] = holm(table["p_value"].to_numpy())
    table.insert(0, "category", np.arange(len(table)))
    table.insert(1, "name", list(category_names))
    table.insert(2, "train_pos", np.asarray(train_positives).astype(int))
    return Comparison(label_a=label_a, label_b=label_b, table=table,
                      sign=sign_test(table["difference"].to_numpy()), alpha=alpha, name_a=name_a,
                      name_b=name_b, mcnemar=mcnemar)
