"""The sparse Naive Bayes kind in studies, and the memory estimate that decides by what a kind holds.

A study with ``kind = "sparse_naive_bayes"`` gives the tables of ``kind = "naive_bayes"`` with the same event
model, in memory and streamed. A kind with dense V × K weights whose W cannot fit is refused before any work
in one line with its estimate and the keys that make it smaller (and, for Naive Bayes, the sparse kind);
a kind with sparse weights is counted by its pairs and per-word arrays, never V × K.
"""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

from mlnb import budget
from mlnb.budget import SPARSE_PAIR_BYTES, SPARSE_WORD_BYTES, DataShape, check_budget, check_data_sizes, estimate
from mlnb.cli import app
from mlnb.config import load_config
from mlnb.data.synthetic import make_rcv1_like
from mlnb.errors import MlnbError
from mlnb.models import KINDS
from mlnb.models.naive_bayes.sparse import SPARSE_EVENT_MODELS

GIB = 2**30
SPARSE = next(name for name, kind in KINDS.items() if kind.weights == "sparse")
DENSE_NB = KINDS[SPARSE].dense_equivalent
# the metrics.csv columns a study reports per model and category, compared between the two kinds: those of
# ranks and decisions, and those of the probabilities (float32 scores: equal to their rounding)
COLUMNS = ["category", "auc", "average_precision", "accuracy", "precision", "recall", "f1", "tp", "fp", "fn", "tn"]
PROBABILITY_COLUMNS = ["expected_accuracy", "log_loss", "brier"]
# 2M features × 5k categories: W alone is 149 GiB per dense model
BIG = ['data.source="svmlight"', 'data.svmlight.path="x.svm"', "data.svmlight.n_features=2000000",
       "data.svmlight.n_categories=5000"]


def test_the_sparse_kind_is_registered_with_sparse_weights_and_its_dense_equivalent():
    assert KINDS[SPARSE].weights == "sparse" and KINDS[SPARSE].streams
    assert KINDS[DENSE_NB].weights == "dense" and KINDS[DENSE_NB].sparse_equivalents() == [SPARSE]
    assert KINDS["logistic"].sparse_equivalents() == []


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, svmlight_shards):
    """Two svmlight files of one synthetic corpus, and a study of both kinds for every sparse event model."""
    folder = tmp_path_factory.mktemp("sparse_kind")
    data = make_rcv1_like(n_documents=2000, n_features=600, n_categories=10, seed=7)
    svmlight_shards(folder, data, 2)
    models = "".join(f'[models.{prefix}_{event_model}]\nkind = "{kind}"\nevent_model = "{event_model}"\n'
                     for event_model in SPARSE_EVENT_MODELS for prefix, kind in (("dense", DENSE_NB),
                                                                                 ("sparse", SPARSE)))
    config = folder / "study.toml"
    config.write_text(f'[data]\nsource = "svmlight"\nchunk_size = 300\n[data.svmlight]\npath = "{folder}/part-*.svm"\n'
                      f'n_features = 600\nn_categories = 10\n{models}[eval]\nbootstrap = 0\n'
                      '[report]\ncategory = 1\nplots = false\npaired_tests = false\n')
    return config


@pytest.mark.parametrize("streaming", ["false", "true"])
def test_a_study_of_the_sparse_kind_gives_the_dense_kinds_tables(corpus, tmp_path, streaming):
    """`mlnb run`, in memory and streamed: per event model the same AUC, AP, F1 and decisions of every category
    (the scores agree to float32 rounding; the ranks and the decisions they give are the same here)."""
    result = CliRunner().invoke(app, ["run", str(corpus), "--out", str(tmp_path), "--quiet",
                                      "--set", f"data.streaming={streaming}"])
    assert result.exit_code == 0, result.output
    (metrics,) = tmp_path.rglob("metrics.csv")
    table = pd.read_csv(metrics)
    for event_model in SPARSE_EVENT_MODELS:
        dense = table[table.model == f"dense_{event_model}"].reset_index(drop=True)
        sparse = table[table.model == f"sparse_{event_model}"].reset_index(drop=True)
        assert len(dense) == 10 and dense["tp"].sum() > 0
        pd.testing.assert_frame_equal(sparse[COLUMNS], dense[COLUMNS], check_exact=False, rtol=0, atol=1e-9)
        pd.testing.assert_frame_equal(sparse[["tp", "fp", "fn", "tn"]], dense[["tp", "fp", "fn", "tn"]],
                                      check_exact=True)
        pd.testing.assert_frame_equal(sparse[PROBABILITY_COLUMNS], dense[PROBABILITY_COLUMNS], check_exact=False,
                                      rtol=1e-5, atol=1e-7)


# -- the memory estimate ----------------------------------------------------------------------------------
@pytest.fixture
def sixteen_gib(monkeypatch):
    monkeypatch.setattr(budget, "available_memory", lambda: 16 * GIB)


