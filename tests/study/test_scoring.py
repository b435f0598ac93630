"""Scores held in memory and scores spilled to disk and read back are the same numbers."""

import numpy as np
import pytest

from mlnb.backends import LocalBackend
from mlnb.backends.spill import spill_prefix
from mlnb.decision import fit_decision_rule
from mlnb.study.scoring import fits_in_memory, in_memory, score_in_memory, score_spilled
from mlnb.study.stores import ScoresInMemory, SpilledScores
from mlnb.models.naive_bayes import NaiveBayes


def test_spilled_scores_read_back_equal_the_in_memory_ones(documents):
    memory, streamed = documents
    models = {"nb": NaiveBayes().fit(memory.X, memory.Y), "bnb": NaiveBayes(event_model="bernoulli").fit(memory.X, memory.Y)}
    here = score_in_memory(models, memory)
    chunked = score_in_memory(models, streamed)
    rules = {name: fit_decision_rule("fixed") for name in models}
    spilled = score_spilled(models, streamed, LocalBackend(), rules=rules, calibrations={}, threshold=0.5, top_k=2,
                            exclude=None, prior=None, untrainable=np.zeros(0, dtype=int))
    assert isinstance(spilled, SpilledScores) and spilled.folder.is_dir()
    assert spilled.folder.name.startswith(spill_prefix())  # a later run removes it if this process is killed
    folder = spilled.folder
    back = in_memory(spilled)
    assert isinstance(back, ScoresInMemory) and not folder.exists()  # the spill is deleted once read back
    for scored in (chunked, back):
        assert (scored.Y != here.Y).nnz == 0
        for name in models:
            np.testing.assert_array_equal(scored.scores[name], here.scores[name])
    np.testing.assert_array_equal(chunked.ids, memory.ids)


@pytest.mark.parametrize("n, limit, fits", [(1000, 10**9, True), (10**6, 10**6, False), (None, 10**12, False)])
def test_what_fits_in_memory(n, limit, fits):
    assert fits_in_memory(n, 100, 2, limit) is fits


def test_each_spill_reserves_room_for_the_test_documents_expected_and_never_grows(monkeypatch, tmp_path):
    """The scoring pass reserves each spill's rows for the documents expected of its partitions (a
    split's share of theirs), so that it does not grow: growing moves every category's scores written
    so far (at 10M documents, several times the scores' gigabytes rewritten by one thread)."""
    import scipy.sparse as sp

    from mlnb.data.stream import SelectedSource
    from mlnb.study.documents import StreamedDocuments
    from mlnb.study.tasks import scoring_groups
    from mlnb.metrics.streaming import INITIAL_CAPACITY, ScoreSpill
    from tests.study.conftest import MatrixSource

    n = 6 * INITIAL_CAPACITY
    rng = np.random.default_rng(0)
    X = sp.random(n, 30, density=0.1, format="csr", dtype=np.float32, random_state=2)
    Y = sp.csr_matrix((rng.random((n, 3)) < 0.3).astype(np.int8))
    source = MatrixSource(X, Y)
    even = SelectedSource(source, lambda ids: ids % 2 == 0, share=0.5)  # ids are 3 × rows: every other row
    first, second = source.partitions()
    assert scoring_groups(even, [[first, second]]) == [(0, [first, second], n // 2)]
    assert scoring_groups(even, [[first], [second]]) == [(0, [first], n // 4), (1, [second], n // 4)]
    assert scoring_groups(SelectedSource(source, lambda ids: ids % 2 == 0), [[first]]) == [(0, [first], 0)]  # no share
    grown = []
    growing = ScoreSpill._ensure_capacity

    def recorded(self, needed):
        grown.append(needed > self._capacity)
        growing(self, needed)

    monkeypatch.setattr(ScoreSpill, "_ensure_capacity", recorded)
    model = NaiveBayes().fit(X, Y)
    spilled = score_spilled({"nb": model}, StreamedDocuments(even, 100, 2), LocalBackend(),
                            rules={"nb": fit_decision_rule("fixed")}, calibrations={}, threshold=0.5, top_k=2,
                            exclude=None, prior=None, untrainable=np.zeros(0, dtype=int), spill_folder=str(tmp_path))
    assert grown and not any(grown)
    spill = spilled.spills["nb"]
    assert spill.n_documents == n // 2 and spill._capacity == int(n // 2 * 1.05) + 100
    np.testing.assert_array_equal(spill.scores_column(1), model.decision_function(X[::2])[:, 1])
    spilled.close()
