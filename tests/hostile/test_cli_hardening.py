"""Hostile inputs of round 3 that the command line and the Dask backend must survive: every exception
type is one line with exit code 2 (``--debug`` shows the traceback), input nested too deeply, names
and labels too long for a file name or a report line, unbounded passes, a spill folder that cannot be
written or that a killed process left behind, ``--out`` through a folder that does not exist yet, and
Dask clusters that die, hang or are not Dask at all (each call with a deadline, each failure one line).

The Dask scenarios run in a child process with a deadline of their own: a hang fails the test rather
than the suite."""

import os
import re
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.errors import MlnbError

PROJECT = Path(__file__).resolve().parents[2]
QUICKSTART = str(PROJECT / "configs" / "quickstart.toml")


def invoke(*args):
    return CliRunner().invoke(app, [*map(str, args)])


def one_error_line(result, *needles) -> str:
    """The one line ``error: ...`` of a command that ended with exit code 2."""
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, (result.exit_code, result.output[-3000:], result.exception)
    assert len(lines) == 1, result.output[-3000:]
    assert lines[0].startswith("error: ") and len(lines[0]) < 2500, lines[0][:3000]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# -- the top-level handler ------------------------------------------------------------------------
@pytest.mark.parametrize("error, needle", [
    (RuntimeError("something broke\nover two lines"), "RuntimeError: something broke over two lines"),
    (PermissionError(13, "Permission denied", "/some/file"), "/some/file: Permission denied"),
    (RecursionError("maximum recursion depth exceeded"), "nested too deeply"),
    (MemoryError(), "out of memory"),
])
def test_every_exception_type_is_one_line_with_exit_code_2(monkeypatch, error, needle):
    def load_config(*args, **kwargs):
        raise error

    monkeypatch.setattr("mlnb.config.load_config", load_config)
    one_error_line(invoke("show-config", QUICKSTART), needle)


def test_debug_shows_the_traceback_before_the_line(monkeypatch):
    def load_config(*args, **kwargs):
        raise RuntimeError("something broke")

    monkeypatch.setattr("mlnb.config.load_config", load_config)
    monkeypatch.delenv("MLNB_DEBUG", raising=False)
    from mlnb import cli_process

    monkeypatch.setattr(cli_process, "DEBUG", {"on": False})
    result = invoke("--debug", "show-config", QUICKSTART)
    assert result.exit_code == 2
    assert "Traceback (most recent call last)" in result.output and "in load_config" in result.output
    assert result.output.strip().splitlines()[-1].startswith("error: RuntimeError: something broke")


# -- input nested too deeply (RecursionError) -----------------------------------------------------
def test_a_deeply_nested_toml_file_is_one_line(tmp_path):
    config = tmp_path / "deep.toml"
    config.write_text(f"name = {nested(3000)}\n")
    one_error_line(invoke("show-config", config), str(config), "nested too deeply")


def test_deeply_nested_set_and_param_values_are_one_line(tmp_path):
    one_error_line(invoke("show-config", QUICKSTART, "--set", f"models.nb.alpha={nested(3000)}"),
                   "--set 'models.nb.alpha'", "nested too deeply")
    one_error_line(invoke("sweep", QUICKSTART, "--quiet", "--out", tmp_path / "out",
                          "--param", f"models.nb.alpha={nested(3000)}"), "nested too deeply")
    assert not (tmp_path / "out").exists()


# -- names, labels, passes ------------------------------------------------------------------------
def test_a_ten_megabyte_name_is_refused_in_a_short_line():
    line = one_error_line(invoke("show-config", QUICKSTART, "--set", "name=" + "a" * 10_000_000),
                          "name: expected at most 4096 characters")
    assert len(line) < 500


def test_a_200_character_model_name_is_refused():
    one_error_line(invoke("show-config", QUICKSTART, "--set", f"models.{'m' * 200}.kind=\"naive_bayes\""),
                   "model name", "(at most 64")


@pytest.mark.parametrize("label", ["two\\nlines", "a\\u0000b", "x" * 300])
def test_a_label_that_is_not_one_short_line_is_refused(label):
    one_error_line(invoke("show-config", QUICKSTART, "--set", f'models.nb.label="{label}"'), "models.nb.label")