def _defaults(folder):
    """A config file of the defaults: the study's keys all come from --set."""
    path = folder / "defaults.toml"
    path.write_text("")
    return path


def _refused(args, tmp_path, monkeypatch) -> str:
    """The one line `mlnb run` answers, after checking exit code 2 and that no data were read."""
    import mlnb.data.sources

    def never(*args, **kwargs):
        raise AssertionError("data were read although the run cannot fit")

    monkeypatch.setattr(mlnb.data.sources, "_load", never)
    result = CliRunner().invoke(app, ["run", str(_defaults(tmp_path)), "--out", str(tmp_path / "out"), "--quiet",
                                      *[a for setting in args for a in ("--set", setting)]])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.csv"))
    return lines[0]


def test_logistic_regression_beyond_memory_is_refused_in_one_line_with_the_keys_that_fix_it(
        tmp_path, monkeypatch, sixteen_gib):
    line = _refused([*BIG, "models.nb.enabled=false"], tmp_path, monkeypatch)
    # K/103 > V/47236 (RCV1's shape): the categories drive W more than the features
    assert line.startswith("error: data.svmlight.n_categories = 5000: the run needs at least 149.0 GiB"), line
    assert "W (2000000 features × 5000 categories × 1 models: lr) 149.0 GiB" in line
    assert "more than the 16.0 GiB available" in line
    assert line.endswith("; lower data.svmlight.n_categories, or make W smaller: features.max_features or "
                         "features.vectorizer = 'hashing' with fewer features.hash_features (text sources)"), line
    assert SPARSE not in line  # no kind with sparse weights gives logistic regression's scores


def test_dense_naive_bayes_beyond_memory_is_refused_naming_the_sparse_kind(tmp_path, monkeypatch, sixteen_gib):
    line = _refused(BIG, tmp_path, monkeypatch)  # the default study: nb and lr
    assert "W (2000000 features × 5000 categories × 2 models: nb, lr) 298.0 GiB" in line
    assert line.endswith(f", or kind = '{SPARSE}' in models.nb (sparse weights)") and "in models.lr" not in line


def test_a_streamed_study_is_not_told_to_select_features_it_cannot_select(tmp_path, monkeypatch, sixteen_gib):
    line = _refused([*BIG, "data.streaming=true"], tmp_path, monkeypatch)
    assert "features.max_features" not in line and "features.hash_features" in line


def test_the_sparse_kind_is_accepted_where_dense_weights_cannot_fit():
    config = load_config(None, [*BIG, f'models.nb.kind="{SPARSE}"', "models.lr.enabled=false"])
    check_budget(config, available=16 * GIB)  # the counters of the pairs that occur, never V × K
    needs = {need.what: need.bytes for need in estimate(config, *budget.data_shape(config))}
    assert not any(what.startswith("W (") for what in needs)
    assert needs["nb's sparse counters and weights (~0 pairs, 2000000 features)"] == SPARSE_WORD_BYTES * 2_000_000
    with pytest.raises(MlnbError, match=r"^data\.svmlight\.n_categories = 5000: .*\(W \(2000000 features × 5000 "
                                        r"categories × 1 models: lr\)"):
        check_budget(load_config(None, [*BIG, f'models.nb.kind="{SPARSE}"']), available=16 * GIB)


def test_the_sparse_estimate_counts_the_training_pairs_at_most_v_times_k():
    """P = min(V·K, nnz_train) pairs of SPARSE_PAIR_BYTES and V words of SPARSE_WORD_BYTES: with few documents
    the pairs, with many the V × K they cannot exceed."""
    config = load_config(None, [f'models.nb.kind="{SPARSE}"', "models.lr.enabled=false"])
    shape = DataShape(n_train=800, n_test=200, n_features=20_000, n_categories=5000, nnz=100_000)
    (need,) = [need for need in estimate(config, shape) if "sparse" in need.what]
    assert need.bytes == SPARSE_PAIR_BYTES * 80_000 + SPARSE_WORD_BYTES * 20_000
    small = DataShape(n_train=800, n_test=200, n_features=100, n_categories=3, nnz=100_000)
    (need,) = [need for need in estimate(config, small) if "sparse" in need.what]
    assert need.bytes == SPARSE_PAIR_BYTES * 300 + SPARSE_WORD_BYTES * 100


def test_the_sizes_a_file_sets_are_checked_against_the_least_weights_a_study_holds():
    """An svmlight file of 2M features and 5k categories may be read: a sparse model can hold it."""
    check_data_sizes("big.svm", n_features=2_000_000, n_categories=5000, nnz=10**6, available=16 * GIB)
    with pytest.raises(MlnbError, match=r"^big\.svm: the sizes it sets need at least 44\.7 GiB"):
        check_data_sizes("big.svm", n_features=2_000_000_000, n_categories=5000, available=16 * GIB)


