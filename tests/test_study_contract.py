"""The one study loop, as a contract over every registered kind and NB event model × {in memory, streamed,
Dask LocalCluster} (memory and streamed in the fast tier, Dask in the slow one).

One config, a glob of svmlight shards, read whole (``data.streaming = false``), streamed in this
process, and streamed on a Dask LocalCluster of 2 workers: the same training and test documents,
Naive Bayes (and every kind that learns from counts) with the same AUCs to 1e-9 and the same scut
decisions, minibatch LR bit-identical in memory and streamed in the same minibatch order. Kinds
that learn from every document at once are refused in one line when streamed.
"""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.config import load_config
from mlnb.data.synthetic import make_rcv1_like
from mlnb.errors import MlnbError
from mlnb.models import KINDS
from mlnb.models.naive_bayes import EVENT_MODELS
from mlnb.report.escape import plain
from mlnb.study import run_study

N_DOCUMENTS, N_FEATURES, N_CATEGORIES = 3000, 800, 8
STREAMING_KINDS = sorted(name for name, kind in KINDS.items() if kind.streams)
MEMORY_KINDS = sorted(name for name, kind in KINDS.items() if not kind.streams)
ENGINES = {"memory": ["data.streaming=false"], "streamed": ["data.streaming=true"],
           "dask": ["data.streaming=true", 'engine.kind="dask"', "engine.n_workers=2"]}


def on_shared_cluster(settings: list[str], request) -> list[str]:
    """``settings`` with a Dask engine sent to the session's LocalCluster of 2 workers (``dask_address`` in
    tests/conftest.py) rather than to one of its own: the same tasks on the same 2 workers, without a
    cluster's start, imports and kernel loads for every study."""
    if 'engine.kind="dask"' not in settings:
        return settings
    return settings + [f'engine.address="{request.getfixturevalue("dask_address")}"']
# per kind, options that make its fit the same on every engine (one minibatch order: no shuffle)
OPTIONS = {"logistic": {"shuffle": "false", "npasses": "2", "batch_size": "150"},
           "nb_logistic": {"shuffle": "false", "npasses": "2", "batch_size": "150"},
           "naive_bayes": {"decision": '"scut"'}}  # a rule learnt from held-out scores
# one model per streaming kind (named as its kind), and every other NB event model (named as the event model)
EVENT_MODELS_TOO = {name: ("naive_bayes", {"event_model": f'"{name}"'}) for name in EVENT_MODELS if name != "multinomial"}
# and the full-batch solver of a kind that has one: L-BFGS on gradients summed over the chunks, the same optimum
FULL_BATCH = {"lbfgs": ("logistic", {"solver": '"lbfgs"', "l2": "0.01", "tol": "1e-8", "lbfgs_memory": "30"}),
              # and SVRG: its minibatches in one order (no shuffle), its full passes summed over the chunks; a
              # loose tol and 2 inner passes (~7 outer iterations, still stopped by tol): what is tested is
              # equality between engines, not the optimum (tests/models/logistic/test_svrg.py), and every pass re-reads
              # the corpus when streamed (tol 1e-6 and 8 inner passes took ~250 passes)
              "svrg": ("logistic", {"solver": '"svrg"', "l2": "0.01", "tol": "1e-2", "svrg_inner_passes": "2",
                                    "shuffle": "false", "batch_size": "150"})}
MODELS = {**{kind: (kind, OPTIONS.get(kind, {})) for kind in STREAMING_KINDS}, **EVENT_MODELS_TOO, **FULL_BATCH}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, svmlight_shards):
    """Three svmlight shards of one synthetic corpus, and a config with one model of every streaming kind."""
    folder = tmp_path_factory.mktemp("contract")
    data = make_rcv1_like(n_documents=N_DOCUMENTS, n_features=N_FEATURES, n_categories=N_CATEGORIES, seed=5)
    svmlight_shards(folder, data, 3)
    models = "\n".join(f'[models.{name}]\nkind = "{kind}"\n' + "".join(f"{key} = {value}\n" for key, value in
                                                                     options.items())
                       for name, (kind, options) in MODELS.items())
    config = folder / "study.toml"
    config.write_text(f"""
[data]
source = "svmlight"
chunk_size = 300
shuffle_buffer = 2
[data.svmlight]
path = "{folder}/part-*.svm"
n_features = {N_FEATURES}
n_categories = {N_CATEGORIES}
{models}
[eval]
bootstrap = 0
decision = "fixed"  # the cut (the default, 'auto', is pcut: test_the_default_decision_rule_decides_alike_...)
[report]
category = 1
plots = false
""")
    return folder, config


