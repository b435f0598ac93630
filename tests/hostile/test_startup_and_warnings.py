"""Ctrl-C and SIGTERM while the command is still importing end in one line, not a traceback; the
garbage collector, off during the command's start-up, is back on after it; input that is accepted
but worth knowing about (a label only in the test file) is one warning line and is recorded in the
results."""

import gc
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlnb.cli import app

PROJECT = Path(__file__).resolve().parents[2]


def _catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (Linux: the SigCgt mask of /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught >> (signum - 1) & 1)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_the_imports(tmp_path, signum, code):
    """Once the entry point catches the signals, the interpreter imports numpy, scipy, scikit-learn (1-2 s in
    all): a signal then ends the command in one line."""
    # a child starts ignoring SIGINT if this process ignores it (pytest started in the background by a
    # non-interactive shell, or under nohup), and then the interpreter catches none until the entry point does:
    # start it as a terminal would, with SIGINT handled here (a handled signal is reset to its default at exec)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen([sys.executable, "-m", "mlnb_entry", "run",
                                    str(PROJECT / "configs" / "quickstart.toml"), "--out", str(tmp_path / "out"),
                                    "--quiet"], cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, inherited)
    # the entry point's first act is to catch SIGINT, then SIGTERM; the heavy imports come after it. Wait for
    # SIGTERM's (the interpreter catches SIGINT itself from its start; a fixed delay raced that start on a loaded
    # machine), then signal at once
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _catches(process.pid, signal.SIGTERM):
        time.sleep(0.005)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=60)
    assert (process.returncode, stderr, stdout) == (code, "interrupted\n", "")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_entry_point_runs_the_cli(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mlnb_entry", "run", str(tmp_path / "none.toml")], cwd=PROJECT,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"error: {tmp_path / 'none.toml'}: no such config file\n"


@pytest.fixture
def collector_off():
    """The collector as the entry point leaves it for a command (off); restored after the test."""
    frozen = gc.get_freeze_count()
    gc.disable()
    yield frozen
    gc.unfreeze()
    gc.enable()


@pytest.mark.parametrize("args", [["show-config", "configs/quickstart.toml"], ["run", "configs/none.toml"]],
                         ids=["succeeds", "fails"])
def test_a_command_freezes_its_imports_and_turns_the_collector_back_on(collector_off, args):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == (0 if args[0] == "show-config" else 2), result.output
    assert gc.isenabled()
    assert gc.get_freeze_count() > collector_off


def test_within_a_program_a_command_leaves_the_collector_alone():
    frozen = gc.get_freeze_count()
    assert CliRunner().invoke(app, ["show-config", "configs/quickstart.toml"]).exit_code == 0
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_a_label_only_in_the_test_file_is_a_warning_and_a_listed_category(tmp_path, tiny_config):
    train = "text,label\n" + "".join(f"{w} word{i},{'a' if i % 2 else 'b'}\n" for i, w in enumerate(["x", "y"] * 6))
    (tmp_path / "train.csv").write_text(train)
    (tmp_path / "test.csv").write_text(train.replace(",b\n", ",=new\n", 2))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(tiny_config), "--out", str(out), "--quiet", "--set", "data.source=text",
                                      "--set", f"data.text.path={tmp_path / 'train.csv'}",
                                      "--set", f"data.text.test_path={tmp_path / 'test.csv'}"])
    assert result.exit_code == 0, result.output
    warning_lines = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warning_lines == [f"warning: {tmp_path / 'test.csv'}: 1 label(s) occur only in the test part: '=new'; kept "
                             "as categories without training documents (no model can learn them; listed as untrainable)"]
    (folder,) = (out / "tiny").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    assert "=new" in json.dumps(summary)  # recorded, as every category without training documents
    assert "=new" in (folder / "report.md").read_text()


def test_a_signal_while_a_command_gives_its_handlers_back_goes_to_the_previous_handler(monkeypatch):
    """A SIGTERM between the two calls that give SIGINT's and SIGTERM's handlers back used to run the command's
    handler, which ignores both for its clean-up: the process then ignored SIGINT from there on, and so did
    every child it started (a later test's `mlnb run` child let Ctrl-C pass and ran to the end)."""
    from mlnb import cli_process

    received = []
    previous_int, previous_term = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    real_signal = signal.signal
    calls = []

    def signal_then_a_sigterm(number, handler):  # the first handler given back, then a SIGTERM arrives
        done = real_signal(number, handler)
        calls.append(number)
        if len(calls) == 3:  # 2 calls install the command's handlers; the 3rd gives SIGINT's back
            signal.raise_signal(signal.SIGTERM)
        return done

    try:
        monkeypatch.setattr(cli_process.signal, "signal", signal_then_a_sigterm)
        try:
            with cli_process.signals_as_interrupts():
                pass
        except cli_process.Interrupted:
            pytest.fail("the SIGTERM reached the command's handler after the command had ended")
        monkeypatch.undo()
        assert received == [signal.SIGTERM]  # delivered to the handler that was there before the command
        assert signal.getsignal(signal.SIGINT) is previous_int
    finally:
        real_signal(signal.SIGINT, previous_int)
        real_signal(signal.SIGTERM, previous_term)
