"""Every TOML writer against hostile names: what a corpus chooses (category folders, labels, column, file and
folder names) and what a config carries is written as an escaped TOML string, or folded into a comment that
cannot end early, so the text loads back to exactly what was written and no key appears that the writer did
not write. The writers: `mlnb init` (starter_config), dump_toml (show-config), and the config.toml of a
results folder, the best.toml of a sweep and the config.toml of a bench, which write dump_toml's text."""

import csv
import dataclasses
import json
import os
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlnb import MlnbError
from mlnb.cli import app
from mlnb.config import (config_dict, dump_toml, load_config, toml_comment, toml_key, toml_value,
                         with_decision_resolved)
from mlnb.report.provenance import with_absolute_paths
from mlnb.starter import write_starter

INJECTED = "x\neval.bootstrap = 7\nengine.max_score_memory = 1 #"
HOSTILE = [
    INJECTED,
    'a\r\nengine.spill_folder = "/tmp/elsewhere"',
    "b\r[tracking]\rmlflow_uri = 'http://example.invalid'",
    "vertical\x0btab, form\x0cfeed", "separators \x1c\x1d\x1e\x1f", "next\x85line", "line\u2028paragraph\u2029end",
    "\"double\" 'single' '''triple''' \"\"\"triple\"\"\"", "back\\slash \\n \\u0041 \\", "# not a comment",
    "[tracking]", "[[models]]", "key = value", "eval.bootstrap = 7", "controls \x01\x02\x08\x7f\x80\x9f",
    "\ttab", "beyond the BMP \U0001F680 \U0010FFFF", "bidi \u202e desrever \u2066 isolate \u2069",
    "zero\u200bwidth\ufeffmark", "trailing space ", "=", "\u00e9t\u00e9 \u4e2d\u6587", "L" * 150 + "\nname = 'x'",
]
#: a byte that is not UTF-8 in a Linux file name: Python names it with a lone surrogate, which no TOML holds
NOT_UTF8 = "latin1 caf\udce9"
#: what a category folder may be named (no '/' or NUL, at most 255 bytes, not hidden)
FOLDER_NAMES = [n for n in HOSTILE if "/" not in n and len(os.fsencode(n)) <= 255] + [NOT_UTF8]


def _keys(table: dict, prefix: str = "") -> set[str]:
    """The dotted keys of a loaded TOML table, tables included."""
    found = set()
    for key, value in table.items():
        found.add(prefix + key)
        if isinstance(value, dict):
            found |= _keys(value, f"{prefix}{key}.")
    return found


def _loads(text: str) -> dict:
    """The TOML text loaded, after checking that it has no line break but '\\n': no editor, pager or
    line-by-line reader sees a line the TOML reader does not."""
    assert text.splitlines() == text.rstrip("\n").split("\n")
    return tomllib.loads(text)


def _category_folders(root: Path, names: list[str], documents: int = 4) -> Path:
    for c, name in enumerate(names):
        folder = root / name
        folder.mkdir(parents=True)
        for i in range(documents):
            (folder / f"{i}.txt").write_text(f"topic{c} word{i % 7} common words here", encoding="utf-8")
    return root


def _init(data: Path, out: Path) -> tuple[str, dict]:
    path, _ = write_starter(data, out)
    text = path.read_text(encoding="utf-8")
    return text, _loads(text)


def _assert_defaults_kept(path: Path) -> None:
    config, defaults = load_config(path), load_config(None)
    assert (config.eval.bootstrap, config.engine.spill_folder, config.engine.max_score_memory,
            config.tracking.mlflow_uri) == (defaults.eval.bootstrap, defaults.engine.spill_folder,
                                            defaults.engine.max_score_memory, defaults.tracking.mlflow_uri)


# -- mlnb init ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def plain_keys(tmp_path_factory) -> set[str]:
    """The keys `mlnb init` writes for a folder of two categories named plainly."""
    root = tmp_path_factory.mktemp("plain")
    return _keys(_init(_category_folders(root / "data", ["a", "b"]), root / "config.toml")[1])


