"""Names from the data and the config in every report, and neighbours under a results root.

A category, a model's label, a folder or a swept value may hold HTML, Markdown or a line break: every
report.md (run, compare, curve, sweep, bench) shows it as text and never as a tag, a heading, a link
or a table cell of its own, and report.html shows the same text. index.html links a folder by a
relative, percent-encoded path, whatever the folder is called. A results root may hold anything
beside the run just written: index.html and `mlnb runs` list every folder they can read, name the
others in a warning, and the run that just succeeded still exits 0."""

import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pytest
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.report import html as html_module
from mlnb.report import runs as runs_module
from mlnb.report.escape import plain

PROJECT = Path(__file__).resolve().parents[2]
QUICKSTART = str(PROJECT / "configs" / "quickstart.toml")
IMG = "<img src=x onerror=alert(1)>"
LINK = "[x](javascript:alert(1))"
CATEGORIES = [IMG, "a|b", LINK, "`tick`", "# heading", "&lt;b&gt;"]  # one per line of a names file
LABEL = f"# heading {IMG} a|b {LINK} `tick` &lt;b&gt;"  # a label is one line (the config refuses line breaks)
FOLDERS = [IMG, "x\n# heading"]  # folder names may hold line breaks
TINY_SYNTHETIC = ["data.synthetic.n_documents=600", "data.synthetic.n_features=300",
                  "data.synthetic.n_categories=10", "report.category=1", "eval.bootstrap=0"]


def invoke(*args):
    return CliRunner().invoke(app, [*map(str, args)])


def settings(*pairs: str) -> list[str]:
    return [word for pair in pairs for word in ("--set", pair)]


@pytest.fixture(scope="module")
def hostile_data(tmp_path_factory) -> list[str]:
    """120 svmlight documents in 6 categories named by CATEGORIES, and nb's label LABEL, as --set arguments."""
    folder = tmp_path_factory.mktemp("hostile-data")
    rng = np.random.default_rng(0)
    lines = []
    for i in range(120):
        k = i % len(CATEGORIES)
        words = sorted({1 + 3 * k, 2 + 3 * k, *rng.integers(1, 25, size=3).tolist()})
        lines.append(f"{k} " + " ".join(f"{w}:1" for w in words))
    (folder / "data.svm").write_text("\n".join(lines) + "\n")
    (folder / "names.txt").write_text("\n".join(CATEGORIES) + "\n")
    return ["--quiet", *settings("data.source=svmlight", f"data.svmlight.path={folder / 'data.svm'}",
                                 f"data.svmlight.category_names_path={folder / 'names.txt'}", "report.category=0",
                                 "eval.bootstrap=0", f"models.nb.label={json.dumps(LABEL)}")]


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory, hostile_data) -> Path:
    out = tmp_path_factory.mktemp("hostile-run")
    result = invoke("run", QUICKSTART, "--out", out, *hostile_data)
    assert result.exit_code == 0, result.output
    (folder,) = (out / "quickstart").iterdir()
    return folder


def _run(out: Path, hostile_data, hostile_run) -> list[str]:
    return [plain(LABEL), plain(IMG)]  # the fixture wrote it: no second run


def _compare(out: Path, hostile_data, hostile_run) -> list[str]:
    copies = [out / "runs" / name for name in FOLDERS]
    for copy in copies:
        shutil.copytree(hostile_run, copy)
    result = invoke("compare", *copies, "--out", out)
    assert result.exit_code == 0, result.output
    return [plain(FOLDERS[0]), plain(FOLDERS[1]), plain(IMG)]


def _curve(out: Path, hostile_data, hostile_run) -> list[str]:
    result = invoke("curve", QUICKSTART, "--out", out, *hostile_data,
                    *settings("curve.sizes=[30, 60]", "curve.seeds=1"))
    assert result.exit_code == 0, result.output
    return [plain(LABEL)]


