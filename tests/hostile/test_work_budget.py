"""Hostile values that multiply work: a sweep grid of a million settings, a thousand curve seeds, a solver's
passes or memory far beyond any use. Each is refused in one line naming the key, before the first fit
(the fits before any data is read), by a schema bound, the work estimate of mlnb.work or the memory estimate
of mlnb.budget; the defaults and every shipped config pass them."""

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import mlnb.study
from mlnb import budget
from mlnb.budget import check_budget
from mlnb.config import load_config, toml_value, with_overrides
from mlnb.errors import MlnbError
from mlnb.models import KINDS
from mlnb.models.linear_svm import LinearSVM
from mlnb.studies.curve import DEFAULT_POINTS
from mlnb.studies.sweep import _settings, parse_params
from mlnb.work import check_work, curve_work, study_work, sweep_work

CONFIGS = sorted((Path(__file__).parents[2] / "configs").glob("*.toml"))
SMALL = ["--set", "data.source='synthetic'", "--set", "data.synthetic.n_documents=300",
         "--set", "data.synthetic.n_features=300", "--set", "data.synthetic.n_categories=4"]


def _values(n: int, start: float = 1.0) -> str:
    return ",".join(f"{start + i / 1000:g}" for i in range(n))


LR = ["--set", "models.lr.kind='logistic'"]
# (command, arguments, what the line names); each would otherwise fit for hours, days or never end
MULTIPLIERS = [
    ("sweep", ["--param", f"models.nb.alpha={_values(150)}", "--param", f"models.nb.m={_values(100)}"],
     ["15,000 settings (sweep.params)", "engine.max_fits = 10,000", "sweep.random_samples"]),
    ("sweep", ["--param", f"models.nb.alpha={_values(200)}", "--set", "sweep.repeats=100"],
     ["100 repeats (sweep.repeats)", "engine.max_fits"]),
    ("curve", ["--set", f"curve.sizes=[{', '.join(str(10 + i) for i in range(5000))}]"],
     ["5000 sizes (curve.sizes)", "engine.max_fits"]),
    ("curve", ["--set", "curve.seeds=1000"] + LR, ["1000 seeds (curve.seeds)", "engine.max_fits"]),
    ("run", LR + ["--set", "models.lr.npasses=1000", "--set", "eval.validation='kfold'", "--set", "eval.folds=1000",
                  "--set", "eval.decision='scut'"],
     ["eval.folds = 1000", "models.lr.npasses = 1000", "engine.max_total_passes = 1,000,000"]),
    ("sweep", LR + ["--param", "models.lr.npasses=100000,99999", "--set", "sweep.repeats=10"],
     ["models.lr.npasses = 100000", "engine.max_total_passes"]),
    ("curve", LR + ["--set", "models.lr.solver='svrg'", "--set", "models.lr.svrg_inner_passes=1000",
                    "--set", "curve.seeds=200"],
     ["models.lr.svrg_inner_passes = 1000", "200 seeds (curve.seeds)", "engine.max_total_passes"]),
    ("run", LR + ["--set", "models.lr.npasses=1000000"], ["models.lr.npasses: expected a value <= 100000"]),
    ("run", LR + ["--set", "models.lr.svrg_inner_passes=1000000000"],
     ["models.lr.svrg_inner_passes: expected a value <= 1000"]),
    ("run", LR + ["--set", "models.lr.max_iter=1000000000000"], ["models.lr.max_iter: expected a value <= 100000"]),
    ("run", LR + ["--set", "models.lr.lbfgs_memory=1000000000"], ["models.lr.lbfgs_memory: expected a value <= 1000"]),
    ("run", ["--set", "models.lr.kind='linear_svm'", "--set", "models.lr.C=1e300"],
     ["models.lr.C: expected a value <= 1"]),
    ("run", ["--set", "models.lr.kind='linear_svm'", "--set", "models.lr.max_iter=1000000000000"],
     ["models.lr.max_iter: expected a value <= 100000"]),
]
IDS = ["sweep-grid", "sweep.repeats", "curve.sizes", "curve.seeds", "eval.folds", "npasses-in-a-sweep",
       "svrg_inner_passes-in-a-curve", "npasses", "svrg_inner_passes", "max_iter", "lbfgs_memory", "svm-C",
       "svm-max_iter"]