@pytest.mark.parametrize("name", FOLDER_NAMES)
def test_init_on_category_folders_with_a_hostile_name_writes_only_its_own_keys(tmp_path, name, plain_keys):
    data = _category_folders(tmp_path / name.replace("\udce9", "e"), [name, "plain"])  # its path is in a comment
    text, loaded = _init(data, tmp_path / "config.toml")
    assert _keys(loaded) == plain_keys and loaded["data"]["files"]["path"] == str(data)
    _assert_defaults_kept(tmp_path / "config.toml")
    if len(name) <= 80:  # listed, escaped, in a comment
        assert toml_comment(name)[2:] in text.split("\n")[3]


@pytest.mark.parametrize("label, fmt", [(label, fmt) for label in [h for h in HOSTILE if "," not in h]
                                        + ["nul\x00byte", "M" * 5000 + "\nseed = 1"]
                                        for fmt in ("jsonl", "csv") if not (fmt == "csv" and "\x00" in label)])
def test_init_on_a_labels_file_with_a_hostile_label_writes_only_its_own_keys(tmp_path, label, fmt, plain_keys):
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"file": f"{i}.txt", "label": name} for i, name in enumerate([label, "plain"] * 2)]
    for row in rows:
        (data / row["file"]).write_text(f"{row['file']} common words", encoding="utf-8")
    with open(data / f"labels.{fmt}", "w", encoding="utf-8", newline="") as file:
        if fmt == "csv":  # the label quoted, its line breaks and quotes inside the quotes
            writer = csv.DictWriter(file, ["file", "label"], quoting=csv.QUOTE_ALL)
            writer.writeheader()
            writer.writerows(rows)
        else:
            file.writelines(json.dumps(row) + "\n" for row in rows)
    _, loaded = _init(data, tmp_path / "config.toml")
    assert _keys(loaded) - plain_keys <= {f"data.files.{key}" for key in ("labels_path", "file_column",
                                                                          "label_column", "label_separator")}
    assert loaded["seed"] == 0
    _assert_defaults_kept(tmp_path / "config.toml")


def test_init_refuses_a_data_path_no_toml_file_can_hold(tmp_path):
    data = _category_folders(tmp_path / NOT_UTF8, ["a", "b"])
    with pytest.raises(MlnbError, match=r"data\.files\.path: .*not UTF-8"):
        write_starter(data, tmp_path / "config.toml")
    assert not list(tmp_path.glob("*.toml*"))


@pytest.mark.parametrize("column", HOSTILE + ["nul\x00byte"])
def test_init_on_texts_with_a_hostile_label_column_writes_it_as_a_string(tmp_path, column):
    rows = [json.dumps({"text": f"word{i} common words", column: "ab"[i % 2]}) for i in range(20)]
    data = tmp_path / "texts.jsonl"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    _, loaded = _init(data, tmp_path / "config.toml")
    assert loaded["data"]["text"]["label_column"] == column and loaded["data"]["text"]["text_column"] == "text"
    _assert_defaults_kept(tmp_path / "config.toml")


# -- dump_toml ----------------------------------------------------------------------------------------------------
def _carrying(text: str):
    """The default config with ``text`` in every string key that takes any text (names, paths), and in the
    models' labels where it is one printable line (as a label must be)."""
    config = load_config(None)
    label = text[:200] if text.isprintable() else "label"
    models = {name: dataclasses.replace(spec, label=label) for name, spec in config.models.items()}
    data = dataclasses.replace(config.data, text=dataclasses.replace(config.data.text, path=text),
                               svmlight=dataclasses.replace(config.data.svmlight, path=text, test_path=text))
    return dataclasses.replace(
        config, models=models, data=data, report=dataclasses.replace(config.report, category_name=text),
        engine=dataclasses.replace(config.engine, spill_folder=text),
        tracking=dataclasses.replace(config.tracking, experiment=text),
        bench=dataclasses.replace(config.bench, corpora=[text, "plain.toml"]))


@pytest.mark.parametrize("text", HOSTILE + ["L" * 4096])
def test_dump_toml_loads_back_to_the_same_config(tmp_path, text):
    config = _carrying(text)
    written = dump_toml(config)
    assert _loads(written) == config_dict(config)
    (tmp_path / "config.toml").write_text(written, encoding="utf-8")
    assert load_config(tmp_path / "config.toml") == config