def _sweep(out: Path, hostile_data, hostile_run) -> list[str]:
    result = invoke("sweep", QUICKSTART, "--out", out, "--quiet", *settings(*TINY_SYNTHETIC, "sweep.model=nb"),
                    "--param", f"models.nb.label={IMG},a|b `tick` {LINK} &lt;b&gt;")
    assert result.exit_code == 0, result.output
    return [plain(IMG), plain(f"a|b `tick` {LINK} &lt;b&gt;")]


def _bench(out: Path, hostile_data, hostile_run) -> list[str]:
    corpora = []
    for name, categories in (("a", 8), ("b", 10), ("c", 9)):
        path = out / f"{name}.toml"
        path.write_text(f'name = "{name}"\n[data]\nsource = "synthetic"\n[data.synthetic]\nn_documents = 600\n'
                        f"n_features = 300\nn_categories = {categories}\n[report]\ncategory = 1\n")
        corpora.append(f'"{path}"')
    bench = out / "bench.toml"
    bench.write_text(f'name = "tiny"\n[bench]\ncorpora = [{", ".join(corpora)}]\n[eval]\nbootstrap = 0\n'
                     f'[report]\nplots = false\n[models.nb]\nkind = "naive_bayes"\nlabel = {json.dumps(LABEL)}\n'
                     '[models.lr]\nkind = "logistic"\nnpasses = 1\nbatch_size = 200\n')
    result = invoke("bench", bench, "--out", out / "results", "--quiet")
    assert result.exit_code == 0, result.output
    return [plain(LABEL)]


def assert_inert_markdown(path: Path) -> None:
    """No tag, no heading or link of a name, every table row as many cells as its header, code spans closed."""
    text = path.read_text(encoding="utf-8")
    assert re.search(r"<[A-Za-z/!?]", text) is None, (path, re.search(r".*<[A-Za-z/!?].*", text).group())
    assert re.search(r"^\s*#+ *heading", text, re.M) is None, path
    assert "](javascript:" not in text, path
    header_cells = None
    for line in text.splitlines():
        cells = len(re.findall(r"(?<!\\)\|", line))
        if not line.startswith("|"):
            header_cells = None
        elif header_cells is None:
            header_cells = cells
        else:
            assert cells == header_cells, (path, line)
        assert len(re.findall(r"(?<!\\)`", line)) % 2 == 0, (path, line)


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.hrefs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href", ""))

    def handle_data(self, data):
        self.text.append(data)


def read_page(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def assert_inert_html(path: Path) -> Page:
    """No script (index.html's one, which sorts its table, is mlnb's own constant text: nothing from the data),
    no event handler, every image embedded, every link relative without a scheme or host."""
    text = path.read_text(encoding="utf-8")
    if path.name == "index.html":
        own = f"<script>{html_module.SORT_SCRIPT}</script>"
        assert text.count("<script") == 1 and own in text, path
        text = text.replace(own, "")
    page = Page()
    page.feed(text)
    for tag, attrs in page.tags:
        assert tag not in ("script", "iframe", "object", "embed"), path
        assert not [name for name in attrs if name.startswith("on")], (path, tag, attrs)
        if tag == "img":
            assert attrs["src"].startswith("data:image/png;base64,"), path
    for href in page.hrefs:
        parts = urlsplit(href)
        assert (parts.scheme, parts.netloc) == ("", "") and "\\" not in href, (path, href)
    return page


@pytest.mark.slow
@pytest.mark.parametrize("write", [_run, _compare, _curve, _sweep, _bench], ids=lambda f: f.__name__[1:])
def test_every_report_shows_names_as_text(tmp_path, hostile_data, hostile_run, write):
    expected = write(tmp_path, hostile_data, hostile_run)
    root = hostile_run.parent.parent if write is _run else tmp_path
    reports = sorted(p for p in root.rglob("report.md") if "runs" not in p.relative_to(root).parts)
    assert reports
    for report in reports:
        assert_inert_markdown(report)
    written = "".join(p.read_text(encoding="utf-8") for p in reports)
    assert all(name in written for name in expected), [n for n in expected if n not in written]
    assert all((report.parent / "report.html").is_file() for report in reports)
    pages = sorted(root.rglob("*.html"))
    shown = "".join("".join(assert_inert_html(page).text) for page in pages)
    # report.html shows what report.md escaped as the very text it was (entities read once, not twice)
    assert "&lt;b&gt;" in shown and IMG in shown


@pytest.mark.parametrize("name", ["javascript:alert(1)", "data:text/html,x", "\\\\evil.example\\x"])
def test_index_links_a_folder_by_its_relative_path_whatever_its_name(tmp_path, name):
    folder = tmp_path / name / "20260101-000000"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(GOOD))
    (folder / "report.html").write_text("<!DOCTYPE html><title>x</title>")
    result = invoke("runs", tmp_path, "--html")
    assert result.exit_code == 0, result.output
    page = assert_inert_html(tmp_path / "index.html")
    (href,) = page.hrefs
    assert href.startswith("./") and (tmp_path / unquote(href)).resolve() == (folder / "report.html").resolve()


