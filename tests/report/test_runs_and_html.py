"""Runs you can find again: `mlnb runs` lists every results folder, report.html is one self-contained
page (every plot embedded, no URL outside the folder), index.html links every run's report.

The HTML is checked twice: by Python's own parser (always: every <img> is an embedded PNG, every
plot of the folder is shown, every link resolves to a file of the folder), and in a real headless
browser (/usr/bin/chromium, with every host unresolvable: offline), which loads every image; that
test skips where no browser is installed (CI installs none)."""

import base64
import io
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from PIL import Image
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.config import load_config
from mlnb.report.html import inline, markdown_html
from mlnb.report.results import write_results
from mlnb.report.runs import overrides_of, scan_runs
from mlnb.study import run_study

TINY = ["data.synthetic.n_documents=600", "data.synthetic.n_features=300", "data.synthetic.n_categories=10",
        "report.category=1", "eval.bootstrap=0"]
CHROMIUM = Path("/usr/bin/chromium")


class Page(HTMLParser):
    """The images, links and any external address of one HTML page."""

    def __init__(self):
        super().__init__()
        self.images, self.links, self.external = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "href"):
            value = attrs.get(name)
            if value and re.match(r"^([a-z][a-z0-9+.-]*:)?//", value, re.I):
                self.external.append(value)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if tag == "a":
            self.links.append(attrs.get("href", ""))
        if tag in ("link", "iframe") or (tag == "script" and "src" in attrs):  # index.html's inline script is its own
            self.external.append(f"<{tag}>")


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def check_self_contained(page_path: Path, plots: list[Path]) -> Page:
    """Every plot embedded as a PNG that decodes to the plot's own pixels' size; every link a file of the
    folder; nothing external."""
    page = parse(page_path)
    assert page.external == []
    assert len(page.images) == len(plots) > 0
    for src, plot in zip(page.images, plots):
        assert src.startswith("data:image/png;base64,")
        png = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert png == plot.read_bytes()
        assert Image.open(io.BytesIO(png)).size[0] > 100
    for href in page.links:
        assert (page_path.parent / unquote(href)).resolve().is_file(), href
    return page


@pytest.fixture(scope="module")
def study():
    return run_study(load_config("configs/quickstart.toml", TINY))


@pytest.fixture(scope="module")
def folder(study, tmp_path_factory):
    return write_results(study, tmp_path_factory.mktemp("html"), command="mlnb run configs/quickstart.toml "
                         "--set data.synthetic.n_documents=400 --set 'report.category=1'")


@pytest.mark.slow
def test_report_html_embeds_every_plot_and_links_only_its_own_files(folder):
    shown = re.findall(r"!\[[^\]]*\]\((plots/[^)]+)\)", (folder / "report.md").read_text())
    page = check_self_contained(folder / "report.html", [folder / p for p in shown])
    assert sorted(shown) == sorted(f"plots/{p.name}" for p in (folder / "plots").glob("*.png"))
    assert {"./config.toml", "./summary.json", "./metrics.csv", "./scores.npz"} <= set(page.links)
    text = (folder / "report.html").read_text()
    assert "<h1>mlnb study: quickstart</h1>" in text and "<table>" in text
    assert "<title>mlnb study: quickstart</title>" in text and ".partial-" not in text  # written before the rename


def test_markdown_subset_escapes_what_comes_from_the_data(tmp_path):
    (tmp_path / "a.csv").write_text("x")
    assert inline(r"**nb** \<b\> `x<y` [a](a.csv) [out](https://example.org) [up](../a.csv)", tmp_path) == (
        '<strong>nb</strong> &lt;b&gt; <code>x&lt;y</code> <a href="a.csv">a</a> out up')
    body = markdown_html("# T\n\n| a | b\\|c |\n|---|---|\n| <i> | 2 |\n\n- one\n- two\n\n![p](plots/none.png)\n",
                         tmp_path)
    assert "<th>b|c</th>" in body and "<td>&lt;i&gt;</td>" in body and "<li>two</li>" in body
    assert 'class="missing"' in body and "<img" not in body


