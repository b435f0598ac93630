"""Hostile config values: upper bounds on every key that sizes an allocation, a memory estimate that
refuses a run that cannot fit before anything is read or generated, and config files that are not
what they seem (a byte-order mark, a directory, bad TOML)."""

import pytest

from mlnb import budget
from mlnb.budget import DataShape, available_memory, check_budget, estimate
from mlnb.config import load_config
from mlnb.errors import MlnbError

# --set overrides far beyond any real corpus: refused by the schema, naming the key and the bound
BOUNDS = [
    ("eval.roc_points=1000000000000", "eval.roc_points: expected a value <= 100000"),
    ("data.synthetic.n_features=1000000000000000", "data.synthetic.n_features: expected a value <= 2147483647"),
    ("data.synthetic.n_documents=1000000000000000", "data.synthetic.n_documents: expected a value <= 1000000000"),
    ("data.synthetic.n_categories=10000000", "data.synthetic.n_categories: expected a value <= 1000000"),
    ("data.synthetic.topic_words=1000000000000", "data.synthetic.topic_words: expected a value <= 2147483647"),
    ("data.synthetic.words_per_document=1e12", "data.synthetic.words_per_document: expected a value <= 2147483647"),
    ("data.svmlight.n_features=1000000000000000", "data.svmlight.n_features: expected a value <= 2147483647"),
    ("data.svmlight.n_categories=10000000", "data.svmlight.n_categories: expected a value <= 1000000"),
    ("features.hash_features=1099511627776", "features.hash_features: expected a value <= 2147483647"),
    ("eval.bootstrap=1000000000", "eval.bootstrap: expected a value <= 100000"),
    ("eval.folds=1000000", "eval.folds: expected a value <= 1000"),
    ("curve.seeds=1000000", "curve.seeds: expected a value <= 1000"),
    ("curve.max_passes=1000000000", "curve.max_passes: expected a value <= 100000"),
    ("curve.sizes=[100, 10000000000]", "curve.sizes[1]: expected a value <= 1000000000"),
    ("sweep.random_samples=1000000000", "sweep.random_samples: expected a value <= 100000"),
]


@pytest.mark.parametrize("override, expected", BOUNDS, ids=[b[0].split("=")[0] for b in BOUNDS])
def test_schema_bounds(refused, override, expected):
    refused(expected, args=["--set", override])


@pytest.mark.parametrize("kind", ["sklearn_sgd", "linear_svm"])
def test_n_jobs_bound(refused, kind):
    refused("models.par.n_jobs: expected a value <= 256", "got 1000",
            args=["--set", f"models.par.kind={kind}", "--set", "models.par.n_jobs=1000"])


# within the schema, beyond the machine: the estimate names the key, the need and what is available
GIB = 2**30
BUDGET = [
    (["data.synthetic.n_documents=1000000000"], "data.synthetic.n_documents = 1000000000: the run needs at least"),
    (["data.synthetic.n_features=2000000000"], "data.synthetic.n_features = 2000000000: the run needs at least"),
    (["data.synthetic.n_categories=100000", "data.synthetic.n_features=1000", "data.synthetic.n_documents=2000",
      "eval.roc_points=100000"],
     "eval.roc_points = 100000: the run needs at least"),
    (["models.par.kind='sklearn_sgd'", "models.par.n_jobs=200"], "models.par.n_jobs = 200: the run needs at least"),
    (["data.source='svmlight'", "data.svmlight.path='x.svm'", "data.svmlight.n_features=2000000000",
      "data.svmlight.n_categories=1000"], "data.svmlight.n_features = 2000000000: the run needs at least"),
    (["data.source='text'", "data.text.path='x.csv'", "features.vectorizer='hashing'", "features.hash_features=2000000000"],
     "features.hash_features = 2000000000: the run needs at least"),
]


@pytest.fixture
def four_gib(monkeypatch):
    monkeypatch.setattr(budget, "available_memory", lambda: 4 * GIB)