GOOD = {"name": "good", "created": "2026-01-01T00:00:00", "command": "mlnb run c.toml --set models.nb.alpha=2",
        "data": {"name": "d", "n_train": 10, "n_test": 5, "n_categories": 3},
        "models": {"nb": {"macro_auc": 0.8125, "accuracy": None}}}


def _summary(**changes):
    """GOOD's JSON with ``changes`` ('data.n_train' -> value) applied."""
    def write(path: Path):
        summary = json.loads(json.dumps(GOOD))
        for key, value in changes.items():
            *parents, last = key.split(".")
            table = summary
            for part in parents:
                table = table[part]
            table[last] = value
        path.write_text(json.dumps(summary))
    return write


def _link_to_large_file(path: Path):
    large = path.parent / "large.bin"
    with open(large, "wb") as file:
        file.truncate(20 * 2**30)  # sparse: 20 GB that take no disk space
    path.symlink_to(large)


# each kind of neighbour: how its summary.json is made, and what the line naming it says
NEIGHBOURS = {
    "count is text": (_summary(**{"data.n_train": "x"}), "data.n_train: expected a number, got a string"),
    "count is null": (_summary(**{"data.n_test": None}), "data.n_test: expected a number, got null"),
    "count is a list": (_summary(**{"data.n_categories": [1]}), "data.n_categories: expected a number, got a list"),
    "metric is text": (_summary(**{"models.nb.macro_auc": "high"}), "models.nb.macro_auc: expected a number"),
    "model is a list": (_summary(**{"models.nb": [1]}), "models.nb: expected an object, got a list"),
    "name is an object": (_summary(name={}), "name: expected a string, got an object"),
    "data is a list": (_summary(data=[1]), "data: expected an object, got a list"),
    "not JSON": (lambda p: p.write_text("{not json"), "not JSON: Expecting property name"),
    "not an object": (lambda p: p.write_text("[1, 2]"), "not a JSON object but a list"),
    "not UTF-8": (lambda p: p.write_bytes(b'{"name": "\xff"}'), "not UTF-8 text"),
    "nested too deeply": (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "not readable JSON"),
    "link to a 20 GB file": (_link_to_large_file, "21,474,836,480 bytes; a summary.json of more than 16 MiB"),
    "link to a device": (lambda p: p.symlink_to("/dev/zero"), "not a regular file"),
    "a FIFO": (lambda p: os.mkfifo(p), "not a regular file"),
    "a folder": (lambda p: p.mkdir(), "not a regular file"),
    "dangling link": (lambda p: p.symlink_to(p.parent / "gone.json"), "No such file or directory"),
}