@pytest.mark.slow
def test_twenty_runs_are_listed_with_their_overrides(tmp_path):
    root = tmp_path / "results"
    lrates = [f"{0.1 + i / 50:g}" for i in range(20)]
    commands = []
    for lrate in lrates:  # twenty tiny studies, as `mlnb run ... --set models.lr.lrate=<lrate>` runs them
        overrides = TINY + ["report.plots=false", f"models.lr.lrate={lrate}"]
        commands.append("mlnb run configs/quickstart.toml " + " ".join(f"--set {o}" for o in overrides))
        write_results(run_study(load_config("configs/quickstart.toml", overrides)), root, command=commands[-1])
    (root / "quickstart" / ".partial-x").mkdir()  # a run still writing: not listed
    entries = scan_runs(root)[0]
    assert len(entries) == 20 and {e.kind for e in entries} == {"run"}
    result = CliRunner().invoke(app, ["runs", str(root), "--html"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].split()[:4] == ["folder", "kind", "created", "data"]
    rows = [line for line in lines[1:] if line.startswith("quickstart/")]
    assert len(rows) == 20
    assert all("macro AUC: nb 0." in row and ", lr 0." in row for row in rows)
    assert sorted(re.search(r"models\.lr\.lrate=(\S+)", row).group(1) for row in rows) == sorted(lrates)
    lr_aucs = {re.search(r", lr (0\.\d+)", row).group(1) for row in rows}
    assert len(lr_aucs) > 10  # twenty studies, not one study listed twenty times
    index = parse(root / "index.html")
    assert index.external == [] and len(index.links) == 20
    assert all((root / link).is_file() and link.endswith("/report.html") for link in index.links)
    empty = CliRunner().invoke(app, ["runs", str(tmp_path / "nowhere")])
    assert empty.exit_code == 2 and "no such folder" in empty.output


def test_overrides_are_read_from_the_recorded_command():
    assert overrides_of("mlnb run c.toml --set a=1 --set='b=x y' --quiet --param m.l=1,2") == ["a=1", "b=x y",
                                                                                                 "m.l=1,2"]
    assert overrides_of("mlnb run 'unbalanced --set a=1") == ["a=1"]


def test_a_quick_run_shows_quick_among_its_overrides():
    assert overrides_of("mlnb run c.toml --quick --set a=1 --quiet") == ["--quick", "a=1"]


def test_a_damaged_summary_is_named_not_fatal(tmp_path):
    bad = tmp_path / "study" / "20260101-000000"
    bad.mkdir(parents=True)
    (bad / "summary.json").write_text("{not json")
    assert scan_runs(tmp_path)[0] == []
    result = CliRunner().invoke(app, ["runs", str(tmp_path)])
    assert result.exit_code == 0
    assert f"warning: {bad / 'summary.json'}: not listed (not JSON: Expecting property name" in result.output


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.is_file(), reason="no headless browser at /usr/bin/chromium (Debian: apt-get "
                    "install chromium); the parser-based tests above still check the page")
def test_report_opens_offline_in_a_browser_with_every_image(folder, tmp_path):
    """The page loads in Chromium with every host unresolvable, and every <img> decodes (naturalWidth > 0)."""
    probe = folder / "report-probe.html"  # beside the report: the same relative links
    script = ("<script>window.addEventListener('load', () => { const im = [...document.images]; "
              "document.body.setAttribute('data-probe', im.length + ':' + im.filter(i => i.complete && "
              "i.naturalWidth > 0).length); });</script>")
    probe.write_text((folder / "report.html").read_text().replace("</body>", script + "</body>"))
    try:
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND",
                 f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]
        dom = subprocess.run([str(CHROMIUM), *flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True,
                             timeout=120)
        shot = tmp_path / "report.png"
        subprocess.run([str(CHROMIUM), *flags, f"--screenshot={shot}", "--window-size=1200,1600",
                        (folder / "report.html").as_uri()], capture_output=True, timeout=120)
    finally:
        probe.unlink()
    found = re.search(r'data-probe="(\d+):(\d+)"', dom.stdout)
    assert found is not None, dom.stderr[-2000:]
    n_plots = len(list((folder / "plots").glob("*.png")))
    assert found.groups() == (str(n_plots), str(n_plots))
    assert Image.open(shot).size == (1200, 1600)


def test_summary_records_what_re_runs_it(folder):
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["working_directory"] == str(Path.cwd())
    assert summary["git_dirty"] in (True, False, None)
    assert summary["data_fingerprint"]["source"] == "synthetic" and summary["data_fingerprint"]["files"] == []
    assert summary["data_seed"] == summary["seed"] == 0
    assert shutil.which("git") is None or summary["git_commit"] is None or (
        summary["git_commit"].endswith("-dirty") == summary["git_dirty"])


def _fake_run(folder: Path, created: str, aucs: dict) -> None:
    """A results folder as `mlnb runs` reads it: a summary.json with the headline only."""
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({
        "name": folder.parent.name, "created": created, "command": "mlnb run c.toml",
        "models": {model: {"macro_auc": auc} for model, auc in aucs.items()}}))


def test_runs_of_a_sibling_folder_are_found_from_its_parent(tmp_path, monkeypatch):
    """`mlnb runs ..` from a sibling folder: the runs a config's own folder made lie four levels down."""
    project = tmp_path / "project"
    _fake_run(project / "configs" / "results" / "quickstart" / "20260101-000000", "2026-01-01T00:00:00", {"nb": 0.8})
    (project / "notes").mkdir()
    (project / ".venv" / "a" / "summary.json").mkdir(parents=True)  # hidden: never searched, never named
    monkeypatch.chdir(project / "notes")
    result = CliRunner().invoke(app, ["runs", ".."])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1].startswith("configs/results/quickstart/20260101-000000  run")
    assert "warning" not in result.output


