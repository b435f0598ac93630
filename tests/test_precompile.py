"""mlnb.precompile: the first study compiles every kernel once (one line on stderr says so), and no later
process compiles anything, whatever its source, task or event model."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mlnb import precompile, progress
from mlnb._kernels import jit as _numba

pytestmark = pytest.mark.skipif(not _numba.HAVE_NUMBA, reason="numba is not installed")

PROJECT = Path(__file__).resolve().parents[1]
STATUS = "compiling mlnb's kernels (one time, about"


def test_every_listed_kernel_exists_and_every_signature_reads():
    names = precompile._numba_types()
    listed = precompile.tasks()
    assert len(listed) > 30
    for module, qualname, signatures in listed:
        kernel = precompile._kernel(module, qualname)
        assert kernel is not None, f"{module}.{qualname} is listed in mlnb._kernel_signatures but is no kernel"
        for text in signatures:
            assert isinstance(eval(text, {"__builtins__": {}}, names), tuple), text


def test_a_listed_kernel_that_other_listed_kernels_call_has_one_combination():
    """Nothing checks the cache after the compile (``precompile.Compiling``): that is safe while every kernel's
    combinations are written by one process. A listed kernel that other listed kernels call is compiled inside
    their tasks too, in other processes; with one combination they all write the same entry of numba's index,
    with two one process could overwrite the index another had just extended, and that combination would
    compile again on use."""
    import inspect
    import re

    listed = precompile.tasks()
    sources = {(module, qualname): inspect.getsource(precompile._kernel(module, qualname).py_func)
               for module, qualname, _ in listed}
    called = {}
    for module, qualname, signatures in listed:
        callers = [other for (_, other), source in sources.items()
                   if other != qualname and re.search(rf"\b{re.escape(qualname)}\(", source)]
        if callers:
            called[f"{module}.{qualname}"] = (len(signatures), callers)
    assert called, "the check found no listed kernel that another calls: is it still looking?"
    assert {name: found for name, found in called.items() if found[0] != 1} == {}


def test_the_compiling_processes_claim_every_task_once_and_a_failure_leaves_the_rest_done(tmp_path, monkeypatch):
    """``Compiling`` gives each task to one process, the next as each finishes; a task that fails (a combination
    this platform cannot compile) is reported and the others are still compiled, into this cache."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    by_name = {qualname: task for task in precompile.tasks() for qualname in [task[1]]}
    small = [by_name[name] for name in ("_row_offsets", "_all_equal", "_column_means")]  # a second each, at most
    compiling = precompile.Compiling(2, small)
    assert compiling.wait()
    assert compiling.answers == ["ok"] * 3
    for _, qualname, signatures in small:
        assert len(list(tmp_path.rglob(f"*.{qualname}-*.nbc"))) == len(signatures), qualname
    broken = small[:1] + [("mlnb._kernels.csr", "_count", ["(not a type,)"])] + small[1:2]
    compiling = precompile.Compiling(2, broken)
    assert not compiling.wait()
    assert sorted(compiling.answers) == ["failed", "ok", "ok"]


#: the dispatchers the test compiles, kept alive: numba keeps weak proxies of them, which a dead one breaks
#: for code that walks the live objects (tests/test_numba.py)
_COMPILED = []


def _compile(function, argument):
    import numba

    _COMPILED.append(numba.njit(function))
    _COMPILED[-1](argument)


def test_a_package_kernel_compiling_is_announced_once_on_stderr_and_never_quietly(monkeypatch, capsys):
    def kernel(x):
        return x + 1

    kernel.__module__ = "mlnb.a_kernel_of_this_test"
    monkeypatch.setitem(precompile._announced, "done", False)
    precompile._announce_package_compiles()
    monkeypatch.setattr(progress, "_enabled", False)
    _compile(kernel, 1)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(progress, "_enabled", True)
    _compile(kernel, 1)
    _compile(kernel, 1.5)
    _compile(lambda x: x, 1)  # not the package's: no line
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(STATUS) and lines[0].endswith(" s)"), lines


