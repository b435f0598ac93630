"""Files that are not regular files (a FIFO, a socket, a device), unreadable files, endless lines and bad
encodings, given to every registered data source and to `mlnb init`: each is refused in one line naming
the file, within seconds, never read until killed or until memory runs out.

A FIFO blocks the process that opens it for reading until a writer comes: a regression would hang the
suite, so every case runs under an alarm that ends it (``guard``)."""

import faulthandler
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlnb.cli import app
from mlnb.data import sources
from mlnb.data.shards import convert
from mlnb.data.stream import SvmlightSource

GOOD_SVM = "0 1:1 2:1\n1 2:1 3:2\n0 1:3\n1 3:1\n" * 3
GOOD_CSV = "text,label\nthe cat sat,a\nthe dog ran,b\na cat ran,a\na dog sat,b\n"
#: what the error line says each kind of special file is
KINDS = {"fifo": "is a FIFO (named pipe), not a regular file", "socket": "is a socket, not a regular file",
         "device": "is a character device, not a regular file"}
#: seconds a refusal may take before the alarm fails the test (it takes well under one)
GUARD_SECONDS = 30


class Hung(BaseException):
    """Raised by the alarm: a BaseException, so that no `except Exception` of the CLI turns it into a refusal."""


@pytest.fixture
def guard():
    """An alarm that interrupts a test still running after GUARD_SECONDS (a FIFO opened for reading); and
    when the interrupted code does not unwind (a worker thread blocked on the FIFO, a lock it held), a
    watchdog that ends the test process after twice that, printing every thread's stack: a failure, never
    a hang of the suite."""
    def ring(signum, frame):
        raise Hung(f"still running after {GUARD_SECONDS} s: a special file was opened and read")
    previous = signal.signal(signal.SIGALRM, ring)
    signal.alarm(GUARD_SECONDS)
    faulthandler.dump_traceback_later(2 * GUARD_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def special(tmp_path, monkeypatch):
    """special(path, kind) makes ``path`` a FIFO, a bound Unix socket or a link to /dev/zero."""
    sockets = []

    def make(path: Path, kind: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "socket":  # bound by its name from its folder: a socket's path is limited to ~100 bytes
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            here = Path.cwd()
            os.chdir(path.parent)
            try:
                server.bind(path.name)
            finally:
                os.chdir(here)
            sockets.append(server)
        else:
            os.symlink("/dev/zero", path)  # endless: a reader that opened it would read until memory runs out
        return path

    yield make
    for server in sockets:
        server.close()


# -- where a special file is put, for each registered source ------------------------------------------------
def _svmlight_input(tmp_path, special, kind):
    bad = special(tmp_path / "data.svm", kind)
    return bad, {"source": "svmlight", "svmlight.path": bad}


def _svmlight_shard(tmp_path, special, kind):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "part-0.svm").write_text(GOOD_SVM)
    bad = special(tmp_path / "parts" / "part-1.svm", kind)
    return bad, {"source": "svmlight", "svmlight.path": tmp_path / "parts" / "part-*.svm"}


def _text_input(tmp_path, special, kind):
    bad = special(tmp_path / "data.csv", kind)
    return bad, {"source": "text", "text.path": bad}


def _text_shard(tmp_path, special, kind):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "part-0.csv").write_text(GOOD_CSV)
    bad = special(tmp_path / "parts" / "part-1.csv", kind)
    return bad, {"source": "text", "text.path": tmp_path / "parts" / "part-*.csv"}


def by_category(root: Path) -> Path:
    for category, texts in (("a", ["the cat sat", "a cat ran"]), ("b", ["the dog ran", "a dog sat"])):
        (root / category).mkdir(parents=True)
        for i, text in enumerate(texts):
            (root / category / f"{i}.txt").write_text(text)
    return root


def _files_category(tmp_path, special, kind):
    root = by_category(tmp_path / "corpus")
    # links followed: a link to a device inside the folder is refused as the device, not as a link out of it
    return special(root / "a" / "9.txt", kind), {"source": "files", "files.path": root, "files.follow_links": "true"}


def with_labels(root: Path, special, kind) -> Path:
    root.mkdir()
    for name in ("1.txt", "2.txt", "3.txt"):
        (root / name).write_text(f"document {name}")
    (root / "labels.csv").write_text("file,labels\n1.txt,a\n2.txt,b\n3.txt,a\n4.txt,b\n")
    return special(root / "4.txt", kind)