def test_the_search_is_bounded_and_says_where_it_stopped(tmp_path, monkeypatch):
    import mlnb.report.runs as runs

    monkeypatch.setattr(runs, "MAX_FOLDERS", 5)
    for name in "abcdefgh":
        (tmp_path / name).mkdir()
    _fake_run(tmp_path / "a" / "study" / "1", "2026-01-01T00:00:00", {"nb": 0.8})
    found, skipped = runs.scan_runs(tmp_path)
    assert found == [] and len(skipped) == 1
    assert str(skipped[0]) == (f"{tmp_path / 'e'}: not listed (not searched, nor any folder after it: the search "
                               "stops after 5 folders (name a folder nearer the results))")


def test_index_lists_runs_in_the_order_of_mlnb_runs_with_a_sortable_column_per_metric(tmp_path):
    for stamp, created, aucs in [("1", "2026-01-01T10:00:00", {"nb": 0.9, "lr": 0.7}),
                                 ("2", "2026-01-02T10:00:00", {"nb": 0.95}),
                                 ("3", "2026-01-03T10:00:00", {"nb": 0.85, "lr": 0.75})]:
        _fake_run(tmp_path / "study" / stamp, created, aucs)
    listed = CliRunner().invoke(app, ["runs", str(tmp_path), "--html"])
    assert listed.exit_code == 0, listed.output
    order = [line.split()[0] for line in listed.output.splitlines()[1:4]]
    assert order == ["study/1", "study/2", "study/3"]  # oldest first
    text = (tmp_path / "index.html").read_text()
    assert re.findall(r'<a href="\./study/\d/report\.html">(study/\d)</a>|<td class="text">(study/\d)</td>',
                      text) == [("", f) for f in order]
    titles = re.findall(r"<th[^>]*>([^<]*)</th>", text)
    assert titles == ["folder", "kind", "created", "data", "models", "macro AUC nb", "macro AUC lr", "overrides"]
    rows = re.findall(r"<tr>(.*?)</tr>", text)[1:]
    assert [re.findall(r'<td data-value="([^"]+)">([^<]+)</td>', row) for row in rows] == [
        [("0.9", "0.9000"), ("0.7", "0.7000")], [("0.95", "0.9500")], [("0.85", "0.8500"), ("0.75", "0.7500")]]
    assert all(row.count("<td") == len(titles) for row in rows)  # a missing metric is an empty cell
    assert "<script>" in text and "aria-sort" in text and parse(tmp_path / "index.html").external == []


@pytest.mark.skipif(not CHROMIUM.is_file(), reason="no headless browser at /usr/bin/chromium (Debian: apt-get "
                    "install chromium); the parser-based test above still checks the page's columns and order")
def test_index_sorts_by_a_metric_in_a_browser(tmp_path):
    """A click on a metric's title sorts the rows by its numbers, a second click the other way, a run without
    the metric last both ways; a click on a text column's title sorts it in natural order."""
    for stamp, created, aucs in [("1", "2026-01-01T10:00:00", {"nb": 0.9, "lr": 0.7}),
                                 ("2", "2026-01-02T10:00:00", {"nb": 0.95}),
                                 ("10", "2026-01-03T10:00:00", {"nb": 0.85, "lr": 0.75}),
                                 ("3", "2026-01-04T10:00:00", {"nb": 0.5, "lr": 0.125})]:
        _fake_run(tmp_path / "results" / "study" / stamp, created, aucs)
    root = tmp_path / "results"
    assert CliRunner().invoke(app, ["runs", str(root), "--html"]).exit_code == 0
    probe = ("<script>window.addEventListener('load', () => { const th = [...document.querySelectorAll('th')]; "
             "const order = () => [...document.querySelectorAll('tbody tr')].map(r => r.cells[0].textContent)"
             ".join(' '); const seen = [order()]; for (const title of ['macro AUC lr', 'macro AUC lr', 'folder']) "
             "{ th.find(h => h.textContent === title).click(); seen.push(order()); } "
             "document.body.setAttribute('data-probe', seen.join('|')); });</script>")
    page = root / "probe.html"
    page.write_text((root / "index.html").read_text().replace("</body>", probe + "</body>"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]
    dom = subprocess.run([str(CHROMIUM), *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120)
    found = re.search(r'data-probe="([^"]*)"', dom.stdout)
    assert found is not None, dom.stderr[-2000:]
    assert found.group(1).split("|") == [
        "study/1 study/2 study/10 study/3",  # as `mlnb runs` lists them: oldest first
        "study/3 study/1 study/10 study/2",  # lr ascending: 0.125, 0.7, 0.75, then the run without lr
        "study/10 study/1 study/3 study/2",  # descending; still last
        "study/1 study/2 study/3 study/10"]  # by folder: natural order, 10 after 3