@pytest.mark.slow
@pytest.mark.parametrize("streaming", ["false", "true"])
def test_dimensions_found_in_the_data_are_checked_before_any_fit(tmp_path, monkeypatch, sixteen_gib, streaming):
    """A file that states neither V nor K: its scanned 2M × 5k refuse dense LR once known, in memory and
    streamed, before any model is fitted; the sparse kind runs on the same file."""
    path = tmp_path / "wide.svm"
    path.write_text("".join(f"{d % 4999},4999 {1 + d}:1 2000000:2\n" for d in range(40)))
    args = ['data.source="svmlight"', f'data.svmlight.path="{path}"', f"data.streaming={streaming}",
            "data.chunk_size=10", "eval.bootstrap=0", "report.plots=false", "report.category=0"]
    result = CliRunner().invoke(app, ["run", str(_defaults(tmp_path)), "--out", str(tmp_path / "out"), "--quiet",
                                      *[a for s in args + ["models.nb.enabled=false"] for a in ("--set", s)]])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert "the data's categories: the run needs at least" in lines[0] and "W (2000000 features × 5000" in lines[0]
    result = CliRunner().invoke(app, ["run", str(_defaults(tmp_path)), "--out", str(tmp_path / "sparse"), "--quiet",
                                      *[a for s in args + [f'models.nb.kind="{SPARSE}"', "models.lr.enabled=false"]
                                        for a in ("--set", s)]])
    assert result.exit_code == 0, result.output


def test_a_multiclass_study_is_not_told_to_use_a_kind_that_does_not_do_multiclass():
    assert "multiclass" not in KINDS[SPARSE].tasks
    config = load_config(None, [*BIG, 'task="multiclass"', "models.lr.enabled=false"])
    with pytest.raises(MlnbError, match=r"make W smaller: features\.max_features or features\.vectorizer") as error:
        check_budget(config, available=16 * GIB)
    assert SPARSE not in str(error.value)


def _stacked(blocks) -> sp.csr_matrix:
    return sp.vstack(blocks).tocsr()


# -- the trainer's counters under a budget (what the kind's streamed fit reads) ------------------------------
@pytest.fixture(scope="module", params=["local", pytest.param("dask", marks=pytest.mark.slow)])
def backend(request):
    """This process, or the session's Dask LocalCluster of 2 workers (``dask_address`` in tests/conftest.py)."""
    if request.param == "local":
        from mlnb.backends.local import LocalBackend

        yield LocalBackend()
        return
    from mlnb.backends.dask import DaskBackend

    with DaskBackend(address=request.getfixturevalue("dask_address")) as started:
        yield started


def _trainer(corpus_config, spill_folder, backend):
    from mlnb.study.fitting import SourceTrainer
    from mlnb.study.tasks import Reading
    from mlnb.study import streamed_documents

    train, test = streamed_documents(load_config(corpus_config, ["data.streaming=true"]))
    trainer = SourceTrainer("sparse", Reading(train.source, train.chunk_size), train.source.partitions(), None,
                            backend, 1, 1, "one_worker", str(spill_folder))
    return trainer, train, test


@pytest.mark.slow
@pytest.mark.parametrize("presence", [False, True])
@pytest.mark.filterwarnings("ignore:.*prior alone")
def test_the_trainer_counts_pairs_in_memory_and_out_of_core_alike(corpus, tmp_path, backend, presence):
    """In memory under the budget, out of core (a CountStore in engine.spill_folder) beyond it, here or on Dask:
    the same counts, bit for bit, as one chunk of every training document; the same scores; the store is
    deleted once nothing uses it."""
    import gc

    from mlnb.models.naive_bayes.count_store import CountStore
    from mlnb.models.naive_bayes.sparse import SparseNaiveBayes
    from mlnb.models.naive_bayes.sparse_counts import SparseCounts

    trainer, train, test = _trainer(corpus, tmp_path, backend)
    chunks = list(train.chunks())
    whole = SparseCounts.from_chunk(_stacked([c.X for c in chunks]), _stacked([c.Y for c in chunks]), presence)
    in_memory = trainer.count_pairs(presence, 1024)
    assert isinstance(in_memory, SparseCounts) and list(tmp_path.iterdir()) == []
    out_of_core = trainer.count_pairs(presence, 0.001)
    assert isinstance(out_of_core, CountStore) and out_of_core.folder.parent == tmp_path
    loaded = out_of_core.load()
    for counts in (in_memory, loaded):
        np.testing.assert_array_equal(counts.key, whole.key)
        np.testing.assert_array_equal(counts.value, whole.value)  # integer counts: exact in any order
        np.testing.assert_array_equal(counts.t, whole.t)
        assert counts.n == whole.n and counts.presence == presence
    X_test = _stacked([c.X for c in test.chunks()])
    event_model = "bernoulli" if presence else "multinomial"
    scores = [SparseNaiveBayes(event_model=event_model).fit_counts(counts).decision_function(X_test)
              for counts in (in_memory, out_of_core)]
    np.testing.assert_array_equal(scores[1], scores[0])
    del out_of_core, scores
    gc.collect()
    assert list(tmp_path.iterdir()) == []
