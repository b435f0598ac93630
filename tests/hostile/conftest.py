"""Fixtures of the hostile suite: run the CLI in-process on a tiny study and check a refusal."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlnb.cli import app

TINY_STUDY = """\
seed = 0

[data]
source = "svmlight"

[models.nb]
kind = "naive_bayes"

[eval]
bootstrap = 0

[report]
plots = false
category = 0
"""


@pytest.fixture
def study_toml():
    """study_toml(data_table) -> the tiny study's TOML with ``data_table`` (its [data] keys and tables,
    '[data]' included) in place of its own: one study for every hostile test that needs a file."""
    def build(data_table: str) -> str:
        return TINY_STUDY.replace('[data]\nsource = "svmlight"\n', data_table.rstrip("\n") + "\n")
    return build


@pytest.fixture
def tiny_config(tmp_path) -> Path:
    """A one-model study without plots or bootstrap: the data source comes from --set."""
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_STUDY)
    return path


def _left_behind(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.startswith(".partial-") or p.is_file()]


@pytest.fixture
def refused(tmp_path, tiny_config):
    """refused(*needles, args=[...], command="run", config=tiny_config) runs the CLI in-process and
    returns its one output line after checking: exit code 2, exactly one line, 'error: ' first,
    every needle in it, and nothing written under --out (no results folder, no .partial-*)."""
    def check(*needles, args=(), command="run", config=None):
        out = tmp_path / "out"
        argv = [command]
        if command != "compare":
            argv.append(str(config or tiny_config))
        argv += [*map(str, args), "--out", str(out)]
        if command != "compare" and command != "show-config":
            argv.append("--quiet")
        if command == "show-config":
            argv = argv[:-2]
        result = CliRunner().invoke(app, argv)
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2, result.output
        assert len(lines) == 1, result.output
        line = lines[0]
        assert line.startswith("error: "), line
        for needle in needles:
            assert needle in line, (needle, line)
        assert not out.exists() or _left_behind(out) == [], list(out.rglob("*"))
        return line
    return check


@pytest.fixture
def svmlight_args(tmp_path):
    """svmlight_args(text, **keys) writes data.svm and returns the --set arguments reading it."""
    def make(text: str, name: str = "data.svm", **keys):
        path = tmp_path / name
        path.write_text(text)
        args = ["--set", f"data.svmlight.path={path}"]
        for key, value in keys.items():
            args += ["--set", f"data.svmlight.{key}={value}"]
        return args
    return make
