"""Scores held in memory and scores spilled to disk and read back are the same numbers."""

import numpy as np
import pytest

from mlnb.backends import LocalBackend
from mlnb.backends.spill import spill_prefix
from mlnb.decision import fit_decision_rule
from mlnb.engine.scoring import fits_in_memory, in_memory, score_in_memory, score_spilled
from mlnb.models.naive_bayes import NaiveBayes


def test_spilled_scores_read_back_equal_the_in_memory_ones(documents):
    memory, streamed = documents
    models = {"nb": NaiveBayes().fit(memory.X, memory.Y), "bnb": NaiveBayes(event_model="bernoulli").fit(memory.X, memory.Y)}
    here = score_in_memory(models, memory)
    chunked = score_in_memory(models, streamed)
    rules = {name: fit_decision_rule("fixed") for name in models}
    spilled = score_spilled(models, streamed, LocalBackend(), rules=rules, calibrations={}, threshold=0.5, top_k=2,
                            exclude=None, prior=None, untrainable=np.zeros(0, dtype=int))
    assert not spilled.in_memory and spilled.folder.is_dir()
    assert spilled.folder.name.startswith(spill_prefix())  # a later run removes it if this process is killed
    folder = spilled.folder
    back = in_memory(spilled)
    assert back.in_memory and not folder.exists()  # the spill is deleted once read back
    for scored in (chunked, back):
        assert (scored.Y != here.Y).nnz == 0
        for name in models:
            np.testing.assert_array_equal(scored.scores[name], here.scores[name])
    np.testing.assert_array_equal(chunked.ids, memory.ids)


@pytest.mark.parametrize("n, limit, fits", [(1000, 10**9, True), (10**6, 10**6, False), (None, 10**12, False)])
def test_what_fits_in_memory(n, limit, fits):
    assert fits_in_memory(n, 100, 2, limit) is fits
