"""The Dask backend on a real LocalCluster with two worker processes."""

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")

from mlnb.backends.dask import DaskBackend  # noqa: E402
from mlnb.backends.local import LocalBackend  # noqa: E402
from mlnb.errors import MlnbError  # noqa: E402


@pytest.fixture(scope="module")
def backend():
    with DaskBackend(n_workers=2, threads_per_worker=1, timeout=60, retries=1) as dask_backend:
        yield dask_backend


def _partition_sum(partition, scale):
    rng = np.random.default_rng(partition)
    return rng.random(1000) * scale


def _add(a, b):
    return a + b


@pytest.mark.slow
def test_map_reduce_is_bit_identical_to_the_local_backend(backend):
    partitions = list(range(7))
    scale = np.full(1000, 1.1)  # scattered once: an array argument
    on_dask = backend.map_reduce(_partition_sum, partitions, scale, combine=_add)
    here = LocalBackend().map_reduce(_partition_sum, partitions, scale, combine=_add)
    assert np.array_equal(on_dask, here)  # the same tree, so the same float additions
    assert backend.map(_partition_sum, [3], scale)[0].tolist() == _partition_sum(3, scale).tolist()


def test_the_two_workers_both_work(backend):
    assert backend.n_workers == 2
    pids = set(backend.map(lambda p: os.getpid(), range(8)))  # noqa: ARG005
    assert os.getpid() not in pids


def _fails(partition):
    raise MlnbError(f"shard-{partition}.npz: line 3: a corrupt chunk")


def test_an_error_inside_a_task_arrives_as_its_own_one_line_message(backend):
    with pytest.raises(MlnbError, match=r"^shard-\d\.npz: line 3: a corrupt chunk$"):
        backend.map(_fails, [1, 2])


def _dies_once(partition, marker_folder):
    marker = Path(marker_folder) / f"died-{partition}"
    if partition == 1 and not marker.exists():
        marker.write_text("")
        os._exit(1)  # the worker process dies mid-task
    return partition * 10


def test_a_worker_that_dies_mid_pass_is_replaced_and_the_task_rerun(backend, tmp_path, capsys):
    from mlnb import progress

    progress.enable(True)
    try:
        assert backend.map(_dies_once, [0, 1, 2], str(tmp_path)) == [0, 10, 20]
    finally:
        progress.enable(False)
    assert (tmp_path / "died-1").exists()  # it did die once


def _always_dies(partition):
    os._exit(1)


@pytest.mark.slow
def test_a_task_that_kills_every_worker_is_given_up_in_one_line(backend):
    with pytest.raises(MlnbError) as error:
        backend.map(_always_dies, [0])
    message = str(error.value)
    assert "\n" not in message and "given up" in message and "engine.retries = 1" in message


@pytest.mark.slow
def test_an_unreachable_scheduler_is_one_line():
    with pytest.raises(MlnbError, match=r"^engine.address = 'tcp://127.0.0.1:9': no Dask scheduler answered within 1 s"):
        DaskBackend(address="tcp://127.0.0.1:9", timeout=1)


@pytest.mark.slow
def test_a_second_cluster_in_one_process_starts(tmp_path):
    """DaskBackend sets dask config in a context; were distributed's defaults not loaded before it, the
    context's exit deleted the whole "distributed" table and the next cluster failed ('require-encryption').
    In a fresh process, where nothing imported distributed first."""
    import subprocess
    import sys

    script = tmp_path / "two_clusters.py"
    script.write_text("from mlnb.backends.dask import DaskBackend\n"
                      "if __name__ == '__main__':\n"
                      "    for _ in range(2):\n"
                      "        backend = DaskBackend(n_workers=1)\n"
                      "        assert backend.map(abs, [-1, 2]) == [1, 2]\n"
                      "        backend.close()\n"
                      "    print('two clusters')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "two clusters" in done.stdout, done.stderr[-2000:]


@pytest.mark.slow
def test_a_worker_compiles_a_kernel_when_the_main_module_imported_numba(tmp_path):
    """A worker re-imports the main module before it gets NUMBA_NUM_THREADS; a main module that imports
    numba (a user's script that imports mlnb's kernels) left numba configured for every core, and the first
    kernel compiled on the worker failed ('Cannot set NUMBA_NUM_THREADS ... once the threads have been
    launched'). In a fresh process, with a kernel no cache holds."""
    import subprocess
    import sys

    script = tmp_path / "compiles_on_a_worker.py"
    script.write_text("import numba\n"
                      "from mlnb.backends.dask import DaskBackend\n"
                      "def compile_here(x):\n"
                      "    numba.get_num_threads()  # launches numba's threads, as a kernel does\n"
                      "    @numba.njit\n"
                      "    def plus_one(a):\n"
                      "        return a + 1\n"
                      "    return plus_one(x)\n"
                      "if __name__ == '__main__':\n"
                      "    backend = DaskBackend(n_workers=1)\n"
                      "    print('compiled', backend.map(compile_here, [41]))\n"
                      "    backend.close()\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "compiled [42]" in done.stdout, done.stderr[-2000:]


class _Client:
    """A client whose dashboard_link is ``link`` (or raises it, as distributed's does for a scheduler without
    a dashboard), on a scheduler whose machine has bokeh or not."""

    def __init__(self, link, bokeh):
        self.link, self.bokeh = link, bokeh

    @property
    def dashboard_link(self):
        if isinstance(self.link, Exception):
            raise self.link
        return self.link

    def run_on_scheduler(self, function):
        assert function() is (importlib.util.find_spec("bokeh") is not None)  # it asks about bokeh
        return self.bokeh


@pytest.mark.parametrize("link, bokeh, line", [
    ("http://127.0.0.1:40123/status", True, "dask dashboard: http://127.0.0.1:40123/status\n"),
    ("http://127.0.0.1:40123/status", False,  # the page says "Dask needs bokeh": no dashboard
     "dask dashboard: not running (the scheduler's machine needs bokeh: pip install bokeh)\n"),
    ("", True, ""),  # a scheduler started without a dashboard: nothing said
    (KeyError("dashboard"), True, ""),  # distributed's own error for one
])
def test_the_dashboard_address_is_one_line_when_a_dashboard_runs(backend, monkeypatch, capsys, link, bokeh, line):
    from mlnb import progress

    monkeypatch.setattr(backend, "client", _Client(link, bokeh))
    monkeypatch.setattr(progress, "_enabled", True)
    backend._announce_dashboard()
    assert capsys.readouterr().err == line


def test_the_local_clusters_dashboard_is_found_where_bokeh_serves_it(backend):
    link = backend.dashboard_link()
    if importlib.util.find_spec("bokeh") is None:
        assert link == ""  # distributed serves no dashboard without bokeh
    else:
        assert link.startswith("http://127.0.0.1:") and link.endswith("/status")


@pytest.mark.slow
def test_the_printed_dashboard_answers(capsys):
    """With bokeh installed, the line names a page that the dashboard serves (its port is random)."""
    import re
    import urllib.request

    pytest.importorskip("bokeh", reason="distributed serves its dashboard only where bokeh is installed")
    from mlnb import progress

    was_enabled = progress.is_enabled()
    progress.enable(True)
    try:
        with DaskBackend(n_workers=1, timeout=60):
            link = re.fullmatch(r"dask dashboard: (http://\S+)\n", capsys.readouterr().err).group(1)
            with urllib.request.urlopen(link, timeout=30) as page:
                assert page.status == 200
    finally:
        progress.enable(was_enabled)
