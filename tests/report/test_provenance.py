"""Provenance of a results folder: the data fingerprint, the working directory, a saved config that
re-runs bit-identically from any folder; `seed` split into data.seed and each model's random_state;
compressed scores that old (uncompressed) files still load beside."""

import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.config import dump_toml, load_config
from mlnb.data.synthetic import make_rcv1_like
from mlnb.data.fingerprint import EDGE_BYTES, data_fingerprint, file_fingerprint
from mlnb.report.provenance import with_absolute_paths
from mlnb.scores import load_scores
from mlnb.study import run_study

TINY = ["data.synthetic.n_documents=600", "data.synthetic.n_features=300", "data.synthetic.n_categories=10",
        "report.category=1", "eval.bootstrap=0", "report.plots=false"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A tiny multilabel svmlight file and a config that names it by a path relative to its folder."""
    folder = tmp_path_factory.mktemp("corpus")
    data = make_rcv1_like(n_documents=500, n_features=300, n_categories=10, seed=3)
    dump_svmlight_file(data.X, data.Y, str(folder / "tiny.svm"),
                       multilabel=True, zero_based=False)
    (folder / "study.toml").write_text('name = "tiny"\n[data]\nsource = "svmlight"\n[data.svmlight]\n'
                                       'path = "tiny.svm"\nn_categories = 10\n[report]\ncategory = 1\nplots = false\n'
                                       '[eval]\nbootstrap = 0\n', encoding="utf-8")
    return folder


def _run_in(folder: Path, config: str, out: Path) -> Path:
    here = Path.cwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(app, ["run", config, "--out", str(out), "--quiet"])
    finally:
        os.chdir(here)
    assert result.exit_code == 0, result.output
    return Path(result.output.strip().splitlines()[-1].removeprefix("results: "))


def test_saved_config_re_runs_bit_identically_from_another_folder(corpus, tmp_path):
    first = _run_in(corpus, "study.toml", tmp_path / "out")  # data path relative to the corpus folder
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    second = _run_in(elsewhere, str(first / "config.toml"), tmp_path / "again")
    saved = load_config(first / "config.toml")
    assert saved.data.svmlight.path == str(corpus / "tiny.svm")
    a, b = load_scores(first), load_scores(second)
    assert (a.Y_test != b.Y_test).nnz == 0 and list(a.scores) == list(b.scores) == ["nb", "lr"]
    for key in a.scores:
        assert a.scores[key].tobytes() == b.scores[key].tobytes()
    assert (first / "metrics.csv").read_bytes() == (second / "metrics.csv").read_bytes()
    summary = json.loads((first / "summary.json").read_text())
    assert summary["working_directory"] == str(corpus)
    (entry,) = summary["data_fingerprint"]["files"]
    assert entry["path"] == str(corpus / "tiny.svm") and entry["hashed"] == "whole"
    assert entry["sha256"] == hashlib.sha256((corpus / "tiny.svm").read_bytes()).hexdigest()
    assert entry["size"] == (corpus / "tiny.svm").stat().st_size
    assert json.loads((second / "summary.json").read_text())["data_fingerprint"]["digest"] == \
        summary["data_fingerprint"]["digest"]


def test_absolute_paths_leave_other_keys_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config(None, ["data.source=svmlight", "data.svmlight.path=d/*.svm", "data.text.path=~/t.csv"])
    absolute = with_absolute_paths(config)
    assert absolute.data.svmlight.path == str(tmp_path / "d" / "*.svm")
    assert absolute.data.text.path == "~/t.csv" and absolute.data.svmlight.test_path == ""
    assert config.data.svmlight.path == "d/*.svm"  # a copy
    assert dump_toml(absolute).count(str(tmp_path)) == 1


def test_large_files_are_hashed_by_their_ends(tmp_path):
    big = tmp_path / "big.svm"
    payload = np.random.default_rng(0).bytes(5 * EDGE_BYTES)
    big.write_bytes(payload)
    found = file_fingerprint(big)
    assert found["hashed"] == "first and last MiB" and found["size"] == len(payload)
    assert found["sha256"] == hashlib.sha256(payload[:EDGE_BYTES] + payload[-EDGE_BYTES:]).hexdigest()
    middle = bytearray(payload)
    middle[2 * EDGE_BYTES] ^= 1  # as documented: a same-size change in the middle is not seen
    big.write_bytes(bytes(middle))
    assert file_fingerprint(big)["sha256"] == found["sha256"]
    big.write_bytes(payload[:-1] + b"x")
    assert file_fingerprint(big)["sha256"] != found["sha256"]
    config = load_config(None, ["data.source=svmlight", f"data.svmlight.path={tmp_path}/*.svm"])
    fingerprint = data_fingerprint(config)
    assert fingerprint["n_files"] == 1 and fingerprint["digest"] is not None


def _scores(*extra):
    result = run_study(load_config("configs/quickstart.toml", TINY + list(extra)))
    return result, {run.name: run.scores for run in result.models}


def test_seed_sets_data_seed_and_random_state_unless_they_are_given():
    base, scores = _scores()
    explicit, same = _scores("data.seed=0", "models.nb.random_state=0", "models.lr.random_state=0")
    assert all(np.array_equal(scores[k], same[k]) for k in scores)
    trained, other = _scores("models.lr.random_state=7")  # training only: same split, same NB, other LR
    assert (trained.Y_test != base.Y_test).nnz == 0 and trained.data["split"] == base.data["split"]
    assert np.array_equal(other["nb"], scores["nb"]) and not np.array_equal(other["lr"], scores["lr"])
    split, by_data = _scores("data.seed=3")  # another split; models still train with seed 0
    assert "seed 3" in split.data["split"]
    one_knob, by_seed = _scores("seed=3", "models.nb.random_state=0", "models.lr.random_state=0")
    assert all(np.array_equal(by_data[k], by_seed[k]) for k in by_data)  # precedence: explicit keys win
    assert load_config(None, ["data.seed=5"]).data_seed() == 5 and load_config(None, ["seed=4"]).data_seed() == 4
    for bad in ("data.seed=-2", "models.lr.random_state=-2"):
        with pytest.raises(Exception, match="expected a value >= -1"):
            load_config("configs/quickstart.toml", [bad])


def test_scores_are_stored_the_rest_deflated_and_old_files_still_load(tmp_path):
    result = run_study(load_config("configs/quickstart.toml", TINY))
    from mlnb.report.results import write_results

    folder = write_results(result, tmp_path)
    with zipfile.ZipFile(folder / "scores.npz") as archive:
        kinds = {info.filename: info.compress_type for info in archive.infolist()}
    assert {name for name, kind in kinds.items() if kind == zipfile.ZIP_STORED} == {"scores_nb.npy", "scores_lr.npy"}
    assert {kind for name, kind in kinds.items() if not name.startswith("scores_")} == {zipfile.ZIP_DEFLATED}
    new = load_scores(folder)
    first = (folder / "scores.npz").read_bytes()
    from mlnb.scores import save_scores

    save_scores(folder / "again.npz", new.Y_test, new.scores, new.labels, new.category_names, new.train_positives,
                new.task, new.excluded)
    assert (folder / "again.npz").read_bytes() == first  # the same bytes for the same arrays
    with np.load(folder / "scores.npz") as saved:  # the old way: every member deflated
        np.savez_compressed(folder / "scores.npz", **{name: saved[name] for name in saved.files})
    assert all(np.array_equal(new.scores[k], load_scores(folder).scores[k]) for k in new.scores)
    with np.load(folder / "scores.npz") as saved:  # the same arrays written the old way
        np.savez(folder / "scores.npz", **{name: saved[name] for name in saved.files})
    with zipfile.ZipFile(folder / "scores.npz") as archive:
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_STORED}
    old = load_scores(folder)
    assert all(np.array_equal(new.scores[k], old.scores[k]) for k in new.scores)


def test_the_data_fingerprint_is_the_one_taken_when_the_data_was_read(corpus, tmp_path):
    """It was taken when the results were written: a file replaced while the models trained was recorded as
    the new file (and a deleted one as an error), not as the data the results came from."""
    from mlnb.report.results import write_results

    data = tmp_path / "tiny.svm"
    data.write_bytes((corpus / "tiny.svm").read_bytes())
    read = hashlib.sha256(data.read_bytes()).hexdigest()
    result = run_study(load_config(corpus / "study.toml", [f"data.svmlight.path={data}"]))
    data.write_text("1 1:1\n")  # replaced after the run read it
    folder = write_results(result, tmp_path / "out")
    (entry,) = json.loads((folder / "summary.json").read_text())["data_fingerprint"]["files"]
    assert entry["sha256"] == read and entry["size"] == (corpus / "tiny.svm").stat().st_size


def test_git_variables_of_the_environment_do_not_redirect_the_recorded_commit(tmp_path, monkeypatch):
    import subprocess

    from mlnb.report.provenance import git_state

    own = git_state()
    if own[0] is None:
        pytest.skip("mlnb does not run from a git checkout here (or git is missing)")
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    subprocess.run(["git", "-C", str(other), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "other"], check=True)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert git_state()[0] == own[0]