def _files_labelled_document(tmp_path, special, kind):
    bad = with_labels(tmp_path / "corpus", special, kind)
    return bad, {"source": "files", "files.path": tmp_path / "corpus", "files.labels_path": tmp_path / "corpus" /
                 "labels.csv", "files.follow_links": "true"}


def _files_labels_file(tmp_path, special, kind):
    root = by_category(tmp_path / "corpus")
    bad = special(tmp_path / "labels.csv", kind)
    return bad, {"source": "files", "files.path": root, "files.labels_path": bad}


def _arff_input(tmp_path, special, kind):
    (tmp_path / "test.arff").write_text("@relation t\n@attribute f numeric\n@attribute L {0,1}\n@data\n{0 1}\n")
    (tmp_path / "labels.xml").write_text('<labels xmlns="http://mulan.sourceforge.net/labels"><label name="L"/>'
                                         "</labels>\n")
    bad = special(tmp_path / "train.arff", kind)
    return bad, {"source": "arff", "arff.train_path": bad, "arff.test_path": tmp_path / "test.arff",
                 "arff.xml_path": tmp_path / "labels.xml"}


def _reuters_input(tmp_path, special, kind):
    bad = special(tmp_path / "reuters" / "reut2-000.sgm", kind)
    return bad, {"source": "reuters21578", "reuters21578.folder": tmp_path / "reuters"}


def _lyrl2004_input(tmp_path, special, kind):
    bad = special(tmp_path / "lyrl" / "lyrl2004_vectors_train.dat", kind)
    (tmp_path / "lyrl" / "rcv1-v2.topics.qrels").write_text("E11 2286 1\n")
    return bad, {"source": "lyrl2004", "lyrl2004.folder": tmp_path / "lyrl"}


def _rcv1_cache_file(tmp_path, special, kind):
    from mlnb.data.rcv1 import CACHE_NAMES

    cache = tmp_path / "home" / "RCV1"
    bad = special(cache / CACHE_NAMES[0], kind)
    for name in CACHE_NAMES[1:]:
        (cache / name).write_bytes(b"")
    return bad, {"source": "rcv1", "rcv1.data_home": tmp_path / "home"}


def shards(folder: Path, tmp_path: Path) -> Path:
    (tmp_path / "source.svm").write_text(GOOD_SVM)
    convert(SvmlightSource(tmp_path / "source.svm"), folder, shard_documents=5)
    return folder


def _shards_file(tmp_path, special, kind):
    folder = shards(tmp_path / "shards", tmp_path)
    (folder / "shard-00001" / "X_data.npy").unlink()
    return special(folder / "shard-00001" / "X_data.npy", kind), {"source": "shards", "shards.path": folder}


def _shards_manifest(tmp_path, special, kind):
    folder = shards(tmp_path / "shards", tmp_path)
    (folder / "manifest.json").unlink()
    return special(folder / "manifest.json", kind), {"source": "shards", "shards.path": folder}


# source -> {where: the function that puts a special file there and gives its path and the data.* keys}
PLACES = {
    "svmlight": {"input": _svmlight_input, "shard": _svmlight_shard},
    "text": {"input": _text_input, "shard": _text_shard},
    "files": {"category folder": _files_category, "labelled document": _files_labelled_document,
              "labels file": _files_labels_file},
    "arff": {"input": _arff_input},
    "reuters21578": {"input": _reuters_input},
    "lyrl2004": {"input": _lyrl2004_input},
    "rcv1": {"cache file": _rcv1_cache_file},
    "shards": {"shard": _shards_file, "manifest": _shards_manifest},
}
#: sources that read no file
FILELESS = {"synthetic", "bundled", "long_tail"}
CASES = [(source, where, kind) for source, places in PLACES.items() for where in places for kind in KINDS]


def test_every_registered_source_is_tried():
    assert set(sources.SOURCES) == set(PLACES) | FILELESS


def data_args(keys: dict) -> list[str]:
    return [a for key, value in keys.items() for a in ("--set", f"data.{key}={value}")]


@pytest.mark.parametrize("source, where, kind", CASES, ids=["-".join(case) for case in CASES])
def test_special_file_refused_by_every_reader(refused, guard, special, tmp_path, source, where, kind):
    bad, keys = PLACES[source][where](tmp_path, special, kind)
    refused(f"{bad}: {KINDS[kind]}", args=data_args(keys))


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("source, where", [("svmlight", "input"), ("text", "shard"), ("files", "category folder"),
                                           ("shards", "shard")])
