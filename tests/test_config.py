"""Config loading: defaults < file < --set; every bad key or value named."""

import pytest

from mlnb import MlnbError
from mlnb.config import StudyConfig, dump_toml, load_config, parse_override, with_decision_resolved


def write(tmp_path, text, name="study.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


NB = '[models.nb]\nkind = "naive_bayes"\n'
LR = '[models.lr]\nkind = "logistic"\n'


def test_defaults_file_and_overrides(tmp_path):
    path = write(tmp_path, f"seed = 3\n{NB}alpha = 0.25\n{LR}\n[data.synthetic]\nn_documents = 500\n")
    config = load_config(path, ["models.nb.event_model=bernoulli", "models.lr.npasses=3"])
    assert config.name == "study" and config.seed == 3
    nb, lr = config.models["nb"].options, config.models["lr"].options
    assert nb.alpha == 0.25 and nb.event_model == "bernoulli"
    assert lr.npasses == 3 and config.data.synthetic.n_documents == 500
    assert config.eval.roc_points == StudyConfig().eval.roc_points


def test_without_models_the_study_is_nb_against_lr():
    config = load_config(None, ["models.nb.alpha=0.1"])
    assert [(s.name, s.kind) for s in config.study_models()] == [("nb", "naive_bayes"), ("lr", "logistic")]
    assert config.models["nb"].options.alpha == 0.1 and config.compared_pairs() == [("lr", "nb")]


STREAMED = ["data.streaming=true", "data.source=svmlight", "data.svmlight.path=x.svm"]


@pytest.mark.parametrize("path, settings, rule", [
    (None, [], "pcut"),  # multilabel in memory: PCut (experiments/bench_peers.py)
    (None, STREAMED, "pcut"),  # streamed: the same rule, whether its test scores are in memory or spilled
    (None, STREAMED + ['engine.scores="disk"'], "pcut"),  # PCut decides a spill's columns one at a time
    ("configs/iris.toml", [], "fixed"),  # multiclass: the most probable class
])
def test_the_default_decision_rule_follows_the_task(path, settings, rule):
    config = load_config(path, settings)
    assert config.eval.decision == "auto" and with_decision_resolved(config).eval.decision == rule
    assert load_config(path, settings + ["eval.decision=auto"]) == config


def test_a_decision_rule_the_user_names_is_kept():
    assert with_decision_resolved(load_config(None, ["eval.decision=fixed"])).eval.decision == "fixed"
    assert with_decision_resolved(load_config(None, STREAMED + ["eval.decision=pcut"])).eval.decision == "pcut"


def test_a_file_with_models_studies_exactly_those(tmp_path):
    text = ('[models.mnb]\nkind = "naive_bayes"\n[models.cnb]\nkind = "naive_bayes"\nevent_model = "complement"\n'
            '[models.lr]\nkind = "logistic"\ninit_from = "mnb"\n[models.sk]\nkind = "sklearn_sgd"\nenabled = false\n')
    config = load_config(write(tmp_path, text))
    assert [s.name for s in config.study_models()] == ["mnb", "cnb", "lr"]
    assert config.compared_pairs() == [("cnb", "mnb"), ("lr", "mnb")]
    assert config.models["cnb"].options.event_model == "complement"


def test_resolved_config_loads_back_unchanged(tmp_path):
    config = load_config(None, ["models.nb.alpha=0.1", "name=x", "data.svmlight.path=a \"b\".svm",
                                "models.nb.label=NB \U0001F680 \x7f",
                                "models.cnb.kind=naive_bayes", "models.cnb.column_models=['0-3=gaussian']", "models.cnb.event_model=mixed",
                                "models.sk.kind=sklearn_sgd", "models.sk.label=reference",
                                'report.compare=[["sk", "nb"]]'])
    again = load_config(write(tmp_path, dump_toml(config), "resolved.toml"))
    assert again == config


@pytest.mark.parametrize("text, message", [
    (NB + "alhpa = 1\n", r"study\.toml: unknown key 'models\.nb\.alhpa'; did you mean 'models\.nb\.alpha'\?"),
    ("[modles.nb]\nalpha = 1\n", r"unknown key 'modles'; did you mean 'models'\?"),
    (NB + "alpha = 0\n", r"study\.toml: models\.nb\.alpha: expected a value > 0, got 0"),
    (NB + "alpha = -1.5\n", r"models\.nb\.alpha: expected a value > 0, got -1\.5"),
    (NB + "alpha = \"big\"\n", r"models\.nb\.alpha: expected a number, got 'big'"),
    (LR + "npasses = 2.5\n", r"models\.lr\.npasses: expected an integer, got 2\.5"),
    (NB + "binarize = 1\n", r"models\.nb\.binarize: expected true or false, got 1"),
    (NB + "enabled = \"no\"\n", r"models\.nb\.enabled: expected true or false"),
    ("[models.nb]\nalpha = 1\n", r"\[models\.nb\] has no 'kind'; expected one of 'naive_bayes', 'logistic'"),
    ("[models.nb]\nkind = \"svm\"\n", r"models\.nb\.kind: unknown model kind 'svm'; expected one of"),
    (NB + "lrate = 0.3\n", r"unknown key 'models\.nb\.lrate': 'lrate' is an option of kind 'logistic'"),
    (NB + "alhpa = 0.3\n", r"unknown key 'models\.nb\.alhpa'; did you mean 'models\.nb\.alpha'\?"),
    ("[models.\"a b\"]\nkind = \"logistic\"\n", r"model name 'a b': expected letters, digits"),
    ("models = 3\n", r"'models' must be tables"),
    ("[models]\nnb = 3\n", r"'models\.nb' must be a table"),
    ("[models]\n", r"no enabled model"),
    (NB + "enabled = false\n", r"no enabled model"),
    (LR + "init_from = \"nb\"\n", r"models\.lr\.init_from = 'nb': expected the name of another enabled model"),
    (LR + "init_from = \"lr\"\n", r"models\.lr\.init_from = 'lr'"),
    (NB + LR + "[report]\ncompare = [[\"lr\", \"svm\"]]\n", r"report\.compare\[0\] = \['lr', 'svm'\]: expected two"),
    (NB + LR + "[report]\ncompare = [[\"lr\"]]\n", r"report\.compare\[0\]"),
    (NB + LR + "[report]\ncompare = [[\"lr\", \"nb\"], [\"nb\", \"lr\"]]\n", r"report\.compare\[1\] .* compared already"),
    (NB + LR + "enabled = false\n[report]\ncompare = [[\"lr\", \"nb\"]]\n", r"model 'lr' is disabled"),
    (NB + "binarize = true\nevent_model = \"gaussian\"\n", r"models\.nb: binarize applies to"),
    (NB + "decision = \"scutfbr\"\n[eval]\ndecision_metric = \"accuracy\"\n", r"eval\.decision_metric = 'accuracy' with scutfbr"),
    (NB + LR + "[report]\ncompare = [\"lr\"]\n", r"report\.compare\[0\]: expected a list of strings"),
    (NB + "[sweep]\nmodel = \"lr\"\n", r"sweep\.model = 'lr': expected 'auto' or an enabled model"),
    ("[data]\nsource = \"csv\"\n", r"data\.source: expected one of 'synthetic', 'svmlight', .*, got 'csv'"),
    ("[nb]\nalpha = 1\n", r"\[nb\] are the old form .*\[models\.nb\] kind = \"naive_bayes\""),
    ("[lr]\nengine = \"sklearn\"\n", r"\[models\.lr\] kind = \"sklearn_sgd\""),
    ("[models.nb\n", r"study\.toml: not valid TOML"),
])
def test_bad_config_is_named(tmp_path, text, message):
    with pytest.raises(MlnbError, match=message):
        load_config(write(tmp_path, text))


def test_bad_override_is_named():
    with pytest.raises(MlnbError, match=r"--set: models\.nb\.alpha: expected a value > 0"):
        load_config(None, ["models.nb.alpha=-1"])
    with pytest.raises(MlnbError, match="expected key=value"):
        load_config(None, ["models.nb.alpha"])
    with pytest.raises(MlnbError, match=r"--set: \[nb\] are the old form"):
        load_config(None, ["nb.alpha=0.1"])
    with pytest.raises(MlnbError, match="no such config file"):
        load_config("missing.toml")


def test_override_values_are_read_as_toml_else_string():
    assert parse_override("nb.alpha=0.1") == (["nb", "alpha"], 0.1)
    assert parse_override("nb.binarize=true") == (["nb", "binarize"], True)
    assert parse_override("nb.event_model=bernoulli") == (["nb", "event_model"], "bernoulli")