def test_dump_toml_quotes_a_model_name_that_is_not_a_bare_key():
    config = load_config(None)
    names = ["a b", "x]\n[eval", "é", "dotted.name"]
    config.models = {name: dataclasses.replace(config.models["nb"], name=name) for name in names}
    assert list(_loads(dump_toml(config))["models"]) == names


def test_dump_toml_refuses_a_name_no_toml_file_can_hold():
    config = _carrying("plain")
    config.tracking.experiment = NOT_UTF8
    with pytest.raises(MlnbError, match=r"tracking\.experiment: .*not UTF-8"):
        dump_toml(config)
    with pytest.raises(MlnbError, match=r"--set.*models\.nb\.label: .*not UTF-8"):  # refused before a run
        load_config(None, [f"models.nb.label={NOT_UTF8}"])


def test_the_writing_helpers_escape_what_toml_or_an_editor_would_read_as_a_line_break():
    breaks = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    assert len(toml_comment("a" + breaks + "b").splitlines()) == 1 and toml_comment("x").startswith("# ")
    assert tomllib.loads(f"v = {toml_value(breaks)}")["v"] == breaks
    assert toml_key("nb_2-x") == "nb_2-x" and tomllib.loads(f"{toml_key('a.b = 1')} = 1") == {"a.b = 1": 1}


# -- the results folder, best.toml and the bench config ------------------------------------------------------------
@pytest.mark.slow
def test_run_sweep_and_bench_save_configs_that_load_back_unchanged(tmp_path, monkeypatch):
    """A study of a corpus that names its folder and categories with hostile names, its models labelled with
    them: the saved config.toml, best.toml and the bench's config.toml load back to the config that ran."""
    monkeypatch.chdir(tmp_path)
    data = _category_folders(tmp_path / INJECTED, FOLDER_NAMES[:3], documents=40)
    init, _ = write_starter(data, tmp_path / "init.toml")
    _assert_defaults_kept(init)
    config = load_config(init, ["eval.bootstrap=0", "report.plots=false", "models.lr.npasses=1"])
    config.name = "hostile"
    config.report.category_name = FOLDER_NAMES[0]
    config.models["nb"].label, config.models["lr"].label = HOSTILE[8], HOSTILE[7]  # labels are one line
    study = tmp_path / "study.toml"
    study.write_text(dump_toml(config), encoding="utf-8")
    (tmp_path / "again.toml").write_text(dump_toml(dataclasses.replace(config, name="again")), encoding="utf-8")
    bench = tmp_path / "bench.toml"
    bench.write_text(dump_toml(dataclasses.replace(config, name="b", bench=dataclasses.replace(
        config.bench, corpora=[str(study), "again.toml"], set=[f"report.category_name={FOLDER_NAMES[1]}"]))),
        encoding="utf-8")
    runner = CliRunner()
    for argv in (["run", study], ["sweep", study, "--param", "models.lr.lrate=0.1,0.3"], ["bench", bench]):
        result = runner.invoke(app, [*map(str, argv), "--out", str(tmp_path / "out"), "--quiet"])
        assert result.exit_code == 0, result.output
    saved = {p.parent.parent.name: p for p in (tmp_path / "out").glob("*/*/*.toml")}
    assert sorted(saved) == ["b-bench", "hostile", "hostile-sweep"]
    ran = load_config(saved["hostile"])
    ran.report.category = -1  # the run saves the category it resolved category_name to
    resolved = with_absolute_paths(with_decision_resolved(config))  # and the rule eval.decision = "auto" names
    assert ran == resolved
    assert load_config(saved["b-bench"]) == load_config(bench)
    best = load_config(saved["hostile-sweep"])
    assert best.models["lr"].options.lrate in (0.1, 0.3)
    best.models["lr"].options.lrate, best.report.category = config.models["lr"].options.lrate, -1
    assert best == with_absolute_paths(config)  # best.toml keeps "auto", which resolves as the run did
    for path in saved.values():
        _loads(path.read_text(encoding="utf-8"))
