"""Sweeps and learning curves with their scores spilled to disk read the rankings from the spill, and give
the numbers of the same study read whole (slow: streamed sweeps and curves, several seconds)."""

import numpy as np
import pandas as pd
import pytest

from mlnb.study import stores
from mlnb.config import load_config
from mlnb.data.synthetic import make_rcv1_like
from mlnb.metrics.at_k_study import top_k_of_spill
from mlnb.studies.curve import run_curve
from mlnb.studies.sweep import run_sweep

pytestmark = pytest.mark.slow

RANKED = ["P@1", "P@3", "P@5", "nDCG@1", "nDCG@3", "nDCG@5", "PSP@1", "PSP@3", "PSP@5"]


@pytest.fixture(scope="module")
def shards(tmp_path_factory, svmlight_study):
    """Two svmlight shards of a synthetic multilabel corpus and a config of two count-based models (the same
    fits, bit for bit, read whole or in chunks)."""
    data = make_rcv1_like(n_documents=1200, n_features=400, n_categories=12, seed=11)
    return svmlight_study(tmp_path_factory.mktemp("ranking_points"), data, 2, """
[models.nb]
kind = "naive_bayes"
[models.cnb]
kind = "naive_bayes"
event_model = "complement"
[eval]
bootstrap = 0
[report]
category = 1
plots = false
""")


def test_spilled_scores_give_the_in_memory_ranking_in_sweeps_and_curves(shards, monkeypatch):
    """Streamed with the scores on disk (engine.scores = 'disk'), the rankings are read from the spill: the
    same ranking numbers as the same sweep and curve read whole, to the bit."""
    read = []
    monkeypatch.setattr(stores, "top_k_of_spill", lambda spill, k: read.append(k) or top_k_of_spill(spill, k))
    spilled = ["data.streaming=true", 'engine.scores="disk"']
    whole = ["data.streaming=false"]
    sweep = ["sweep.repeats=1", "sweep.model=nb"]
    a = run_sweep(load_config(shards, spilled + sweep), ["models.nb.alpha=0.1,1"])
    b = run_sweep(load_config(shards, whole + sweep), ["models.nb.alpha=0.1,1"])
    pd.testing.assert_frame_equal(a.repeats[RANKED], b.repeats[RANKED], check_exact=True)
    assert {m: a.test[m] for m in RANKED} == {m: b.test[m] for m in RANKED}
    curve = ["curve.sizes=[200, 400]", "curve.seeds=1"]
    a = run_curve(load_config(shards, spilled + curve))
    b = run_curve(load_config(shards, whole + curve))
    pd.testing.assert_frame_equal(a.table[RANKED], b.table[RANKED], check_exact=True)
    assert np.isfinite(a.table[RANKED].to_numpy(dtype=float)).all()
    # from the spill: 2 settings + the test (one model each), then 2 sizes × 2 models
    assert read == [5] * (2 + 1 + 2 * 2)
