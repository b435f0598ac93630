"""The progress display (``mlnb.progress``): one live line for a run on a terminal, ending in one summary
line; elsewhere only the lines of record."""

import io
import re

import pytest

from mlnb import progress, timings


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def enabled(monkeypatch):
    monkeypatch.setattr(progress, "_enabled", True)


def test_the_live_line_counts_the_run_stages_and_shows_the_step_and_its_note(enabled):
    with timings.recording() as clock:
        display = progress._RunDisplay(clock, ["load", "fit", "score", "writing"])
        with timings.stage("load"):
            pass
        with timings.stage("fit"), display.step("fitting LR"):
            display.detail = "LR pass 1/2: 500 documents of 1,000, 2,000 docs/s, ETA 0.8 s"
            line = display.line()
            assert re.fullmatch(r"\[1/4\] fit: fitting LR · LR pass 1/2: 500 documents of 1,000, 2,000 docs/s, "
                                r"ETA 0\.8 s \(\d+\.\d s\)", line), line
        with timings.stage("comparisons"):  # a stage not expected joins the count once entered
            assert display.line().startswith("[2/5] comparisons:")
    assert display.line().startswith("[3/5]")  # load, fit and comparisons done; score and writing never came
    assert display.summary().startswith("done in ")


def test_on_a_terminal_a_run_leaves_its_lines_of_record_and_one_summary_line(enabled, monkeypatch):
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    with timings.recording() as clock, progress.run_display(clock, ["fit"]):
        with timings.stage("fit"), progress.status("fitting LR"):
            progress.note("LR pass 1/2: 500 documents of 1,000")  # shown in the live line only
            progress.log("LR pass 1/2: train loss 0.1, ETA 1.0 s", final=False)
            progress.log("LR pass 2/2: train loss 0.05")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())  # without the cursor moves
    kept = [line.strip() for line in text.replace("\r", "\n").splitlines() if line.strip()]
    assert "LR pass 2/2: train loss 0.05" in kept
    assert "LR pass 1/2: train loss 0.1, ETA 1.0 s" not in kept  # made stale by the next: not kept
    assert kept[-1].startswith("done in ")  # the last line: the summary, not a trail of live lines
    assert progress._display is None


def test_elsewhere_only_the_lines_of_record_print(enabled, capsys):
    with timings.recording() as clock, progress.run_display(clock, ["fit"]):
        progress.note("LR pass 1/2: 500 documents of 1,000, 2,000 docs/s, ETA 0.8 s")
        progress.log("LR pass 1/2: train loss 0.1, ETA 1.0 s", final=False)
        progress.log("LR pass 2/2: train loss 0.05")
    assert capsys.readouterr().err.splitlines() == ["LR pass 1/2: train loss 0.1, ETA 1.0 s",
                                                    "LR pass 2/2: train loss 0.05"]