@pytest.mark.parametrize("command", ["run", "sweep", "curve"])
@pytest.mark.parametrize("overrides, expected", BUDGET, ids=[b[0][-1].split("=")[0] for b in BUDGET])
def test_memory_budget_refuses_before_reading(refused, tiny_config, four_gib, monkeypatch, command, overrides, expected):
    import mlnb.data.sources

    def never(*args, **kwargs):
        raise AssertionError("data were read or generated although the run cannot fit")

    monkeypatch.setattr(mlnb.data.sources, "_load", never)
    args = [a for o in overrides for a in ("--set", o)] + ["--set", "data.source='synthetic'"] * (
        not any(o.startswith("data.source") for o in overrides))
    if command == "sweep":
        args += ["--param", "models.nb.alpha=0.1,1"]
    line = refused(expected, "more than the 4.0 GiB available", args=args, command=command)
    assert line.count("GiB") + line.count("TiB") + line.count("PiB") >= 2


def test_the_estimate_of_a_small_run_fits_and_the_machine_is_measured():
    config = load_config(None, ["data.synthetic.n_documents=2000"])
    shape, keys = budget.data_shape(config)
    needs = estimate(config, shape, keys)
    assert sum(n.bytes for n in needs) < 100 * 2**20
    check_budget(config)  # the real MemAvailable: a small run passes
    memory = available_memory()
    assert memory is None or memory > 0


def test_without_a_memory_reading_nothing_is_refused(monkeypatch):
    monkeypatch.setattr(budget, "available_memory", lambda: None)
    check_budget(load_config(None, ["data.synthetic.n_documents=1000000000"]))


def test_the_loaded_shape_is_checked_too():
    config = load_config(None, [])
    with pytest.raises(MlnbError, match=r"^the data's features: the run needs at least .* more than the 1\.0 GiB"):
        check_budget(config, DataShape(1000, 1000, 10**8, 103, 10**5), available=GIB)


def test_estimate_terms_match_the_formula():
    config = load_config(None, ["eval.roc_points=11"])  # nb and lr
    needs = {n.what.split(" (")[0]: n.bytes for n in estimate(config, DataShape(80, 20, 1000, 7, 500))}
    assert needs == {"X": 16 * 500, "W": 16 * 1000 * 7 * 2, "test scores": 12 * 20 * 7 * 2, "ROC grids": 16 * 7 * 11 * 2,
                     "curve tables": 90 * min(7, 20) * 11 * 2}


# -- the config file itself ----------------------------------------------------------------------------
def test_a_byte_order_mark_is_accepted(tmp_path, tiny_config):
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbf" + tiny_config.read_bytes())
    assert load_config(bom).models["nb"].kind == "naive_bayes"


@pytest.mark.parametrize("content, expected", [
    (b"\xef\xbb\xbfseed = 0\n[data]\nsorce = 'svmlight'\n", "bom.toml: unknown key 'data.sorce'; did you mean 'data.source'?"),
    (b"\xef\xbb\xbfseed = = 0\n", "bom.toml: not valid TOML (Invalid value (at line 1, column 8))"),
    (b"seed = 0\nname = '\xff'\n", "bom.toml: not a UTF-8 text file"),
    (b"[models.nb]\nkind = 'naive_bayes'\nn_jobs = 4\n", "bom.toml: unknown key 'models.nb.n_jobs': 'n_jobs' is an option of kind"),
])
def test_bad_config_files(refused, tmp_path, content, expected):
    (tmp_path / "bom.toml").write_bytes(content)
    refused(expected, config=tmp_path / "bom.toml")


def test_config_that_is_a_directory(refused, tmp_path):
    (tmp_path / "study.toml").mkdir()
    refused(f"{tmp_path / 'study.toml'}: is a directory; expected a config file", config=tmp_path / "study.toml")
    refused("is a directory", config=tmp_path / "study.toml", command="show-config")