@pytest.fixture
def tiny_study(tmp_path) -> list[str]:
    """`mlnb run` arguments of a one-model study on 60 documents, without plots."""
    rng = np.random.default_rng(0)
    lines = [f"{i % 3} " + " ".join(f"{w}:1" for w in sorted({1 + 3 * (i % 3), *rng.integers(1, 12, 3).tolist()}))
             for i in range(60)]
    (tmp_path / "data.svm").write_text("\n".join(lines) + "\n")
    (tmp_path / "tiny.toml").write_text('name = "tiny"\n[data]\nsource = "svmlight"\n[models.nb]\nkind = '
                                        '"naive_bayes"\n[eval]\nbootstrap = 0\n[report]\nplots = false\ncategory = 0\n')
    return [tmp_path / "tiny.toml", "--quiet", "--set", f"data.svmlight.path={tmp_path / 'data.svm'}"]


def _unsearchable(folder: Path, monkeypatch):
    """``folder`` cannot be listed (root reads any folder whatever its mode: the search is made to fail)."""
    search = runs_module._subfolders

    def refuse(where):
        if where == folder:
            raise PermissionError(13, "Permission denied", str(where))
        return search(where)
    monkeypatch.setattr(runs_module, "_subfolders", refuse)


@pytest.mark.parametrize("kind", [*NEIGHBOURS, "unsearchable folder"])
def test_a_bad_neighbour_is_named_and_the_new_run_still_listed(tmp_path, tiny_study, kind, monkeypatch):
    root = tmp_path / "results"
    good = root / "good" / "20260101-000000"
    good.mkdir(parents=True)
    _summary()(good / "summary.json")
    bad = root / "bad" / "20260101-000000"
    bad.mkdir(parents=True)
    if kind == "unsearchable folder":
        _unsearchable(root / "bad", monkeypatch)
        named, reason = root / "bad", "cannot be searched: Permission denied"
    else:
        make, reason = NEIGHBOURS[kind]
        make(bad / "summary.json")
        named = bad / "summary.json"
    run = invoke("run", *tiny_study, "--out", root)
    assert run.exit_code == 0, run.output
    assert f"warning: {named}: not listed in {root / 'index.html'} ({reason}" in run.output
    (new,) = (root / "tiny").iterdir()
    index = read_page(root / "index.html")
    assert {unquote(href) for href in index.hrefs} == {f"./tiny/{new.name}/report.html"}
    assert f"{named.relative_to(root)}: {reason}" in "".join(index.text)
    listed = invoke("runs", root)
    assert listed.exit_code == 0, listed.output
    assert f"warning: {named}: not listed ({reason}" in listed.output
    rows = [line.split()[0] for line in listed.output.splitlines() if not line.startswith("warning:")]
    assert rows == ["folder", "good/20260101-000000", f"tiny/{new.name}"]
    assert "d, 10 train / 5 test, 3 categories" in listed.output and "macro AUC: nb 0.8125" in listed.output


def test_runs_html_names_a_page_it_cannot_write(tmp_path, monkeypatch):
    folder = tmp_path / "q" / "20260101-000000"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(GOOD))
    (tmp_path / "index.html").mkdir()
    taken = invoke("runs", tmp_path, "--html")
    assert taken.exit_code == 2
    assert taken.output.strip() == (f"error: {tmp_path / 'index.html'}: is a folder; the page needs that name "
                                    "(move the folder away)")
    (tmp_path / "index.html").rmdir()

    def read_only(*args, **kwargs):  # root writes into any folder whatever its mode: the write is made to fail
        raise PermissionError(13, "Permission denied", str(tmp_path / ".index-x.html"))
    monkeypatch.setattr(html_module.tempfile, "mkstemp", read_only)
    refused = invoke("runs", tmp_path, "--html")
    assert refused.exit_code == 2
    assert refused.output.strip() == (f"error: {tmp_path / 'index.html'}: cannot be written ({tmp_path}: "
                                      "Permission denied)")
