"""`mlnb bench`: the same models on several corpora, then ranks and tests across them."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from mlnb import MlnbError
from mlnb.cli import app
from mlnb.config import load_config
from mlnb.report.bench import cd_cliques, critical_difference_diagram
from mlnb.studies.bench import corpus_configs

MODELS = """
[models.nb]
kind = "naive_bayes"
[models.bnb]
kind = "naive_bayes"
event_model = "bernoulli"
[models.lr]
kind = "logistic"
npasses = 1
batch_size = 200
"""


def _corpus(folder, name, seed, categories, task="multilabel"):
    path = folder / f"{name}.toml"
    path.write_text(f'name = "{name}"\nseed = 99\ntask = "{task}"\n[data]\nsource = "synthetic"\n'
                    f"[data.synthetic]\nn_documents = {600 + 100 * seed}\nn_features = 400\n"
                    f"n_categories = {categories}\nwords_per_document = {20 + 10 * seed}\n[report]\ncategory = 1\n"
                    '[models.other]\nkind = "prior_baseline"\n', encoding="utf-8")
    return path


def _bench(folder, corpora, extra=""):
    path = folder / "bench.toml"
    listed = ", ".join(f'"{p}"' for p in corpora)
    path.write_text(f'name = "tiny"\n[bench]\ncorpora = [{listed}]\n{extra}\n[eval]\nbootstrap = 0\n'
                    f"[report]\nplots = false\n{MODELS}", encoding="utf-8")
    return path


@pytest.fixture
def corpora(tmp_path):
    return [_corpus(tmp_path, name, seed, k) for name, seed, k in (("a", 1, 8), ("b", 2, 10), ("c", 3, 12), ("d", 4, 9))]


def test_corpus_configs_take_data_from_the_corpus_and_models_from_the_bench(tmp_path, corpora):
    bench = load_config(_bench(tmp_path, corpora, 'set = ["data.synthetic.n_features=300"]'))
    made = corpus_configs(bench, "bench.toml")
    assert [c.name for c in made] == ["a", "b", "c", "d"]
    assert all(list(c.models) == ["nb", "bnb", "lr"] for c in made)  # not the corpus's own 'other'
    assert [c.data.synthetic.n_categories for c in made] == [8, 10, 12, 9]
    assert all(c.data.synthetic.n_features == 300 and c.seed == 0 and c.report.category == 1 for c in made)


@pytest.mark.parametrize("make, message", [
    (lambda d, c: _bench(d, c[:1]), r"bench.corpora: expected at least 2 corpus configs"),
    (lambda d, c: _bench(d, [c[0], d / "missing.toml"]), r"bench.corpora\[1\] = '.*missing.toml': no such config"),
    (lambda d, c: _bench(d, [c[0], c[0]]), r"bench.corpora\[1\] .*name 'a' is that of bench.corpora\[0\]"),
    (lambda d, c: _bench(d, c[:2], 'set = ["data.synthetic.n_features=-1"]'),
     r"bench.corpora\[0\] .*bench.set.*data.synthetic.n_features: expected a value >= 2"),
    (lambda d, c: _bench(d, c[:2], 'metric = "nope"'), r"bench.metric: expected one of"),
    (lambda d, c: _bench(d, c[:2], 'metric = "balanced_accuracy"'),
     r"bench.metric = 'balanced_accuracy' is a multiclass metric, but bench.corpora\[0\] .* is multilabel"),
])
def test_bench_config_errors_name_the_key(tmp_path, corpora, make, message):
    path = make(tmp_path, corpora)
    result = CliRunner().invoke(app, ["bench", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and result.output.startswith("error: ")
    import re
    assert re.search(message, result.output), result.output
    assert not (tmp_path / "out").exists()  # refused before any corpus was run


def test_a_model_the_corpus_task_cannot_take_is_refused(tmp_path, corpora):
    multiclass = tmp_path / "mc.toml"
    multiclass.write_text('name = "iris"\ntask = "multiclass"\n[data]\nsource = "bundled"\n[data.bundled]\n'
                          'name = "iris"\n[models.g]\nkind = "naive_bayes"\nevent_model = "gaussian"\n')
    path = _bench(tmp_path, [corpora[0], multiclass], '[models.svm]\nkind = "linear_svm"\n')
    with pytest.raises(MlnbError, match=r"bench.corpora\[1\].*models.svm: kind 'linear_svm' does not do task"):
        corpus_configs(load_config(path), str(path))


@pytest.mark.slow
def test_bench_writes_ranks_friedman_and_per_corpus_folders(tmp_path, corpora):
    path = _bench(tmp_path, corpora)
    result = CliRunner().invoke(app, ["bench", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "out" / "tiny-bench").iterdir()
    for name in ("corpora.csv", "ranks.csv", "pairs.csv", "summary.json", "report.md", "config.toml"):
        assert (folder / name).is_file(), name
    # independent read-back: each corpus's own results folder, as `mlnb run` writes it
    table = pd.DataFrame({c: {m: v["macro_auc"] for m, v in
                              json.loads((folder / "corpora" / c / "summary.json").read_text())["models"].items()}
                          for c in "abcd"}).T[["nb", "bnb", "lr"]]
    summary = json.loads((folder / "summary.json").read_text())
    ranks = np.array([stats.rankdata(-row) for row in table.to_numpy()]).mean(axis=0)
    np.testing.assert_allclose([summary["average_ranks"][m] for m in ("nb", "bnb", "lr")], ranks)
    oracle = stats.friedmanchisquare(*table.to_numpy().T)
    assert summary["friedman"]["chi2"] == pytest.approx(oracle.statistic)
    assert summary["friedman"]["chi2_p_value"] == pytest.approx(oracle.pvalue)
    assert summary["n_corpora"] == 4 and summary["critical_difference"] == pytest.approx(2.343 * np.sqrt(12 / 24),
                                                                                          abs=1e-3)
    pairs = pd.read_csv(folder / "pairs.csv")
    assert len(pairs) == 3 and {"p_holm", "nemenyi_significant", "r_plus"} <= set(pairs.columns)
    report = (folder / "report.md").read_text()
    assert "Iman-Davenport" in report
    assert "Friedman over 4 corpora, 3 models" in result.output


@pytest.mark.slow
def test_bench_curves_give_a_crossover_row_per_corpus_and_pair(tmp_path, corpora):
    path = _bench(tmp_path, corpora[:2], "curves = true\n[curve]\nsizes = [100, 300]\nseeds = 1\n")
    result = CliRunner().invoke(app, ["bench", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "out" / "tiny-bench").iterdir()
    crossovers = pd.read_csv(folder / "crossovers.csv")
    assert list(crossovers["corpus"]) == ["a", "a", "b", "b"]  # pairs: bnb-vs-nb, lr-vs-nb
    assert set(crossovers["largest_size"]) == {300}
    assert (folder / "curves" / "a-curve" / "curve.csv").is_file()


def _bench_of(config, table: pd.DataFrame):
    """A BenchResult of a given corpus × model table, its statistics as run_bench computes them."""
    from mlnb.metrics.across_corpora import critical_difference, friedman_test, pairwise_tests
    from mlnb.studies.bench import BenchResult

    names = list(table.columns)
    return BenchResult(config=config, corpora=[], metric="macro_auc", higher_is_better=True,
                       labels={n: n for n in names}, table=table, info=pd.DataFrame(index=table.index),
                       friedman=friedman_test(table.to_numpy()), pairs=pairwise_tests(table.to_numpy(), names),
                       critical_difference=critical_difference(len(names), len(table), 0.05))


@pytest.mark.parametrize("rows, why", [
    ([[0.9, 0.8, 0.7], [0.95, 0.85, 0.75]], "it needs at least 3 corpora, and there are 2"),
    ([[0.9, 0.8, 0.7]] * 4, "every corpus ranks the models alike"),
])
def test_bench_gives_no_verdict_where_iman_davenport_is_undefined(tmp_path, corpora, rows, why):
    """The issue's bench of 2 corpora read 'F_F = inf, p = 0 … the models do not all rank alike'
    (Friedman's p = 0.135), and the CD diagram's title 'p = 0'."""
    from mlnb.report.bench import bench_markdown, cd_title

    table = pd.DataFrame(rows, columns=["nb", "bnb", "lr"], index=[f"c{i}" for i in range(len(rows))])
    bench = _bench_of(load_config(_bench(tmp_path, corpora)), table)
    report = bench_markdown(bench, [])
    assert f"Iman-Davenport F_F is undefined: {why}" in report and "No verdict at α = 0.05" in report
    assert not re.search(r"p = 0(?![.\d])", report) and "= inf" not in report
    assert "do not all rank alike" not in report
    title = cd_title(bench, 0.05)
    assert "p = 0" not in title and "F_F undefined" in title
    assert ("Nemenyi critical difference: not tested" in report) == (len(rows) < 3)
    assert ("no Nemenyi CD" in title) == (len(rows) < 3)
    cd = None if len(rows) < 3 else bench.critical_difference
    drawn = critical_difference_diagram(bench.models, bench.labels, bench.friedman.average_ranks, cd,
                                        tmp_path / "cd.png", title)
    assert drawn.stat().st_size > 0  # the average ranks, without a CD where Nemenyi's test is not made


@pytest.mark.slow
def test_a_bench_of_two_corpora_says_the_rank_tests_are_undefined(tmp_path, corpora):
    path = _bench(tmp_path, corpora[:2])
    result = CliRunner().invoke(app, ["bench", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "Iman-Davenport F_F undefined (it needs at least 3 corpora, and there are 2)" in result.output
    assert "Nemenyi CD" not in result.output and "nan" not in result.output
    (folder,) = (tmp_path / "out" / "tiny-bench").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["friedman"]["f_p_value"] is None and summary["friedman"]["f_undefined"]
    assert "No verdict at α = 0.05" in (folder / "report.md").read_text()


def test_cd_cliques():
    """Maximal runs of sorted average ranks spanning less than the CD (hand-worked)."""
    assert cd_cliques(np.array([1.0, 1.5, 2.9, 3.0]), 1.25) == [(0, 1), (2, 3)]
    # 1.0..2.2 spans 1.2 < 1.25; 1.5..2.2 lies inside it; 2.2..3.0 spans 0.8
    assert cd_cliques(np.array([1.0, 1.5, 2.2, 3.0]), 1.25) == [(0, 2), (2, 3)]
    assert cd_cliques(np.array([3.0, 1.0, 2.0]), 0.5) == []


def test_cd_diagram_is_drawn(tmp_path):
    path = critical_difference_diagram(["nb", "bnb", "cnb", "lr"], {"nb": "Naive Bayes"},
                                       np.array([3.143, 2.000, 2.893, 1.964]), 1.25, tmp_path / "cd.png",
                                       "Demšar's Table 6")
    import matplotlib.image
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 200 and image.shape[1] > 800 and image[..., :3].std() > 0.05  # drawn, not blank


ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"


@pytest.mark.slow
def test_corpora_bench_is_the_reference_table(tmp_path, monkeypatch):
    """`mlnb bench configs/corpora.toml` (~25 s of CPU on 2 cores) gives results/reference/corpora.csv
    and corpora_ranks.csv exactly: the splits are seeded hashes and the fits deterministic."""
    if not SHARED.is_dir():
        pytest.skip(f"real data not found at {SHARED}")
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, ["bench", "configs/corpora.toml", "--out", str(tmp_path), "--quiet",
                                      "--set", "report.plots=false"])
    assert result.exit_code == 0, result.output
    (folder,) = (tmp_path / "corpora-bench").iterdir()
    for produced, committed in (("corpora.csv", "corpora.csv"), ("ranks.csv", "corpora_ranks.csv")):
        pd.testing.assert_frame_equal(pd.read_csv(folder / produced),
                                      pd.read_csv(ROOT / "results" / "reference" / committed))