def test_special_file_refused_when_streamed(refused, guard, special, tmp_path, source, where, kind):
    bad, keys = PLACES[source][where](tmp_path, special, kind)
    refused(f"{bad}: {KINDS[kind]}", args=data_args(keys) + ["--set", "data.streaming=true"])


# -- mlnb init ---------------------------------------------------------------------------------------------
def init_refused(tmp_path, data, *needles) -> str:
    """Run `mlnb init DATA` in-process: exit code 2, one line 'error: ...' holding every needle, no config."""
    out = tmp_path / "written.toml"
    result = CliRunner().invoke(app, ["init", str(data), "--out", str(out)])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert not out.exists()
    return lines[0]


def _init_input(tmp_path, special, kind):
    bad = special(tmp_path / "data.csv", kind)
    return bad, bad


def _init_category_folder(tmp_path, special, kind):
    root = by_category(tmp_path / "corpus")
    return special(root / "b" / "9.txt", kind), root


def _init_labelled_document(tmp_path, special, kind):
    return with_labels(tmp_path / "corpus", special, kind), tmp_path / "corpus"


def _init_beside_a_data_file(tmp_path, special, kind):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "data.svm").write_text(GOOD_SVM)
    return special(tmp_path / "corpus" / "more.svm", kind), tmp_path / "corpus"


def _init_shards(tmp_path, special, kind):
    return _shards_file(tmp_path, special, kind)[0], tmp_path / "shards"


INIT_PLACES = {"input": _init_input, "category folder": _init_category_folder,
               "labelled document": _init_labelled_document, "beside a data file": _init_beside_a_data_file,
               "shard": _init_shards}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("where", list(INIT_PLACES))
def test_special_file_refused_by_init(guard, special, tmp_path, where, kind):
    bad, data = INIT_PLACES[where](tmp_path, special, kind)
    line = init_refused(tmp_path, data, f"{bad}: ")
    # init reads a folder's documents without following links out of it: the link to /dev/zero is refused as such
    assert KINDS[kind] in line or (kind == "device" and "a symbolic link to /dev/zero" in line), line


def test_init_refuses_dev_zero_at_once(guard, tmp_path):
    init_refused(tmp_path, "/dev/zero", "/dev/zero: is a character device, not a regular file")


# -- unreadable files ----------------------------------------------------------------------------------------
def deny_reading(monkeypatch, path: Path):
    """Make ``path`` unreadable to this process (root reads a file of mode 000): access and open refuse it."""
    access, opener = os.access, os.open

    def fake_access(target, mode, *args, **kwargs):
        return False if Path(target) == path else access(target, mode, *args, **kwargs)

    def fake_open(target, flags, *args, **kwargs):
        if Path(target) == path:
            raise PermissionError(13, "Permission denied", str(target))
        return opener(target, flags, *args, **kwargs)

    monkeypatch.setattr(os, "access", fake_access)
    monkeypatch.setattr(os, "open", fake_open)


