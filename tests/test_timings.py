"""Seconds per stage (``mlnb.timings``) and ``mlnb run --profile``: own time, nothing counted twice."""

import json
import time

import pytest
from typer.testing import CliRunner

from mlnb import timings
from mlnb.cli import app

TICK = 0.05  # sleeps of this length: the wall times below are sums of them, give or take the scheduler


def rows(clock) -> dict:
    return {row["stage"]: row for row in clock.table()}


def test_a_stage_within_another_counts_for_the_inner_one_only():
    with timings.recording() as clock:
        with timings.stage("outer"):
            time.sleep(TICK)
            with timings.stage("inner"):
                time.sleep(2 * TICK)
            time.sleep(3 * TICK)
            timings.add("measured elsewhere", 3 * TICK)  # e.g. a fit timed by the engine: not outer's
        with timings.stage("inner"):  # entered again: adds to its row
            time.sleep(TICK)
    table = rows(clock)
    assert list(table) == ["outer", "inner", "measured elsewhere", "other", "total"]  # first entered first
    assert table["outer"]["seconds"] == pytest.approx(TICK, abs=0.04)
    assert table["inner"]["seconds"] == pytest.approx(3 * TICK, abs=0.04)
    assert table["measured elsewhere"]["seconds"] == pytest.approx(3 * TICK)
    # the own seconds and "other" add up to the wall time of the recording
    own = sum(row["seconds"] for name, row in table.items() if name != "total")
    assert own == pytest.approx(table["total"]["seconds"], abs=1e-3)
    assert table["total"]["share"] == 1.0
    assert sum(row["share"] for name, row in table.items() if name != "total") == pytest.approx(1.0, abs=1e-3)
    # sleeping keeps no core busy; the added stage shares the enclosing stage's CPU time
    assert table["inner"]["busy_cores"] < 0.5 and table["measured elsewhere"]["cpu_seconds"] >= 0.0


def test_busy_cores_is_cpu_over_wall():
    with timings.recording() as clock, timings.stage("spin"):
        end = time.perf_counter() + 2 * TICK
        while time.perf_counter() < end:
            pass
    spin = rows(clock)["spin"]
    assert spin["cpu_seconds"] <= spin["seconds"] * 1.05 + 0.01  # one thread: at most one core
    assert spin["busy_cores"] == pytest.approx(spin["cpu_seconds"] / spin["seconds"], abs=0.01)


def test_an_open_stage_counts_its_time_so_far():
    with timings.recording() as clock:
        with timings.stage("writing"):
            with timings.stage("plots"):
                time.sleep(TICK)
            time.sleep(TICK)
            table = rows(clock)  # as summary.json is written, inside "writing"
    assert table["plots"]["seconds"] == pytest.approx(TICK, abs=0.04)
    assert table["writing"]["seconds"] == pytest.approx(TICK, abs=0.04)
    assert rows(clock)["writing"]["seconds"] >= table["writing"]["seconds"]


def test_nothing_is_recorded_outside_a_recording_and_an_error_closes_its_stages():
    with timings.stage("ignored"):
        timings.add("ignored too", 1.0)
    assert timings.current() is None
    clock = timings.Timings()
    with pytest.raises(ZeroDivisionError), timings.recording(clock), timings.stage("failing"):
        1 / 0
    assert timings.current() is None and "failing" in rows(clock) and not clock._open
    with timings.recording(clock) as outer, timings.recording(timings.current()) as inner:  # run_study in `mlnb run`
        assert inner is outer is clock


def test_run_profile_prints_the_stages_and_summary_json_keeps_them(tmp_path):
    out = tmp_path / "results"
    result = CliRunner().invoke(app, ["run", "configs/quickstart.toml", "--out", str(out), "--quiet", "--profile",
                                      "--set", "data.synthetic.n_documents=2000",
                                      "--set", "data.synthetic.n_features=2000", "--set", "eval.bootstrap=20"])
    assert result.exit_code == 0, result.output
    printed = result.output.split("where the time went (--profile):")[1]
    for name in ("load", "features", "fit nb", "fit lr", "score", "evaluate", "bootstrap", "intervals",
                 "comparisons", "plots", "writing", "other", "total"):
        assert f"\n{name} " in printed, name
    folder = next((out / "quickstart").iterdir())
    summary = json.loads((folder / "summary.json").read_text())
    table = {row["stage"]: row for row in summary["timings"]}
    assert {"load", "fit nb", "fit lr", "evaluate", "plots", "writing", "total"} <= set(table)
    assert sum(row["seconds"] for name, row in table.items() if name != "total") == \
        pytest.approx(table["total"]["seconds"], rel=0.01, abs=0.01)
    assert "## Where the time went" in (folder / "report.md").read_text()


def test_a_spilled_streaming_study_records_its_stages_without_the_cli(tmp_path):
    import numpy as np
    from sklearn.datasets import dump_svmlight_file

    from mlnb.config import load_config
    from mlnb.data.synthetic import make_rcv1_like
    from mlnb.study import run_study

    corpus = make_rcv1_like(n_documents=1500, n_features=500, n_categories=8, seed=2)
    for i, part in enumerate(np.array_split(np.arange(1500), 2)):
        dump_svmlight_file(corpus.X[part], corpus.Y[part].toarray(), str(tmp_path / f"part-{i}.svm"), multilabel=True,
                           zero_based=False)
    config = tmp_path / "stream.toml"
    config.write_text(f"""
[data]
source = "svmlight"
streaming = true
chunk_size = 300
[data.svmlight]
path = "{tmp_path}/part-*.svm"
n_features = 500
n_categories = 8
[eval]
bootstrap = 0
[engine]
scores = "disk"
[report]
plots = false
""")
    result = run_study(load_config(config))
    table = rows(result.timings)
    assert {"fit", "fit nb", "fit lr", "score", "evaluate", "intervals", "comparisons", "total"} <= set(table)
    assert "plots" not in table and timings.current() is None  # the recording ended with run_study
    assert table["total"]["seconds"] >= table["fit lr"]["seconds"] > 0
