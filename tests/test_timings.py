"""Seconds per stage (``mlnb.timings``) and ``mlnb run --profile``: own time, nothing counted twice."""

import json
import time

import pytest
from typer.testing import CliRunner

from mlnb import timings
from mlnb.cli import app

TICK = 0.05  # sleeps of this length: the wall times below are sums of them


class FakeTime:
    """The clocks ``mlnb.timings`` reads, moved only by ``sleep`` (wall) and ``spin`` (wall and CPU): the
    accounting below is checked to the last digit whatever else the machine is doing."""

    def __init__(self):
        self.wall, self.cpu = 1000.0, 10.0

    def perf_counter(self) -> float:
        return self.wall

    def process_time(self) -> float:
        return self.cpu

    thread_time = process_time

    def sleep(self, seconds: float) -> None:
        self.wall += seconds

    def spin(self, seconds: float) -> None:
        self.wall += seconds
        self.cpu += seconds


@pytest.fixture
def fake_time(monkeypatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(timings, "time", fake)
    return fake


def rows(clock) -> dict:
    return {row["stage"]: row for row in clock.table()}


def test_a_stage_within_another_counts_for_the_inner_one_only(fake_time):
    with timings.recording() as clock:
        with timings.stage("outer"):
            fake_time.sleep(TICK)
            with timings.stage("inner"):
                fake_time.sleep(2 * TICK)
            fake_time.sleep(3 * TICK)
            timings.add("measured elsewhere", 3 * TICK)  # e.g. a fit timed by the engine: not outer's
        with timings.stage("inner"):  # entered again: adds to its row
            fake_time.sleep(TICK)
    table = rows(clock)
    assert list(table) == ["outer", "inner", "measured elsewhere", "other", "total"]  # first entered first
    assert table["outer"]["seconds"] == pytest.approx(TICK)
    assert table["inner"]["seconds"] == pytest.approx(3 * TICK)
    assert table["measured elsewhere"]["seconds"] == pytest.approx(3 * TICK)
    # the own seconds and "other" add up to the wall time of the recording
    own = sum(row["seconds"] for name, row in table.items() if name != "total")
    assert own == pytest.approx(table["total"]["seconds"], abs=1e-3)
    assert table["total"]["share"] == 1.0
    assert sum(row["share"] for name, row in table.items() if name != "total") == pytest.approx(1.0, abs=1e-3)
    # sleeping keeps no core busy; the added stage shares the enclosing stage's CPU time
    assert table["inner"]["busy_cores"] < 0.5 and table["measured elsewhere"]["cpu_seconds"] >= 0.0


def test_busy_cores_is_cpu_over_wall(fake_time):
    with timings.recording() as clock, timings.stage("spin"):
        fake_time.spin(2 * TICK)
        fake_time.sleep(2 * TICK)
    spin = rows(clock)["spin"]
    assert spin["cpu_seconds"] == pytest.approx(2 * TICK) and spin["seconds"] == pytest.approx(4 * TICK)
    assert spin["busy_cores"] == pytest.approx(0.5)


def test_an_open_stage_counts_its_time_so_far(fake_time):
    with timings.recording() as clock:
        with timings.stage("writing"):
            with timings.stage("plots"):
                fake_time.sleep(TICK)
            fake_time.sleep(TICK)
            table = rows(clock)  # as summary.json is written, inside "writing"
            fake_time.sleep(TICK)
    assert table["plots"]["seconds"] == pytest.approx(TICK)
    assert table["writing"]["seconds"] == pytest.approx(TICK)
    assert rows(clock)["writing"]["seconds"] == pytest.approx(2 * TICK)  # and the time after the reading


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


@pytest.mark.slow
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


# -- compiling: apart from the stages, the fit seconds and every rate ------------------------------------
def _fake_compile(seconds: float, sleep=time.sleep) -> None:
    """What numba signals while it compiles a kernel (a kernel within it: a nested event, counted once)."""
    from numba.core import event

    with event.trigger_event("numba:compile", data={}):
        with event.trigger_event("numba:compile", data={}):
            sleep(seconds)


def test_compiling_is_a_row_of_its_own_and_no_stopwatch_counts_it(fake_time):
    with timings.recording() as clock:
        with timings.stage("fit"):
            with timings.Stopwatch() as watch:
                fake_time.sleep(TICK)
                _fake_compile(4 * TICK, fake_time.sleep)
            timings.add("fit lr", watch.seconds)
    assert watch.compile_seconds == pytest.approx(4 * TICK)
    assert watch.seconds == pytest.approx(TICK)
    table = rows(clock)
    assert table["compiling"]["seconds"] == pytest.approx(4 * TICK)
    assert table["fit"]["seconds"] < TICK  # neither the fit's nor the enclosing stage's
    own = sum(row["seconds"] for name, row in table.items() if name != "total")
    assert own == pytest.approx(table["total"]["seconds"], abs=1e-3)


def test_a_rate_counts_only_the_work_after_compiling():
    now = [0.0]
    compiled = [0.0]
    rate = timings.WorkRate(clock=lambda: now[0], compiled=lambda: compiled[0])
    now[0], compiled[0] = 60.0, 59.0  # the first minibatch: 59 s of compiling, 1 s of work
    assert rate.update(100) is None  # no rate from a time that included compiling
    now[0] = 61.0
    assert rate.update(200) == pytest.approx(100.0)  # 100 documents in the second after it
    compiled[0], now[0] = 65.0, 67.0  # another kernel compiled (6 s): counting starts again
    assert rate.update(300) is None
    now[0] = 68.0
    assert rate.update(350) == pytest.approx(50.0)
    # with numba's events: a real compile event between two readings
    live = timings.WorkRate()
    _fake_compile(TICK)
    assert live.update(10) is None


@pytest.mark.slow
def test_profile_covers_the_command_from_the_process_start(tmp_path):
    """In its own process (as `mlnb` runs): --profile's total is the command's wall time, the start-up (the
    interpreter, the imports, the config) a row of it."""
    import subprocess
    import sys

    command = [sys.executable, "-c", "import sys, mlnb_entry; sys.exit(mlnb_entry.main())", "run",
               "configs/quickstart.toml", "--out", str(tmp_path), "--quiet", "--profile",
               "--set", "data.synthetic.n_documents=1000", "--set", "data.synthetic.n_features=1000",
               "--set", "eval.bootstrap=0", "--set", "report.plots=false"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    printed = {line.split()[0]: float(line.split()[-3]) for line in
               done.stdout.split("where the time went (--profile):")[1].splitlines()
               if line.strip() and not line.startswith(("-", "(", "stage"))}
    assert printed["start-up"] > 0.2  # at least the imports of numpy, scipy, numba
    # all but the process's own creation and its exit after the table
    assert printed["total"] >= 0.9 * wall - 0.3, (printed, wall)