UNREADABLE = {
    "svmlight": ("data.svm", GOOD_SVM, lambda p: {"source": "svmlight", "svmlight.path": p}),
    "text": ("data.csv", GOOD_CSV, lambda p: {"source": "text", "text.path": p}),
    "files": ("corpus/a/9.txt", "an unreadable cat", lambda p: {"source": "files", "files.path": p.parent.parent}),
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_unreadable_file_refused_in_one_line(refused, monkeypatch, tmp_path, case):
    name, content, keys = UNREADABLE[case]
    if case == "files":
        by_category(tmp_path / "corpus")
    path = tmp_path / name
    path.write_text(content)
    deny_reading(monkeypatch, path)
    refused(f"{path}: permission denied", args=data_args(keys(path)))


def test_unreadable_file_refused_by_init(monkeypatch, tmp_path):
    path = tmp_path / "data.csv"
    path.write_text(GOOD_CSV)
    deny_reading(monkeypatch, path)
    init_refused(tmp_path, path, f"{path}: permission denied")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000: the monkeypatched tests stand in")
def test_mode_000_file_refused_in_one_line(refused, tmp_path):
    path = tmp_path / "data.svm"
    path.write_text(GOOD_SVM)
    path.chmod(0)
    refused(f"{path}: permission denied", args=data_args({"source": "svmlight", "svmlight.path": path}))
    init_refused(tmp_path, path, f"{path}: permission denied")


# -- bad encodings ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "ascii"])
def test_bad_encoding_names_file_line_and_key(refused, tmp_path, encoding):
    path = tmp_path / "data.csv"
    path.write_bytes(GOOD_CSV.encode() + b"caf\xe9,a\n")
    line = refused(f"{path}:", "data.text.encoding", args=data_args({"source": "text", "text.path": path,
                                                                     "text.encoding": encoding}))
    assert "UnicodeError" not in line


@pytest.mark.parametrize("encoding, needle", [("utf-16", "0.txt:1: not utf-16 text"),  # 11 bytes of ASCII
                                               ("utf-8", "9.txt:2: not utf-8 text")])
def test_bad_encoding_of_a_document_names_file_line_and_key(refused, tmp_path, encoding, needle):
    root = by_category(tmp_path / "corpus")
    (root / "a" / "9.txt").write_bytes(b"first line\ncaf\xe9\n")
    line = refused(f"{root / 'a'}/{needle}", "data.files.encoding",
                   args=data_args({"source": "files", "files.path": root, "files.encoding": encoding}))
    assert "UnicodeError" not in line


# -- a file of one endless line ------------------------------------------------------------------------------
#: prints the process's peak memory (KiB) as the last line of stderr, then runs the CLI
PEAK_MEMORY = ("import atexit, resource, sys\n"
               "atexit.register(lambda: print(f'peak_kib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', "
               "file=sys.stderr))\n"
               "from mlnb.cli import main\n"
               "sys.argv = ['mlnb', *sys.argv[1:]]\n"
               "main()\n")
#: the bound of a reader's memory on one endless line: MAX_LINE_BYTES (256 MiB) held, a copy, the interpreter
PEAK_BOUND_KIB = 1_500_000
SPARSE_CASES = {
    "init": (["init", "{path}.csv", "--out", "{tmp}/c.toml"], ".csv:1: a line of more than"),
    "svmlight": (["run", "{config}", "--set", "data.svmlight.path={path}.svm"], ".svm:1: a line of more than"),
    "text": (["run", "{config}", "--set", "data.source=text", "--set", "data.text.path={path}.csv"],
             ".csv:1: a line of more than"),
    "text streamed": (["run", "{config}", "--set", "data.source=text", "--set", "data.text.path={path}.csv",
                       "--set", "data.streaming=true"], ".csv:1: a line of more than"),
    "files": (["run", "{config}", "--set", "data.source=files", "--set", "data.files.path={tmp}/corpus"],
              "9.txt: a document of more than"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(SPARSE_CASES))
def test_huge_sparse_file_refused_with_bounded_memory(tiny_config, tmp_path, case):
    """A 20 GiB file of zeros without a newline (sparse: it takes no disk) is refused on its first line with
    at most a line's bound held: read until the bound, never whole."""
    for name in ("huge.csv", "huge.svm"):
        with open(tmp_path / name, "wb") as f:
            f.truncate(20 * 2**30)
    root = by_category(tmp_path / "corpus")
    with open(root / "a" / "9.txt", "wb") as f:
        f.truncate(20 * 2**30)
    argv, needle = SPARSE_CASES[case]
    argv = [a.format(path=tmp_path / "huge", tmp=tmp_path, config=tiny_config) for a in argv]
    if argv[0] == "run":
        argv += ["--out", str(tmp_path / "out"), "--quiet"]
    result = subprocess.run([sys.executable, "-c", PEAK_MEMORY, *argv], capture_output=True, text=True, timeout=120)
    *lines, peak = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], result.stderr
    # the child reports its own peak: RUSAGE_CHILDREN would be the largest of all the suite's children
    assert int(peak.removeprefix("peak_kib=")) < PEAK_BOUND_KIB, peak


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("command", ["run", "sweep", "curve", "show-config"])
def test_a_config_that_is_not_a_regular_file_is_one_line(tmp_path, special, guard, command, kind):
    """The config file itself passes the same gate as the data: refused at once, never read."""
    config = special(tmp_path / "study.toml", kind)
    result = CliRunner().invoke(app, [command, str(config)] + ([] if command == "show-config" else ["--quiet"]))
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [f"error: {config}: {KINDS[kind]} (a config file (TOML))"]


def test_an_unreadable_config_is_one_line(tmp_path, monkeypatch):
    """Permission denied on the config (simulated: the tests run as root) is load_config's one line, not
    click's three-line usage message."""
    config = tmp_path / "study.toml"
    config.write_text("seed = 0\n")
    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, *args, **kwargs:
                        Path(path) != config and access(path, mode, *args, **kwargs))
    result = CliRunner().invoke(app, ["run", str(config), "--quiet", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {config}: ") and "permission denied" in lines[0], lines