def test_dask_workers_of_a_local_cluster_are_in_the_estimate():
    streamed = ['data.source="svmlight"', 'data.svmlight.path="x.svm"', "data.svmlight.n_features=47236",
                "data.svmlight.n_categories=103", "data.streaming=true", 'engine.kind="dask"']
    config = load_config(None, streamed + ["engine.n_workers=64"])
    state = 16 * 47236 * 103 * 2  # W and the optimiser's state of nb and lr
    needs = {n.key: n.bytes for n in estimate(config, *budget.data_shape(config))}
    assert needs["engine.n_workers = 64"] == 64 * (budget.DASK_WORKER_BYTES + state) + state
    with pytest.raises(MlnbError, match=r"^engine\.n_workers = 64: the run needs at least"):
        check_budget(config, available=4 * GIB)
    remote = load_config(None, streamed + ["engine.n_workers=64", 'engine.address="tcp://127.0.0.1:8786"'])
    assert {n.key: n.bytes for n in estimate(remote, *budget.data_shape(remote))}["engine.n_workers = 64"] == state



@pytest.mark.parametrize("kind", ["sklearn_sgd", "linear_svm"])
def test_the_worker_processes_a_kind_declares_are_in_the_estimate(kind):
    """A kind fitted category by category in n_jobs processes (``ModelKind.processes``) holds an interpreter and a
    copy of the data in each: the estimate counts them, keyed by the option; one process counts nothing."""
    config = load_config(None, [f"models.par.kind={kind!r}", "models.par.n_jobs=4"])
    needs = {n.key: n for n in estimate(config, DataShape(80, 20, 1000, 7, 500))}
    assert needs["models.par.n_jobs = 4"].bytes == 4 * budget.WORKER_BYTES
    assert needs["models.par.n_jobs = 4"].what == "4 worker processes of par"
    one = load_config(None, [f"models.par.kind={kind!r}"])
    assert not any("worker processes" in n.what for n in estimate(one, DataShape(80, 20, 1000, 7, 500)))


def test_one_learning_rate_per_category_must_match_the_datas_categories():
    """``ModelKind.check_data``: checked once the data's categories are known, in one line naming the key."""
    from mlnb.study.opening import _check_against_data

    config = load_config(None, ["models.lr.lrate_per_category=[0.1, 0.2]"])
    with pytest.raises(MlnbError, match=r"^models\.lr\.lrate_per_category has 2 values but the data has 3 "
                                        r"categories$"):
        _check_against_data(config, ["a", "b", "c"])
    _check_against_data(config, ["a", "b"])  # two rates for two categories

def test_one_bootstrap_resample_is_refused_when_the_config_is_loaded():
    with pytest.raises(MlnbError, match=r"eval\.bootstrap = 1: a single resample gives a zero-width interval"):
        load_config(None, ["eval.bootstrap=1"])
    assert load_config(None, ["eval.bootstrap=2"]).eval.bootstrap == 2


def test_a_confidence_level_below_float64_resolution_is_refused(refused):
    """eval.confidence = 1e-300 gave [nan, nan] with raw RuntimeWarnings: 0.5 + 1e-300/2 is 0.5 in float64, and
    the t/normal widening of a few positives' interval divided 0 by 0."""
    refused("eval.confidence", ">= 1e-15", args=["--set", "data.source=synthetic", "--set", "eval.confidence=1e-300"])


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_the_least_confidence_level_gives_finite_zero_width_intervals(tmp_path, tiny_config):
    import json

    from typer.testing import CliRunner

    from mlnb.cli import app

    settings = ["data.source=synthetic", "data.synthetic.n_documents=600", "data.synthetic.n_features=2000",
                "data.synthetic.n_categories=5", "eval.bootstrap=20", "eval.confidence=1e-15"]
    result = CliRunner().invoke(app, ["run", str(tiny_config), "--out", str(tmp_path / "out"), "--quiet",
                                      *[part for setting in settings for part in ("--set", setting)]])
    assert result.exit_code == 0, result.output
    summary = json.loads(next((tmp_path / "out").rglob("summary.json")).read_text())
    intervals = [pair for model in summary["models"].values() for pair in model["intervals"].values()]
    assert intervals and all(low == pytest.approx(high, abs=1e-9) for low, high in intervals), intervals