def test_report_markdown_escapes_labels_and_category_names():
    from mlnb.report.markdown import plain

    # markup characters escaped for Markdown, and '<' '>' as HTML entities (a viewer that renders
    # inline HTML would otherwise read a name as a tag)
    assert plain("a\nb | *c* _d_ [e](f) <g>") == "a b \\| \\*c\\* \\_d\\_ \\[e\\]\\(f\\) &lt;g&gt;"


def test_npasses_is_bounded():
    one_error_line(invoke("show-config", QUICKSTART, "--set", "models.lr.npasses=1000000000000"),
                   "models.lr.npasses", "<= 100000")


def test_a_huge_integer_value_is_one_line():
    one_error_line(invoke("show-config", QUICKSTART, "--set", "models.lr.npasses=" + "9" * 5000))


# -- output and spill folders ---------------------------------------------------------------------
def test_out_through_a_folder_that_does_not_exist_yet(tmp_path):
    from mlnb.report.folder import atomic_folder, check_writable

    (tmp_path / "a").mkdir()
    out = tmp_path / "a" / "x" / ".." / ".." / "y"  # x is missing: made on the way, as the kernel reads it
    check_writable(out, "study")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a"]  # left as found
    with atomic_folder(out, "study") as staging:
        (staging.path / "report.md").write_text("done")
    assert [p.name for p in (tmp_path / "y" / "study").iterdir()][0][:2] == "20"


STREAMING_DATA = """\
[data]
source = "svmlight"
streaming = true
chunk_size = 40
[data.svmlight]
path = "{path}"
"""


@pytest.fixture
def streaming_config(tmp_path, study_toml) -> Path:
    rng = np.random.default_rng(0)
    lines = []
    for i in range(200):
        k = i % 3
        words = sorted({1 + 3 * k, 2 + 3 * k, *rng.integers(1, 20, size=3).tolist()})
        lines.append(f"{k} " + " ".join(f"{w}:1" for w in words))
    (tmp_path / "data.svm").write_text("\n".join(lines) + "\n")
    config = tmp_path / "stream.toml"
    config.write_text(study_toml(STREAMING_DATA.format(path=tmp_path / "data.svm")))
    return config


def _unwritable_folder() -> str:
    for candidate in ("/sys/kernel", "/proc/sys"):
        try:
            os.rmdir(tempfile.mkdtemp(dir=candidate))
        except OSError:
            if os.path.isdir(candidate):
                return candidate
    pytest.skip("no folder here that even this user cannot write into")


def test_a_spill_folder_that_cannot_be_written_is_refused_before_the_data(tmp_path, streaming_config):
    folder = _unwritable_folder()
    one_error_line(invoke("run", streaming_config, "--quiet", "--out", tmp_path / "out",
                          "--set", f'engine.spill_folder="{folder}"'), "engine.spill_folder", "cannot write")
    assert not (tmp_path / "out").exists()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_spill_folder_name_says_which_process_made_it():
    from mlnb.backends.spill import _STALE, spill_prefix

    match = _STALE.fullmatch(spill_prefix() + "abc_1234")
    assert match and int(match.group(1)) == os.getpid()


def test_spill_folders_of_dead_processes_are_removed_at_start(tmp_path, streaming_config):
    spill = tmp_path / "spill"
    spill.mkdir()
    host, dead = (re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "host")[:64], _dead_pid()
    stale = spill / f"mlnb-scores-{dead}@{host}-k2j4h5g6"
    (stale / "part-00000").mkdir(parents=True)
    (stale / "part-00000" / "scores.npy").write_bytes(b"x" * 1000)
    kept = [spill / f"mlnb-scores-{os.getppid()}@{host}-a1b2c3d4",  # a process that runs
            spill / f"mlnb-scores-{dead}@other-machine-a1b2c3d4",  # another machine's (a shared folder)
            spill / "mlnb-scores-a1b2c3d4"]  # no process to tell by
    for folder in kept:
        folder.mkdir()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("keep")
    (spill / f"mlnb-scores-{dead}@{host}-linkkkkk").symlink_to(precious, target_is_directory=True)
    result = invoke("run", streaming_config, "--quiet", "--out", tmp_path / "out", "--set",
                    f'engine.spill_folder="{spill}"')
    assert result.exit_code == 0, result.output
    assert not stale.exists()
    assert all(folder.is_dir() for folder in kept)
    assert (precious / "keep.txt").read_text() == "keep"


