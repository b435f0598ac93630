"""The documentation: the site builds with warnings as errors, its generated config reference lists
every option, and every tutorial runs.

A tutorial (docs/tutorials/*.md) is executed block by block, in order, in a fresh working directory
laid out like the project root (``configs/`` beside it, ``../shared`` the real data when present):

* a fenced block with a ``title="PATH"`` is a file the reader writes: its text is written to PATH;
* a ``bash`` block runs in ``bash -euo pipefail`` (``mlnb`` on the PATH);
* a ``python`` block runs in one namespace shared by the page's Python blocks;
* any other block (``text``, ``toml`` without a title, ...) is shown output or a listing, not run.

A page that needs data beside the project says so in a comment, ``<!-- needs: ../shared/... -->``,
and is skipped with that reason when the path is absent.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TUTORIALS = sorted((DOCS / "tutorials").glob("*.md"))
FENCE = re.compile(r"^```([\w+-]*)([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
TITLE = re.compile(r'title="([^"]+)"')
NEEDS = re.compile(r"<!--\s*needs:\s*(\S+)\s*-->")


def _docs_tools_missing() -> str | None:
    """Why the site cannot be built here, or None (the optional `docs` extra is installed)."""
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
            return f"{module} is not installed: the docs extra, pip install -e \".[docs]\""
    return None


@pytest.mark.slow
def test_site_builds_without_warnings(tmp_path):
    missing = _docs_tools_missing()
    if missing:
        pytest.skip(missing)
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(site)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    # the generated pages are there, and the API pages were rendered from the docstrings
    config_page = (site / "reference" / "config.html").read_text(encoding="utf-8")
    assert "hash_features" in config_page and "max_score_memory" in config_page
    assert "rcv1subset" in (site / "reference" / "results.html").read_text(encoding="utf-8")
    models_page = (site / "reference" / "api" / "models.html").read_text(encoding="utf-8")
    assert "partial_fit" in models_page and "NaiveBayes" in models_page


def _generator():
    spec = importlib.util.spec_from_file_location("gen_config_reference", DOCS / "gen_config_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_reference_lists_every_key_show_config_prints():
    """Every key `mlnb show-config` prints for the defaults, and every option of every model kind,
    is a row of the generated page with the same default."""
    from mlnb.config import StudyConfig, dump_toml, toml_value
    from mlnb.models import KINDS

    page = _generator().config_reference()
    section = ""
    for line in dump_toml(StudyConfig()).splitlines():  # what show-config prints, less the config's name
        if line.startswith("["):
            section = line.strip("[]")
        elif " = " in line and not section.startswith("models"):
            key, rest = line.split(" = ", 1)
            value = rest.split("  # ", 1)[0]
            assert f"| `{key}` | `{value}` |" in page, (section, key, value)
    for kind in KINDS.values():
        assert f'kind = `"{kind.name}"`' in page
        block = page.split(f'kind = `"{kind.name}"`', 1)[1].split("### kind", 1)[0]
        for f in dataclasses.fields(kind.options):
            assert f"| `{f.name}` | `{toml_value(getattr(kind.options(), f.name))}` |" in block, (kind.name, f.name)


def _blocks(page: Path):
    for match in FENCE.finditer(page.read_text(encoding="utf-8")):
        language, attributes, body = match.groups()
        title = TITLE.search(attributes)
        yield language, title.group(1) if title else None, body


@pytest.mark.slow
@pytest.mark.parametrize("page", TUTORIALS, ids=[page.stem for page in TUTORIALS])
def test_tutorial_runs(page, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    (work / "configs").symlink_to(ROOT / "configs")
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        (tmp_path / "shared").symlink_to(shared)
    for needed in NEEDS.findall(page.read_text(encoding="utf-8")):
        if not (work / needed).exists():
            pytest.skip(f"{page.name} needs {needed} (../shared/data is beside the project only in the "
                        "development checkout)")
    monkeypatch.chdir(work)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "MPLBACKEND": "Agg"}
    namespace: dict = {"__name__": f"tutorial_{page.stem}"}
    ran = 0
    for number, (language, title, body) in enumerate(_blocks(page), 1):
        where = f"{page.name}, block {number}"
        if title:
            (work / title).parent.mkdir(parents=True, exist_ok=True)
            (work / title).write_text(body, encoding="utf-8")
        elif language in ("bash", "sh"):
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=work, env=env, capture_output=True,
                                  text=True, timeout=600)
            assert done.returncode == 0, f"{where} failed:\n{body}\n{done.stdout}\n{done.stderr}"
            ran += 1
        elif language == "python":
            exec(compile(body, where, "exec"), namespace)  # noqa: S102  (the page's own code, as a reader runs it)
            ran += 1
    assert ran, f"{page.name} has no bash or python block to run"
