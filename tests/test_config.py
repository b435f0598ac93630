"""Config loading: defaults < file < --set; every bad key or value named."""

import pytest

from mlnb import MlnbError
from mlnb.config import StudyConfig, dump_toml, load_config, parse_override


def write(tmp_path, text, name="study.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_defaults_file_and_overrides(tmp_path):
    path = write(tmp_path, "seed = 3\n[nb]\nalpha = 0.25\n[data.synthetic]\nn_documents = 500\n")
    config = load_config(path, ["nb.event_model=bernoulli", "lr.npasses=2"])
    assert config.name == "study" and config.seed == 3
    assert config.nb.alpha == 0.25 and config.nb.event_model == "bernoulli"
    assert config.lr.npasses == 2 and config.data.synthetic.n_documents == 500
    assert config.eval.roc_points == StudyConfig().eval.roc_points


def test_resolved_config_loads_back_unchanged(tmp_path):
    config = load_config(None, ["nb.alpha=0.1", "name=x", "data.svmlight.path=a \"b\".svm"])
    again = load_config(write(tmp_path, dump_toml(config), "resolved.toml"))
    assert again == config


@pytest.mark.parametrize("text, message", [
    ("[nb]\nalhpa = 1\n", r"study\.toml: unknown key 'nb\.alhpa'; did you mean 'nb\.alpha'\?"),
    ("[nbb]\nalpha = 1\n", r"unknown key 'nbb'; did you mean 'nb'\?"),
    ("[nb]\nalpha = 0\n", r"study\.toml: nb\.alpha: expected a value > 0, got 0"),
    ("[nb]\nalpha = -1.5\n", r"nb\.alpha: expected a value > 0, got -1\.5"),
    ("[nb]\nalpha = \"big\"\n", r"nb\.alpha: expected a number, got 'big'"),
    ("[lr]\nnpasses = 2.5\n", r"lr\.npasses: expected an integer, got 2\.5"),
    ("[nb]\nbinarize = 1\n", r"nb\.binarize: expected true or false, got 1"),
    ("[data]\nsource = \"csv\"\n", r"data\.source: expected one of 'synthetic', 'svmlight', .*, got 'csv'"),
    ("nb = 3\n", r"'nb' must be a table"),
    ("[nb\n", r"study\.toml: not valid TOML"),
])
def test_bad_config_is_named(tmp_path, text, message):
    with pytest.raises(MlnbError, match=message):
        load_config(write(tmp_path, text))


def test_bad_override_is_named():
    with pytest.raises(MlnbError, match=r"--set: nb\.alpha: expected a value > 0"):
        load_config(None, ["nb.alpha=-1"])
    with pytest.raises(MlnbError, match="expected key=value"):
        load_config(None, ["nb.alpha"])
    with pytest.raises(MlnbError, match="no such config file"):
        load_config("missing.toml")


def test_override_values_are_read_as_toml_else_string():
    assert parse_override("nb.alpha=0.1") == (["nb", "alpha"], 0.1)
    assert parse_override("nb.binarize=true") == (["nb", "binarize"], True)
    assert parse_override("nb.event_model=bernoulli") == (["nb", "event_model"], "bernoulli")