class FakeCompiling:
    """Stands in for ``precompile.Compiling``: each one made is listed in ``made``; ``wait`` gives ``outcome``
    (or raises it, an exception)."""

    made: list = []
    outcome = True

    def __init__(self, workers):
        self.made.append(self)
        self.processes, self.waited, self.stopped = [None] * workers, False, False

    def wait(self):
        self.waited = True
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome

    def stop(self):
        self.stopped = True


@pytest.fixture
def fake_compiling(tmp_path, monkeypatch):
    """No real compile: ``FakeCompiling`` in its place, a marker in tmp_path not yet written, nothing started,
    the status line not yet printed and progress on. Returns (the class, the marker)."""
    marker = tmp_path / "mlnb-kernels-test.ready"
    fake = type("Fake", (FakeCompiling,), {"made": []})
    monkeypatch.setattr(precompile, "ready_marker", lambda: marker)
    monkeypatch.setattr(precompile, "_announce_package_compiles", lambda: None)
    monkeypatch.setattr(precompile, "Compiling", fake)
    monkeypatch.setattr(precompile, "_started", {})
    monkeypatch.setitem(precompile._announced, "done", False)
    monkeypatch.setattr(progress, "_enabled", True)
    return fake, marker


@pytest.mark.parametrize("succeeded", [True, False])
def test_a_finished_compile_is_not_repeated_even_where_a_process_failed(fake_compiling, capsys, succeeded):
    """The marker is written whether or not every compiling process succeeded (a combination a platform
    cannot compile then compiles on use), so that no study pays the whole compile again; an interrupt
    leaves none, so the next study compiles. The compile that runs says so on stderr, in one line."""
    fake, marker = fake_compiling
    fake.outcome = succeeded
    capsys.readouterr()
    precompile.ensure_compiled()
    precompile.ensure_compiled()
    assert len(fake.made) == 1 and marker.exists()
    assert len([line for line in capsys.readouterr().err.splitlines() if line.startswith(STATUS)]) == 1
    assert ("failed" in marker.read_text()) is not succeeded

    marker.unlink()
    fake.outcome = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        precompile.ensure_compiled()
    assert not marker.exists()


def test_a_compile_started_before_the_imports_is_the_one_the_study_waits_for(fake_compiling, capsys):
    """``start_compiling`` (the study commands' first step) starts the processes and says so once;
    ``ensure_compiled`` then waits for that very compile instead of starting another, and writes the marker."""
    fake, marker = fake_compiling
    made = fake.made
    capsys.readouterr()
    precompile.start_compiling()
    precompile.start_compiling()
    assert len(made) == 1 and not made[0].waited and not marker.exists()
    precompile.ensure_compiled()
    assert len(made) == 1 and made[0].waited and marker.exists()
    assert len([line for line in capsys.readouterr().err.splitlines() if line.startswith(STATUS)]) == 1
    # a command that ends before its study stops the processes it started
    marker.unlink()
    precompile.start_compiling()
    precompile._stop_started()
    assert len(made) == 2 and made[1].stopped and not made[1].waited and not marker.exists()


