"""mlnb.report.drawing: a study's figures drawn in worker processes are the figures drawn here."""

import hashlib
import pickle

import pytest

from mlnb.config import load_config
from mlnb.report import drawing
from mlnb.report.results import _study_plots
from mlnb.report.tables import probabilities_defined
from mlnb.study import run_study

SMALL = ["data.synthetic.n_documents=1500", "data.synthetic.n_features=800", "data.synthetic.n_categories=12",
         "models.lr.npasses=1", "report.category=1", "eval.bootstrap=0"]


@pytest.fixture(scope="module")
def study():
    return run_study(load_config("configs/quickstart.toml", SMALL))


class CountingPool(drawing.ProcessPoolExecutor):
    """The executor ``draw`` uses, counting the figures handed to it."""

    submitted = 0

    def submit(self, *args, **kwargs):
        CountingPool.submitted += 1
        return super().submit(*args, **kwargs)


def _digests(folder):
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(folder.glob("*.png"))}


@pytest.mark.slow
def test_figures_drawn_in_processes_are_the_bytes_drawn_here(study, tmp_path, monkeypatch):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    monkeypatch.setattr(drawing, "PROCESSES_FROM_THREADS", 10 ** 6)  # this process
    assert drawing.worker_processes(7) == 0
    drawn_here = _study_plots(study, here)
    monkeypatch.setattr(drawing, "PROCESSES_FROM_THREADS", 1)  # worker processes, on any machine
    monkeypatch.setattr(drawing, "worker_threads", lambda: 2)
    monkeypatch.setattr(drawing, "ProcessPoolExecutor", CountingPool)
    CountingPool.submitted = 0
    assert drawing.start_early()
    drawn_there = _study_plots(study, there)
    assert CountingPool.submitted == len(drawn_there) == len(drawn_here) == 7  # every figure in a process
    assert [p.name for p in drawn_there] == [p.name for p in drawn_here]
    assert _digests(there) == _digests(here)


@pytest.mark.slow
def test_an_error_in_a_figure_is_raised_here(study, tmp_path, monkeypatch):
    monkeypatch.setattr(drawing, "PROCESSES_FROM_THREADS", 1)
    monkeypatch.setattr(drawing, "worker_threads", lambda: 2)
    with pytest.raises(FileNotFoundError):  # savefig into a folder that does not exist, in a worker
        _study_plots(study, tmp_path / "missing")


@pytest.mark.slow
def test_without_processes_the_figures_are_drawn_here(study, tmp_path, monkeypatch):
    def no_processes(*args, **kwargs):
        raise OSError("no semaphores here")

    monkeypatch.setattr(drawing, "PROCESSES_FROM_THREADS", 1)
    monkeypatch.setattr(drawing, "worker_threads", lambda: 2)
    monkeypatch.setattr(drawing, "ProcessPoolExecutor", no_processes)
    assert len(_study_plots(study, tmp_path)) == 7


def test_what_is_pickled_to_the_workers_is_small_and_says_the_same(study):
    slim = drawing.for_drawing(study)
    assert len(pickle.dumps(slim)) < len(pickle.dumps(study)) / 3
    assert slim.Y_test is None and study.Y_test is not None
    for run, kept in zip(study.models, slim.models):
        assert kept.scores is None and run.scores is not None and kept.decisions is None
        assert kept.evaluation is run.evaluation and kept.name == run.name
        for task in ("multilabel", "multiclass"):
            assert probabilities_defined(kept, task) == probabilities_defined(run, task)
