"""mlnb.precompile: the first study compiles every kernel once (one line on stderr says so), and no later
process compiles anything, whatever its source, task or event model."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mlnb import _numba, precompile, progress

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


def test_the_shares_of_the_processes_hold_every_task_once():
    listed = precompile.tasks()
    shares = [precompile.share(listed, part, 3) for part in range(3)]
    assert sorted(task[:2] for part in shares for task in part) == sorted(task[:2] for task in listed)
    assert all(shares)


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


@pytest.mark.parametrize("succeeded", [True, False])
def test_a_finished_compile_is_not_repeated_even_where_a_process_failed(tmp_path, monkeypatch, succeeded):
    """The marker is written whether or not every compiling process succeeded (a combination a platform
    cannot compile then compiles on use), so that no study pays the whole compile again; an interrupt
    leaves none, so the next study compiles."""
    marker, calls = tmp_path / "mlnb-kernels-test.ready", []
    monkeypatch.setattr(precompile, "ready_marker", lambda: marker)
    monkeypatch.setattr(precompile, "_announce_package_compiles", lambda: None)
    monkeypatch.setattr(precompile, "compile_all", lambda workers: calls.append(workers) or succeeded)
    precompile.ensure_compiled()
    precompile.ensure_compiled()
    assert len(calls) == 1 and marker.exists()
    assert ("failed" in marker.read_text()) is not succeeded

    def interrupted(workers):
        raise KeyboardInterrupt
    marker.unlink()
    monkeypatch.setattr(precompile, "compile_all", interrupted)
    with pytest.raises(KeyboardInterrupt):
        precompile.ensure_compiled()
    assert not marker.exists()


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
# kernel numba compiles printed as a JSON list
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
        config = target + ".toml"
        done = runner.invoke(app, ["init", target, "--out", config, "--force"])
        assert done.exit_code == 0, done.output
        arguments = ["run", config, "--out", sys.argv[2]]
        for setting in settings:
            arguments += ["--set", setting]
        done = runner.invoke(app, arguments)
        assert done.exit_code == 0, done.output
        assert "compiling mlnb" not in done.output, done.output
    print(json.dumps(compiled))
""")


@pytest.mark.slow
def test_after_one_study_no_study_of_another_source_compiles_anything(tmp_path):
    """One study fills an empty cache (and says it compiles, once); in a second process studies of a folder
    of texts, a ';'-tagged CSV, JSON lines and a Mulan ARFF pair, with other event models and updaters,
    compile no kernel. A failure lists the kernels and argument types to add to mlnb._kernel_signatures."""
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, "-m", "mlnb.cli", "run", "configs/quickstart.toml", "--out", str(tmp_path / "out"),
                            "--set", "data.synthetic.n_documents=2000"], cwd=PROJECT, env=environment,
                           capture_output=True, text=True, timeout=1800, check=False)
    assert first.returncode == 0, first.stderr
    assert [line for line in first.stderr.splitlines() if line.startswith(STATUS)] != []
    corpora = _write_corpora(tmp_path)
    runs = [(str(corpora["texts"]), []),
            (str(corpora["csv"]), ["models.nb.event_model=bernoulli", "models.lr.updater=adagrad"]),
            (str(corpora["jsonl"]), ["models.nb.event_model=complement", "models.lr.updater=sgd"]),
            (str(corpora["arff"]), ["models.nb.event_model=poisson"])]
    second = subprocess.run([sys.executable, "-c", OTHER_SOURCES, json.dumps(runs), str(tmp_path / "out")],
                            cwd=PROJECT, env=environment, capture_output=True, text=True, timeout=1800, check=False)
    assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads(second.stdout.splitlines()[-1]) == []