def _write_corpora(folder: Path) -> dict:
    """Small corpora of four other sources: a folder of texts (one sub-folder per category), a ';'-tagged
    CSV, JSON lines and a Mulan ARFF pair with its label XML."""
    import random

    rng = random.Random(0)
    tags = [f"tag{i}" for i in range(5)]
    rows = []
    for _ in range(300):
        labels = rng.sample(tags, rng.randint(1, 2))
        words = [f"w{rng.randrange(200)}" for _ in range(rng.randint(5, 25))] + [f"{tag}x" for tag in labels]
        rows.append((" ".join(words), labels))
    for number, (text, labels) in enumerate(rows):
        (folder / "texts" / labels[0]).mkdir(parents=True, exist_ok=True)
        (folder / "texts" / labels[0] / f"d{number}.txt").write_text(text)
    (folder / "tags.csv").write_text("text,tags\n" + "".join(f'"{text}",{";".join(labels)}\n' for text, labels in rows))
    (folder / "docs.jsonl").write_text("".join(json.dumps({"text": text, "labels": labels}) + "\n"
                                               for text, labels in rows))
    (folder / "mulan").mkdir()
    header = ("@relation r\n" + "".join(f"@attribute f{j} numeric\n" for j in range(40))
              + "".join(f"@attribute {tag} {{0,1}}\n" for tag in tags) + "@data\n")
    for part in ("train", "test"):
        lines = []
        for _ in range(150):
            labels = rng.sample(range(len(tags)), rng.randint(1, 2))
            words = sorted(set(rng.sample(range(40), 6)) | {3 * label for label in labels})
            lines.append("{" + ",".join([f"{j} 1" for j in words] + [f"{40 + k} 1" for k in sorted(labels)]) + "}")
        (folder / "mulan" / f"tiny-{part}.arff").write_text(header + "\n".join(lines) + "\n")
    (folder / "mulan" / "tiny.xml").write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n<labels xmlns="http://mulan.sourceforge.net/labels">\n'
        + "".join(f'<label name="{tag}"></label>\n' for tag in tags) + "</labels>\n")
    return {"texts": folder / "texts", "csv": folder / "tags.csv", "jsonl": folder / "docs.jsonl",
            "arff": folder / "mulan"}


# the second process: a study of each other source (with other event models and updaters), every package
# kernel numba compiles, and every listed kernel run with a combination the list lacks, printed as a JSON list
OTHER_SOURCES = textwrap.dedent("""
    import json, sys
    from numba.core import event
    from typer.testing import CliRunner
    from mlnb.cli import app

    compiled = []

    class Record(event.Listener):
        def on_start(self, found):
            kernel = found.data["dispatcher"]
            if kernel.py_func.__module__.startswith("mlnb"):
                compiled.append(f"{kernel.py_func.__module__}.{kernel.py_func.__qualname__} {found.data['args']}")

        def on_end(self, found):
            pass

    event.register("numba:compile", Record())
    runner = CliRunner()
    for target, settings in json.loads(sys.argv[1]):
        config = target if target.endswith(".toml") else target + ".toml"  # a config as it is, or data to init
        if config != target:
            done = runner.invoke(app, ["init", target, "--out", config, "--force"])
            assert done.exit_code == 0, done.output
        arguments = ["run", config, "--out", sys.argv[2]]
        for setting in settings:
            arguments += ["--set", setting]
        done = runner.invoke(app, arguments)
        assert done.exit_code == 0, done.output
        assert "compiling mlnb" not in done.output, done.output
    # and what an earlier process compiled on use into this cache, which numba loads without compiling: every
    # combination a listed kernel ran with here is on the list
    from mlnb import precompile
    for module, qualname, listed in precompile.tasks():
        kernel = precompile._kernel(module, qualname)
        for signature in kernel.signatures if kernel is not None else ():
            if str(signature) not in listed:
                compiled.append(f"{module}.{qualname} {signature} (in numba's cache, compiled on use before)")
    print(json.dumps(compiled))
""")