@pytest.fixture
def no_fitting(monkeypatch):
    """Any model fit fails the test: a refusal must come before the first."""
    def never(*args, **kwargs):
        raise AssertionError("a model was fitted although the work is refused")

    for stage in (mlnb.study.loop, mlnb.study.deciding):  # the loop's fits and the held-out ones
        monkeypatch.setattr(stage, "fit_models", never)


@pytest.mark.parametrize("command, args, needles", MULTIPLIERS, ids=IDS)
def test_every_work_multiplying_key_is_refused_in_one_line(refused, no_fitting, command, args, needles):
    refused(*needles, args=SMALL + args, command=command)


def test_lbfgs_memory_enters_the_memory_estimate(refused, no_fitting, monkeypatch):
    monkeypatch.setattr(budget, "available_memory", lambda: 4 * 2**30)
    refused("models.lr.lbfgs_memory = 1000: the run needs at least", "more than the 4.0 GiB available",
            "lower models.lr.lbfgs_memory",
            args=SMALL + LR + ["--set", "models.lr.solver='lbfgs'", "--set", "models.lr.lbfgs_memory=1000",
                               "--set", "data.synthetic.n_features=100000", "--set", "data.synthetic.n_categories=100"])


def test_an_svm_with_a_huge_C_is_refused_by_the_estimator_too():
    X = sp.random(20, 5, density=0.5, random_state=0, format="csr", dtype=np.float32)
    Y = np.eye(2, dtype=np.int8)[np.arange(20) % 2]
    with pytest.raises(MlnbError, match="C must be > 0 and <= 1e"):
        LinearSVM(C=1e300, dual="primal").fit(X, Y)


@pytest.mark.parametrize("path", [None] + CONFIGS, ids=["defaults"] + [p.stem for p in CONFIGS])
def test_the_defaults_and_every_shipped_config_pass_the_estimates(path):
    config = load_config(path)
    check_work(config, study_work(config), "run")
    check_work(config, curve_work(config, len(set(config.curve.sizes)) or DEFAULT_POINTS), "curve")
    settings, model = [config], config.study_models()[0].name  # a sweep of one setting, else its own grid
    if config.sweep.params:
        grid = parse_params(config.sweep.params)
        settings = [with_overrides(config, [f"{key}={toml_value(value)}" for key, value in setting.items()])
                    for setting in _settings(grid, config.sweep.random_samples, config.seed)]
        model = next(iter(grid)).split(".")[1] if config.sweep.model == "auto" else config.sweep.model
    check_work(config, sweep_work(config, len(settings), model), "sweep")
    check_work(config, sweep_work(config, len(settings), model, settings), "sweep")
    check_budget(config, available=16 * 2**30)


def test_every_kind_counts_its_passes_and_the_sweep_multiplies_them():
    for kind in KINDS.values():
        passes, key = kind.least_passes(kind.options())
        assert passes >= 1 and isinstance(key, str), kind.name
    config = load_config(None, ["models.lr.npasses=7", "sweep.repeats=3", "eval.validation='kfold'", "eval.folds=4",
                                "eval.decision='scut'"])
    work = sweep_work(config, 10, "lr", [config] * 10)
    assert work.fits == (10 * 3 + 1) * 5  # (settings × repeats + the refit) × (1 + folds) fits of lr
    assert work.passes == (10 * 3 + 1) * 5 * 7
    assert work.heaviest == "models.lr.npasses = 7"
    assert study_work(config).passes == 5 * 1 + 5 * 7  # nb's one pass and lr's seven, each fitted 1 + folds times
    needs = budget.estimate(load_config(None, ["models.lr.solver='lbfgs'", "models.lr.lbfgs_memory=3"]),
                            budget.DataShape(10, 10, 100, 4, 50))
    (pairs,) = [need for need in needs if need.key == "models.lr.lbfgs_memory = 3"]
    assert pairs.bytes == 16 * 3 * 100 * 4  # 2·m float64 vectors of V·K
