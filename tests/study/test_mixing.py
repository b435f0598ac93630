"""Iterative parameter mixing on Dask (``engine.mix_every``): the pieces a pass is cut into, and the
warning when the data allow only rarer mixing."""

import warnings

import numpy as np
import pytest

from mlnb.config import load_config
from mlnb.data.stream import Partition
from mlnb.data.synthetic import make_rcv1_like
from mlnb.study.fitting import mixing_pieces
from mlnb.errors import MlnbWarning


def test_pieces_cover_every_row_once_and_are_no_larger_than_asked():
    partitions = [Partition(path="a", number=0, first_id=0, n_documents=2500),
                  Partition(path="b", number=1, first_id=10_000, start=100, stop=1100, n_documents=1000),
                  Partition(path="c", number=2, first_id=20_000, n_documents=300)]
    pieces = mixing_pieces(partitions, 700, reads_row_ranges=True)
    for partition in partitions:
        mine = [p for p in pieces if p.path == partition.path]
        ends = [p.stop if p.stop is not None else p.start + p.n_documents for p in mine]
        assert all(p.n_documents <= 700 and p.n_documents == end - p.start for p, end in zip(mine, ends))
        rows = np.concatenate([np.arange(p.start, end) for p, end in zip(mine, ends)])
        end = partition.stop if partition.stop is not None else partition.n_documents
        np.testing.assert_array_equal(rows, np.arange(partition.start, end))  # in order, each row once
        assert all(p.first_id == partition.first_id for p in mine)  # ids stay those of the file


def test_a_source_without_row_ranges_keeps_its_partitions_whole():
    partitions = [Partition(path="a.svm", number=0, first_id=0, n_documents=5000),
                  Partition(path="b.svm", number=1, first_id=1 << 40)]
    assert mixing_pieces(partitions, 100, reads_row_ranges=False) == partitions


@pytest.mark.slow
def test_mixing_rarer_than_asked_is_one_warning(tmp_path, svmlight_shards, dask_address):
    """On the session's Dask LocalCluster of 2 workers (``dask_address`` in tests/conftest.py)."""
    from mlnb.study import run_study

    corpus = make_rcv1_like(n_documents=2400, n_features=300, n_categories=6, seed=1)
    svmlight_shards(tmp_path, corpus, 2)
    config = tmp_path / "study.toml"
    config.write_text(f"""
[data]
source = "svmlight"
streaming = true
chunk_size = 400
[data.svmlight]
path = "{tmp_path}/part-*.svm"
n_features = 300
n_categories = 6
[models.lr]
kind = "logistic"
batch_size = 50
npasses = 1
[engine]
kind = "dask"
address = "{dask_address}"
minibatch = "mixing"
mix_every = 1
[eval]
bootstrap = 0
[report]
category = 0
plots = false
""")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_study(load_config(config))
    lines = [str(w.message) for w in caught if issubclass(w.category, MlnbWarning) and "mixes" in str(w.message)]
    assert len(lines) == 1 and "engine.mix_every = 1" in lines[0] and "shards" in lines[0]
    assert result.model("lr").model.history_[0]["mixing_rounds"] == 1  # one file per worker: one round
    assert result.data["streaming"]["dask_training"] == {"lr": "mixing"}  # what the report says


def test_a_model_with_nothing_to_mix_runs_on_one_worker_when_mixing_is_asked():
    """engine.minibatch = "mixing" averages minibatch trainers; SVRG (and L-BFGS) fit from full passes with no
    state to average, so the trainer runs them whole on one worker, as with "one_worker"."""
    from types import SimpleNamespace

    from mlnb.study.fitting import SourceTrainer
    from mlnb.study.tasks import fit_logistic_on_worker
    from mlnb.models.logistic import LogisticRegression

    calls = []

    class Backend:
        sequential, n_workers = False, 2

        def map(self, function, items, *args, description=""):
            calls.append(function)
            return [SimpleNamespace(done=True)]

    reading = SimpleNamespace(source=SimpleNamespace(n_features=10, n_categories=2))
    trainer = SourceTrainer("lr", reading, [], None, Backend(), 1, 16, "mixing")
    assert trainer.minibatch(LogisticRegression(solver="svrg")).done and calls == [fit_logistic_on_worker]
    assert LogisticRegression().mixes_parameters and not LogisticRegression(solver="svrg").mixes_parameters


@pytest.mark.parametrize("asked, solver, sequential_backend, ran", [
    ("one_worker", "minibatch", False, "one_worker"),
    ("mixing", "minibatch", False, "mixing"),
    ("mixing", "svrg", False, "one_worker"),  # nothing to mix: what ran, not what was asked
    ("mixing", "minibatch", True, None),
])
def test_the_trainer_records_how_the_model_trained(monkeypatch, asked, solver, sequential_backend, ran):
    """The report's sentence on Dask comes from this record (``dask_training_``), not from the config."""
    from types import SimpleNamespace

    from mlnb.study import fitting
    from mlnb.models.logistic import LogisticRegression

    class Backend:
        sequential, n_workers = sequential_backend, 2

        def map(self, function, items, *args, description=""):
            return [SimpleNamespace(done=True)]

    for name in ("fit_logistic_here", "_fit_mixed"):
        monkeypatch.setattr(fitting, name, lambda *args, **kwargs: SimpleNamespace(done=True))
    reading = SimpleNamespace(source=SimpleNamespace(n_features=10, n_categories=2))
    trainer = fitting.SourceTrainer("lr", reading, [], None, Backend(), 1, 16, asked)
    assert trainer.minibatch(LogisticRegression(solver=solver)).done and trainer.ran == ran