@pytest.mark.slow
def test_after_one_study_no_study_of_another_source_compiles_anything(tmp_path):
    """Once the kernels are compiled, as the first `mlnb run` compiles them (``precompile.ensure_compiled``, which
    ``test_a_finished_compile_is_not_repeated_even_where_a_process_failed`` shows announces it once), studies of a
    folder of texts, a ';'-tagged CSV, JSON lines and a Mulan ARFF pair, with other event models and updaters, and
    the four-model config (NB-LR with l1), compile no kernel in a new process, and run no listed kernel with a combination the list lacks (one compiled
    on use by an earlier process, which numba then loads from the cache without compiling). A failure lists the
    kernels and argument types to add to mlnb._kernel_signatures. The cache is the package's own (numba's
    default, or this session's NUMBA_CACHE_DIR): a whole-suite run finds it compiled by ``tests/conftest.py``
    before the first test, so nothing here compiles the list a second time; a targeted run compiles it here, as
    a first study would."""
    precompile.ensure_compiled()
    corpora = _write_corpora(tmp_path)
    runs = [(str(corpora["texts"]), []),
            (str(corpora["csv"]), ["models.nb.event_model=bernoulli", "models.lr.updater=adagrad"]),
            (str(corpora["jsonl"]), ["models.nb.event_model=complement", "models.lr.updater=sgd"]),
            (str(corpora["arff"]), ["models.nb.event_model=poisson"]),
            # NB-LR (a scale on the LR kernels, with l1) beside NB and LR
            (str(PROJECT / "configs" / "four_models.toml"), ["data.synthetic.n_documents=1500", "models.nblr.l1=1e-6",
                                                             "eval.bootstrap=0", "report.plots=false"])]
    second = subprocess.run([sys.executable, "-c", OTHER_SOURCES, json.dumps(runs), str(tmp_path / "out")],
                            cwd=PROJECT, capture_output=True, text=True, timeout=1800, check=False)
    assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads(second.stdout.splitlines()[-1]) == []


# -- a first run in an empty cache: its timings, and the bits it computes -------------------------------
# a small quickstart study with progress on (its results folder written), then LR fitted and fingerprinted
# (multilabel with l1, multiclass) with progress off: its output's last line is JSON
FRESH_AND_WARM_SCRIPT = """
import hashlib, json, sys
import numpy as np
from mlnb import progress
from mlnb.config import load_config
from mlnb.data.synthetic import make_rcv1_like
from mlnb.models.logistic import LogisticRegression
from mlnb.report.results import write_results
from mlnb.study import run_study
progress.enable(True)
config = load_config("configs/quickstart.toml", ["data.synthetic.n_documents=2000", "data.synthetic.n_features=2000",
                                                  "eval.bootstrap=0", "report.plots=false"])
folder = write_results(run_study(config), sys.argv[1])
progress.enable(False)
data = make_rcv1_like(n_documents=2000, n_features=1000, n_categories=20, seed=7)
fits = [LogisticRegression(npasses=2, batch_size=300, l1=1e-6).fit(data.X_train, data.Y_train),
        LogisticRegression(npasses=2, batch_size=300, task="multiclass").fit(
            data.X_train, np.asarray(data.Y_train.argmax(axis=1)).ravel())]
parts = [m.weights_.tobytes() + m.bias_.tobytes() for m in fits]
parts += [fits[0].predict_proba(data.X_test).tobytes(), fits[0].predict_proba(data.X_test[:5]).tobytes()]
print(json.dumps({"folder": str(folder), "fingerprint": hashlib.sha256(b"".join(parts)).hexdigest(),
                  "losses": [r["train_loss"] for m in fits for r in m.history_]}))
"""


@pytest.fixture(scope="module")
def first_and_warm_process(tmp_path_factory):
    """Two processes, one after the other, on one NUMBA_CACHE_DIR that is empty before the first, each running
    ``FRESH_AND_WARM_SCRIPT`` (the study first, so that the first process's study compiles what it calls):
    the first compiles every kernel it calls, the second loads them all from the cache. Shared by the two
    tests of this file that need an empty cache (a first run's compiling apart, fresh and cached machine code
    give the same bits), so that the suite compiles from nothing once; they are
    in one file so that a parallel run (pytest-xdist, ``--dist loadfile``) keeps them in one process.
    -> {"cache": the cache folder, "first" | "warm": (the script's JSON line as a dict, its stderr)}."""
    folder = tmp_path_factory.mktemp("fresh-numba-cache")
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(folder / "numba-cache")}
    found = {"cache": folder / "numba-cache"}
    for name in ("first", "warm"):
        done = subprocess.run([sys.executable, "-c", FRESH_AND_WARM_SCRIPT, str(folder / name)], capture_output=True,
                              text=True, timeout=1200, env=environment, cwd=Path(__file__).resolve().parents[1],
                              check=False)
        assert done.returncode == 0, done.stderr
        found[name] = (json.loads(done.stdout.strip().splitlines()[-1]), done.stderr)
    return found