@pytest.fixture(scope="module")
def study_on(corpus, request):
    """``study_on(engine)`` -> the study of the corpus on that engine, run once per module when first asked
    (memory and streamed in the fast tier; the Dask LocalCluster only for the slow tier's tests)."""
    found = {}

    def on(engine: str):
        if engine not in found:
            if engine == "dask":
                pytest.importorskip("distributed")
            found[engine] = run_study(load_config(corpus[1], on_shared_cluster(ENGINES[engine], request)))
        return found[engine]

    return on


#: the engines compared with the in-memory study: streamed in this process (fast), on Dask (slow)
OTHER_ENGINES = ["streamed", pytest.param("dask", marks=pytest.mark.slow)]


@pytest.mark.parametrize("engine", OTHER_ENGINES)
def test_the_same_documents_on_every_engine(study_on, engine):
    memory, result = study_on("memory"), study_on(engine)
    assert (result.data["n_train"], result.data["n_test"]) == (memory.data["n_train"], memory.data["n_test"])
    assert (result.Y_test != memory.Y_test).nnz == 0, engine
    np.testing.assert_array_equal(result.train_positives, memory.train_positives)
    assert result.data["split"] == memory.data["split"] and "hash" in result.data["split"]


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("engine", OTHER_ENGINES)
def test_every_kind_and_event_model_gives_the_in_memory_answer(study_on, name, engine):
    memory, other = study_on("memory").model(name), study_on(engine).model(name)
    fits_from = "full_batch" if name in FULL_BATCH else KINDS[MODELS[name][0]].fits_from
    auc_memory = memory.evaluation.per_category["auc"].to_numpy(dtype=float)
    auc_other = other.evaluation.per_category["auc"].to_numpy(dtype=float)
    if fits_from in ("counts", "full_batch") or engine == "streamed":  # sums; one process, one minibatch order
        np.testing.assert_allclose(auc_other, auc_memory, rtol=0, atol=1e-9, equal_nan=True)
        np.testing.assert_allclose(other.scores, memory.scores, rtol=1e-6, atol=1e-5)
        assert (other.decisions != memory.decisions).nnz == 0
    if fits_from == "minibatch" and engine == "streamed":  # the same minibatches: the same bits
        np.testing.assert_array_equal(other.model.weights_, memory.model.weights_)
    if fits_from == "minibatch" and engine == "dask":  # parameter mixing of 2 trainers: close, never a collapse
        assert other.evaluation.summary["macro_auc"] == pytest.approx(memory.evaluation.summary["macro_auc"],
                                                                      abs=0.02)
    if fits_from == "full_batch" and engine == "dask":  # gradients summed in the same pairwise tree: the same bits
        streamed = study_on("streamed").model(name)
        if KINDS[MODELS[name][0]].weights == "dense":
            np.testing.assert_array_equal(other.model.weights_, streamed.model.weights_)
        else:  # sparse weights (never V × K): the same counters give the same scores
            np.testing.assert_array_equal(other.scores, streamed.scores)


@pytest.mark.parametrize("engine", OTHER_ENGINES)
def test_scut_decisions_equal_on_every_engine(study_on, engine):
    rules = [study_on(name).model("naive_bayes").decision for name in ("memory", engine)]
    assert all(rule.rule == "scut" for rule in rules)
    np.testing.assert_array_equal(rules[1].thresholds, rules[0].thresholds)
    assert rules[1].n_validation == rules[0].n_validation > 0


@pytest.mark.parametrize("kind", MEMORY_KINDS)
def test_a_kind_that_cannot_stream_is_refused_in_one_line(corpus, kind):
    with pytest.raises(MlnbError, match=f"models.m: kind '{kind}' learns from every training document"):
        load_config(corpus[1], ["data.streaming=true", f'models.m.kind="{kind}"'])


DECISION_COLUMNS = ["model", "category", "accuracy", "precision", "recall", "f1", "tp", "fp", "fn", "tn"]


@pytest.mark.parametrize("engine", ["streamed", "spilled", *(pytest.param(engine, marks=pytest.mark.slow)
                                                             for engine in ("dask", "dask_spilled"))])  # a cluster