# -- Dask -----------------------------------------------------------------------------------------
def _child(code: str, deadline: float) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``code`` in a fresh interpreter (this project first on its path); fail if it outlives ``deadline``."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=PROJECT, env=env,
                              capture_output=True, text=True, timeout=deadline)
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung: still running after {deadline} s")
    return done, time.monotonic() - started


@pytest.fixture
def silent_server():
    """A TCP server on 127.0.0.1 that accepts connections and never says a word."""
    server = socket.create_server(("127.0.0.1", 0))
    held, stop = [], threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


@pytest.mark.slow
def test_a_server_that_is_not_dask_is_given_up_after_engine_timeout(silent_server):
    pytest.importorskip("distributed")
    done, seconds = _child(f"""
        from mlnb.backends.dask import DaskBackend
        from mlnb.errors import MlnbError
        try:
            DaskBackend(address={silent_server!r}, timeout=1)
        except MlnbError as error:
            print("refused:", error)
        """, deadline=20)
    assert done.returncode == 0 and "refused: engine.address" in done.stdout, done.stdout + done.stderr[-2000:]
    assert "not a Dask scheduler" in done.stdout and seconds < 15


def test_a_malformed_address_is_one_line():
    one_error_line(invoke("show-config", QUICKSTART, "--set", 'engine.address="tcp://127.0.0.1:99999"'),
                   "engine.address", "host:port")
    one_error_line(invoke("show-config", QUICKSTART, "--set", 'engine.address="not an address"'),
                   "engine.address")
    pytest.importorskip("distributed")
    from mlnb.backends.dask import DaskBackend

    with pytest.raises(MlnbError, match=r"^engine.address = 'tcp://\[::1': ") as error:
        DaskBackend(address="tcp://[::1", timeout=1)
    assert "\n" not in str(error.value)


@pytest.mark.slow
def test_a_worker_killed_while_the_shared_arguments_travel_does_not_hang_the_run():
    """One worker stopped, a map with a large shared argument started, then the worker killed: the
    arguments must not wait on a copy to the dead worker (broadcast replication retried it for ever)."""
    pytest.importorskip("distributed")
    done, seconds = _child("""
        import os, signal, threading, time
        import numpy as np

        def task(p, values):
            time.sleep(0.1)
            return float(values[p])

        def add(a, b):
            return a + b

        if __name__ == "__main__":
            from mlnb.backends.dask import DaskBackend
            with DaskBackend(n_workers=2, timeout=3, retries=2) as backend:
                pids = sorted(backend.client.run(os.getpid).values())
                os.kill(pids[1], signal.SIGSTOP)
                threading.Timer(1.0, os.kill, (pids[1], signal.SIGKILL)).start()
                print("result", backend.map_reduce(task, list(range(6)), np.arange(10**6, dtype=np.float64),
                                                   combine=add))
        """, deadline=25)
    assert done.returncode == 0 and "result 15.0" in done.stdout, (done.stdout, done.stderr[-3000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


@pytest.mark.slow
def test_a_killed_scheduler_is_one_line_within_engine_timeout(tmp_path):
    pytest.importorskip("distributed")
    done, seconds = _child(f"""
        import json, os, signal, subprocess, sys, threading, time
        from pathlib import Path

        def slow(p):
            import time
            time.sleep(30)
            return p

        if __name__ == "__main__":
            from mlnb.backends.dask import DaskBackend
            from mlnb.errors import MlnbError
            file = Path({str(tmp_path / "scheduler.json")!r})
            quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
                                          "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                                          str(file)], **quiet)
            worker = None
            try:
                for _ in range(200):
                    if file.exists() and file.read_text().strip():
                        break
                    time.sleep(0.05)
                address = json.loads(file.read_text())["address"]
                worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                           "--nthreads", "1", "--no-nanny", "--no-dashboard"], **quiet)
                backend = DaskBackend(address=address, timeout=2)
                threading.Timer(0.5, os.kill, (scheduler.pid, signal.SIGKILL)).start()
                started = time.monotonic()
                try:
                    backend.map(slow, [1, 2], description="scoring")
                except MlnbError as error:
                    print("failed:", error, round(time.monotonic() - started, 1))
                backend.close()
            finally:
                for process in (scheduler, worker):
                    if process is not None:
                        process.kill()
        """, deadline=30)
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("failed:")]
    assert "lost the Dask scheduler" in line and "during scoring" in line, line
    assert float(line.rsplit(" ", 1)[1]) < 10, line
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 1, done.stderr[-3000:]