@pytest.mark.slow
def test_a_first_run_gives_the_fit_seconds_of_a_warm_run_and_its_compiling_apart(first_and_warm_process):
    """In a fresh numba cache (minutes: every kernel compiles), then again on that cache (the two processes of
    the ``first_and_warm_process`` fixture): the first run's fit seconds leave the compiling
    out, report it apart, and print no ETA that includes it. The fit is a few hundredths of a second warm, so
    "within 30 %" alone would fail on a scheduler's hiccup; the bound adds a quarter second, which is still a
    small fraction of the compiling (seconds to a minute) that a fit counting it would include."""
    import re

    runs = []
    for name in ("first", "warm"):
        printed, stderr = first_and_warm_process[name]
        folder = Path(printed["folder"])
        runs.append((json.loads((folder / "summary.json").read_text()), stderr, (folder / "report.md").read_text()))
    (first, first_err, first_report), (warm, _, _) = runs
    for model in ("nb", "lr"):
        compiled, fitted = first["models"][model]["compile_seconds"], first["models"][model]["fit_seconds"]
        assert compiled > 1.0, model  # it compiled
        assert fitted <= 1.3 * warm["models"][model]["fit_seconds"] + 0.25, model
        assert fitted < 0.25 * compiled, model  # a fit that counted its compiling would be longer than it
    assert re.search(r"first run: [\d.]+ s of compiling the kernels \(nb [\d.]+ s, lr [\d.]+ s\), not counted in "
                     r"fit s", first_report)
    etas = [line for line in first_err.splitlines() if "ETA" in line]
    assert etas  # the pass lines give their ETA, from the work only: well under the compiling's
    for line in etas:
        minutes = re.search(r"ETA (\d+) (min|h)", line)
        assert minutes is None and float(re.search(r"ETA ([\d.]+) s", line).group(1)) < 5.0, line


@pytest.mark.slow
def test_a_fresh_compilation_and_numbas_cache_give_the_same_bits(first_and_warm_process):
    """The first process compiles the kernels into an empty NUMBA_CACHE_DIR, the second loads them
    from it: the same weights, losses and probabilities (with fastmath=True they differed in the
    last bits, so a user's first run disagreed with every later one; see mlnb._numba.IEEE). The two
    processes (the ``first_and_warm_process`` fixture) fit LR multilabel with l1 and multiclass after a
    small study."""
    (fresh, _), (cached, _) = first_and_warm_process["first"], first_and_warm_process["warm"]
    assert any(first_and_warm_process["cache"].rglob("*.nbc")), "the first run should have filled the empty cache"
    assert len(fresh["losses"]) == 4 and all(np.isfinite(fresh["losses"]))  # 2 fits × 2 passes
    assert (cached["fingerprint"], cached["losses"]) == (fresh["fingerprint"], fresh["losses"])


def test_a_study_command_starts_the_compile_first_and_not_for_a_missing_config(tmp_path, fake_compiling):
    """`mlnb run` starts the compile before it reads its config (``cli._start_compiling``); a config path that
    names no file ends the command in one line, exit 2, with no compiling process started."""
    from typer.testing import CliRunner

    from mlnb.cli import app

    fake, marker = fake_compiling
    done = CliRunner().invoke(app, ["run", str(tmp_path / "missing.toml"), "--quiet"])
    assert done.exit_code == 2 and "no such config file" in done.output and fake.made == []
    config = tmp_path / "broken.toml"
    config.write_text("[data]\nsource = 3\n")
    done = CliRunner().invoke(app, ["run", str(config), "--quiet"])
    assert done.exit_code == 2 and len(fake.made) == 1 and not marker.exists()
    precompile._stop_started()
    assert fake.made[0].stopped