def test_the_default_decision_rule_decides_alike_in_memory_streamed_spilled_and_on_dask(corpus, tmp_path, engine,
                                                                                      request):
    """eval.decision = 'auto' (the default) is one rule wherever the study runs and its scores are held:
    the same metrics.csv decision columns, to the bit."""
    if engine.startswith("dask"):
        pytest.importorskip("distributed")
    folder = corpus[0]
    config = tmp_path / "default.toml"  # the default rule; models whose scores agree on every engine
    config.write_text(f'[data]\nsource = "svmlight"\nchunk_size = 300\n[data.svmlight]\npath = "{folder}/part-*.svm"\n'
                      f"n_features = {N_FEATURES}\nn_categories = {N_CATEGORIES}\n"
                      '[models.nb]\nkind = "naive_bayes"\n[models.bnb]\nkind = "naive_bayes"\n'
                      'event_model = "bernoulli"\n[eval]\nbootstrap = 0\n[report]\ncategory = 1\nplots = false\n')
    settings = {"memory": ENGINES["memory"], "streamed": ENGINES["streamed"], "dask": ENGINES["dask"],
                "spilled": ENGINES["streamed"] + ['engine.scores="disk"'],
                "dask_spilled": ENGINES["dask"] + ['engine.scores="disk"']}
    tables = {}
    for name in ("memory", engine):
        result = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / name), "--quiet",
                                          *[a for s in on_shared_cluster(settings[name], request)
                                            for a in ("--set", s)]])
        assert result.exit_code == 0, result.output
        (metrics,) = (tmp_path / name).rglob("metrics.csv")
        assert 'decision = "pcut"' in (metrics.parent / "config.toml").read_text()
        tables[name] = pd.read_csv(metrics)[DECISION_COLUMNS]
    assert tables[engine]["tp"].sum() > 0
    pd.testing.assert_frame_equal(tables[engine], tables["memory"], check_exact=True)


@pytest.mark.slow
def test_compare_pairs_a_streamed_run_with_an_in_memory_one(corpus, tmp_path):
    folders = {}
    for engine in ("memory", "streamed"):
        settings = [a for s in ENGINES[engine] for a in ("--set", s)]
        result = CliRunner().invoke(app, ["run", str(corpus[1]), "--out", str(tmp_path / engine), "--quiet",
                                          *settings])
        assert result.exit_code == 0, result.output
        (folders[engine],) = [p.parent for p in (tmp_path / engine).rglob("scores.npz")]
    result = CliRunner().invoke(app, ["compare", str(folders["streamed"]), str(folders["memory"]),
                                      "--model-a", "naive_bayes", "--out", str(tmp_path / "cmp")])
    assert result.exit_code == 0, result.output
    (summary,) = (tmp_path / "cmp").rglob("summary.json")
    comparison = json.loads(summary.read_text())
    # the same model on the same documents: no category differs
    assert comparison["a_significantly_better"] == comparison["b_significantly_better"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("command, extra", [("sweep", ["--param", "models.naive_bayes.alpha=0.5,1"]),
                                            ("curve", ["--set", "curve.sizes=[300, 1000]", "--set", "curve.seeds=1"])])
def test_sweep_and_curve_accept_a_streamed_corpus_and_agree_with_memory(corpus, tmp_path, command, extra):
    tables = {}
    for engine in ("memory", "streamed"):
        settings = [a for s in ENGINES[engine] for a in ("--set", s)]
        result = CliRunner().invoke(app, [command, str(corpus[1]), "--out", str(tmp_path / engine), "--quiet",
                                          *extra, *settings])
        assert result.exit_code == 0, result.output
        (table,) = (tmp_path / engine).rglob(f"{command}.csv")
        tables[engine] = np.genfromtxt(table, delimiter=",", names=True, dtype=None, encoding="utf-8")
    for column in ("macro_auc", "micro_f1"):  # the same parts of the training documents, the same fits
        np.testing.assert_allclose(tables["streamed"][column], tables["memory"][column], atol=1e-9)


@pytest.mark.parametrize("engine", ["memory", "streamed"])
def test_the_report_states_the_split_rule(corpus, tmp_path, engine):
    """A given test file is the test part, read whole or streamed, and the report says so."""
    folder = corpus[0]
    settings = [a for s in ENGINES[engine] + [f'data.svmlight.path="{folder}/part-0.svm"',
                                               f'data.svmlight.test_path="{folder}/part-[12].svm"']
                for a in ("--set", s)]
    result = CliRunner().invoke(app, ["run", str(corpus[1]), "--out", str(tmp_path), "--quiet", *settings])
    assert result.exit_code == 0, result.output
    (summary,) = tmp_path.rglob("summary.json")
    data = json.loads(summary.read_text())["data"]
    assert "given test" in data["split"] and data["n_train"] == N_DOCUMENTS // 3
    assert f"Train/test split: {plain(data['split'])}." in (summary.parent / "report.md").read_text()
