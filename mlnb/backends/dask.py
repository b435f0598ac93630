"""The Dask backend: the same partition functions, run by the workers of a Dask cluster.

Workers read their own partitions (a partition is a file name and a range, never data); what
travels is what the functions return — NB counts, LR states, score summaries — and the
arguments they share (a model's state), sent once per map as a task of their own (``_shared``):
the scheduler keeps it and can recompute it when the worker that held it dies. (Scattering with
``broadcast=True`` replicated it to a set of workers fixed up front, and the scheduler retried the
copy to a worker killed meanwhile forever: the run hung.) Reductions run on the workers in
``tree_reduce``'s shape, so their sums are bit-identical to the local backend's.

Every call to the cluster has a deadline (``engine.timeout`` for the calls that should answer at
once; a task may run as long as it needs while the scheduler answers and has a worker), and every
failure is one line (``MlnbError``); Dask's own log lines are silenced while a backend is open:

* no scheduler at ``engine.address`` within ``engine.timeout`` seconds, also a server that accepts
  the connection and says nothing (not a Dask scheduler);
* workers that cannot import mlnb (a cluster must run the same mlnb as the client);
* a worker that dies while running a task: the scheduler re-runs its tasks on the other workers
  (a LocalCluster's nanny also restarts it) and the run goes on, logged on stderr; a task that
  kills ``engine.retries`` + 1 workers is given up, naming its partition; no worker left for
  ``engine.timeout`` seconds ends the run;
* the scheduler lost (killed, unreachable) during the run: one line, at most ``engine.timeout``
  seconds after;
* an error inside a task (a corrupt shard, a missing file) arrives as the task's own message.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from mlnb import progress
from mlnb.backends.reduce import tree_reduce
from mlnb.errors import MlnbError

#: loggers of Dask and of the libraries under it whose lines (tracebacks of lost connections, retries,
#: restarted workers) are silenced while a backend is open: what matters reaches the user as one line
_LOGGERS = ("distributed", "dask", "tornado", "asyncio", "bokeh")
_POLL = 0.5  # seconds between two looks at the cluster while tasks run


def _import_mlnb_version() -> str:
    import mlnb

    return getattr(mlnb, "__version__", "unknown")


def _shared(value):
    """A map's shared argument as a task's result (see the module's docstring)."""
    return value


class _Late(Exception):
    """A call to the cluster that did not return within its deadline."""


def within(seconds: float, call: Callable, *args, **kwargs):
    """``call(*args, **kwargs)``, or ``_Late`` after ``seconds``: the call runs in a daemon thread, so
    that a cluster that never answers (a silent server, a scheduler that stopped) cannot hold this
    process; its exception, if any, is raised here."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = call(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001  (raised again in the caller's thread)
            outcome["error"] = error

    thread = threading.Thread(target=run, name="mlnb-dask-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise _Late()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _numba_as_launched() -> None:
    """NUMBA_NUM_THREADS in this process's environment = the number numba was configured with.

    A LocalCluster's worker gets NUMBA_NUM_THREADS = threads_per_worker in its environment, but a
    worker process first re-imports the user's main module (multiprocessing's spawn); when that
    imports numba, numba configured itself before the variable was set. numba re-reads the
    environment whenever it compiles, and a value other than the one its threads were launched with
    is an error ('Cannot set NUMBA_NUM_THREADS ... once the threads have been launched'), so the first
    kernel compiled on such a worker (rather than loaded from numba's cache) failed."""
    import os

    from numba.core import config

    os.environ["NUMBA_NUM_THREADS"] = str(config.NUMBA_NUM_THREADS)


try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # pragma: no cover - distributed is a declared dependency
    WorkerPlugin = object


class _NumbaAsLaunched(WorkerPlugin):
    """On every worker, before its first task: ``_numba_as_launched``."""

    def setup(self, worker) -> None:
        _numba_as_launched()


class DaskBackend:
    """Map partitions to a Dask cluster's workers and reduce there."""

    #: the tasks run at once in the workers' processes (``mlnb.backends.Executor.sequential``)
    sequential = False

    def __init__(self, address: str = "", n_workers: int = 2, threads_per_worker: int = 1, timeout: float = 30.0,
                 retries: int = 1):
        import dask
        import distributed  # noqa: F401  (loads its config defaults first: dask.config.set below records what
        # was there before and its exit restores that; were the "distributed" table absent then, the exit would
        # delete all of it, and the next cluster in this process would fail to start: 'require-encryption')

        self.address, self.retries, self.timeout, self._cluster = address, retries, float(timeout), None
        self._config = None
        self._silence()
        # a task that kills more than `retries` + 1 workers is given up (KilledWorker); a worker that stops
        # answering is removed after `timeout` (a LocalCluster's scheduler: this process's settings)
        settings = {"distributed.scheduler.allowed-failures": retries,
                    "distributed.comm.timeouts.connect": f"{timeout}s",
                    "distributed.scheduler.worker-ttl": f"{max(timeout, 5.0)}s",
                    "distributed.admin.large-graph-warning-threshold": "2GB"}
        self._config = dask.config.set(settings)
        self._config.__enter__()
        try:
            self.client = self._connect(address, n_workers, threads_per_worker)
            self._silence()  # the loggers that connecting made
            try:
                within(self.timeout + 5, self.client.wait_for_workers, 1, timeout=self.timeout)
            except (OSError, TimeoutError, _Late):
                raise MlnbError(f"engine: the Dask scheduler {self._scheduler_address()} has no worker after "
                                f"{self.timeout:g} s (engine.timeout)") from None
            self._check_workers()
            within(self.timeout + 5, self.client.register_plugin, _NumbaAsLaunched(), name="mlnb-numba-threads")
            self.n_workers = len(self._workers())
            self._announce_dashboard()
        except BaseException as error:
            self.close()
            if isinstance(error, (MlnbError, KeyboardInterrupt)):
                raise
            raise MlnbError(f"engine: the Dask cluster{self._at()} failed to start: {_brief(error)}") from None

    def _dashboard(self) -> tuple[str, bool]:
        """(the address of the scheduler's dashboard, '' when it has none; whether it serves the dashboard
        there: without bokeh on the scheduler's machine the page only says that bokeh is missing)."""
        try:
            link = within(self.timeout, lambda: self.client.dashboard_link) or ""
            # a lambda travels by value (cloudpickle): a remote scheduler needs no mlnb to answer it
            served = bool(link) and within(self.timeout, self.client.run_on_scheduler,
                                           lambda: __import__("importlib.util").util.find_spec("bokeh") is not None)
        except Exception:  # noqa: BLE001  (no dashboard: distributed's KeyError for a scheduler without one)
            return "", False
        return link, served is True

    def dashboard_link(self) -> str:
        """The address of the cluster's dashboard (its status page); '' when none is running."""
        link, served = self._dashboard()
        return link if served else ""

    def _announce_dashboard(self) -> None:
        """One line with the dashboard's address, which a LocalCluster puts on a free port each time; or
        that there is none for want of bokeh."""
        link, served = self._dashboard()
        if served:
            progress.log(f"dask dashboard: {link}")
        elif link:
            progress.log("dask dashboard: not running (the scheduler's machine needs bokeh: pip install bokeh)")

    def _at(self) -> str:
        return f" at engine.address = {self.address!r}" if self.address else ""

    def _scheduler_address(self) -> str:
        client = self.__dict__.get("client")
        try:
            return client.scheduler.address if client is not None else self.address
        except Exception:  # noqa: BLE001
            return self.address

    def _connect(self, address: str, n_workers: int, threads_per_worker: int):
        from distributed import Client, LocalCluster

        if address:
            answer = f"engine.address = {address!r}: no Dask scheduler answered within {self.timeout:g} s"
            try:
                # a server that accepts the connection and never answers would hold Client() for ever
                return within(self.timeout + 2, Client, address, timeout=self.timeout, set_as_default=False)
            except (OSError, TimeoutError) as error:
                raise MlnbError(f"{answer} ({_brief(error)})") from None
            except _Late:
                raise MlnbError(f"{answer} (the connection was accepted, but what answers is not a Dask "
                                "scheduler, or it is stuck)") from None
            except (ValueError, TypeError) as error:  # the address does not parse
                raise MlnbError(f"engine.address = {address!r}: not a Dask scheduler address ({_brief(error)}); "
                                "expected e.g. 'tcp://10.0.0.5:8786'") from None
        # one numba thread per worker thread: n_workers × threads_per_worker threads in all
        try:
            self._cluster = within(max(self.timeout, 60.0), LocalCluster, n_workers=n_workers,
                                   threads_per_worker=threads_per_worker, processes=True, dashboard_address=":0",
                                   silence_logs=logging.CRITICAL, env={"NUMBA_NUM_THREADS": str(threads_per_worker)})
        except _Late:
            raise MlnbError(f"engine: the Dask LocalCluster of {n_workers} workers did not start within "
                            f"{max(self.timeout, 60.0):g} s") from None
        return within(self.timeout + 2, Client, self._cluster, set_as_default=False)

    # -- life cycle ------------------------------------------------------------------------
    def __enter__(self) -> DaskBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def _silence() -> None:
        """Dask's loggers (and their children, which log through the parent's handler whatever the
        parent's level) say nothing from here on."""
        names = [name for name in list(logging.root.manager.loggerDict)
                 if any(name == prefix or name.startswith(prefix + ".") for prefix in _LOGGERS)]
        for name in set(names) | set(_LOGGERS):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)

    def close(self) -> None:
        """Close the client and the LocalCluster, each within the deadline (a lost scheduler does not
        answer a goodbye either)."""
        client = self.__dict__.pop("client", None)
        if client is not None:
            try:
                within(self.timeout + 2, client.close, timeout=self.timeout)
            except Exception:  # noqa: BLE001  (the scheduler is gone: nothing left to close)
                pass
        if self._cluster is not None:
            cluster, self._cluster = self._cluster, None
            try:
                within(self.timeout + 5, cluster.close, timeout=self.timeout)
            except Exception:  # noqa: BLE001
                pass
        if self._config is not None:
            self._config.__exit__(None, None, None)
            self._config = None
        # Dask's loggers stay silent: its threads may still report the lost connection after this

    def _workers(self, during: str = "") -> set[str]:
        try:
            info = within(self.timeout, self.client.scheduler_info, n_workers=-1)
            return set((info or {}).get("workers", ()))  # {} once the scheduler is lost
        except (_Late, OSError, TimeoutError) as error:
            why = f"no answer within {self.timeout:g} s" if isinstance(error, _Late) else _brief(error)
            raise MlnbError(f"engine: lost the Dask scheduler {self._scheduler_address()}"
                            f"{' during ' + during if during else ''} ({why})") from None

    def _check_workers(self) -> None:
        try:
            versions = within(self.timeout, self.client.run, _import_mlnb_version)
        except ImportError as error:
            raise MlnbError(f"engine: the Dask workers cannot import mlnb ({error}); install the same mlnb on every "
                            "worker as on this machine") from None
        except _Late:
            raise MlnbError(f"engine: the Dask workers did not answer within {self.timeout:g} s "
                            "(engine.timeout)") from None
        mine = _import_mlnb_version()
        other = sorted({v for v in versions.values() if v != mine})
        if other:
            raise MlnbError(f"engine: the Dask workers run mlnb {', '.join(other)} but this machine runs {mine}; "
                            "install the same version everywhere")

    def describe(self) -> dict:
        return {"kind": "dask", "scheduler": self.client.scheduler.address, "workers": self.n_workers,
                "local_cluster": self._cluster is not None}

    # -- work ------------------------------------------------------------------------------
    def _scatter(self, args: tuple) -> list:
        """Arguments shared by every task: sent once per map as a task (``_shared``), not once per task."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Dask's "large graph" warning: a model's state is meant to travel
            return [self.client.submit(_shared, arg, pure=False, retries=self.retries, key=f"shared-{_token()}")
                    if _is_large(arg) else arg for arg in args]

    def _wait(self, futures: list, description: str) -> None:
        """Until every future is done: meanwhile, every ``_POLL`` seconds, the scheduler must answer
        (within ``engine.timeout``) and have a worker (one at least within ``engine.timeout``)."""
        if not futures:
            return
        left, done = [len(futures)], threading.Event()
        lock = threading.Lock()

        def finished(_future):
            with lock:
                left[0] -= 1
                if left[0] <= 0:
                    done.set()

        for future in futures:
            future.add_done_callback(finished)
        no_worker_since = None
        while not done.wait(_POLL):
            if self.client.status not in ("running", "connecting"):
                raise MlnbError(f"engine: lost the Dask scheduler {self._scheduler_address()} during {description} "
                                f"(client {self.client.status})")
            workers = self._workers(description)
            if workers:
                no_worker_since = None
            elif no_worker_since is None:
                no_worker_since = time.monotonic()
            elif time.monotonic() - no_worker_since > self.timeout:
                raise MlnbError(f"engine: {description}: the Dask scheduler {self._scheduler_address()} has had no "
                                f"worker for {self.timeout:g} s (engine.timeout); see the workers' logs")

    def _collect(self, futures, description: str, partitions: Sequence):
        from concurrent.futures import CancelledError

        from distributed import KilledWorker

        try:
            before = self._workers(description)
        except MlnbError:
            before = set()
        many = isinstance(futures, list)
        try:
            self._wait(futures if many else [futures], description)
            return within(self.timeout + 60, self.client.gather, futures)
        except KilledWorker as error:
            key = str(getattr(error, "task", ""))
            raise MlnbError(f"engine: {description}: a task ({key}) was given up after killing {self.retries + 1} "
                            f"Dask worker(s) (engine.retries = {self.retries}); the workers may be out of memory "
                            "— see their logs") from None
        except CancelledError as error:  # its inputs were lost with a worker more often than retries allow
            if "scheduler-connection-lost" in str(error) or self.client.status not in ("running", "connecting"):
                raise MlnbError(f"engine: lost the Dask scheduler {self._scheduler_address()} during "
                                f"{description}") from None
            raise MlnbError(f"engine: {description}: a task was cancelled by the Dask scheduler ({_brief(error)}); "
                            "a worker was probably lost — see the workers' logs, or raise engine.retries") from None
        except (OSError, TimeoutError, _Late) as error:  # the scheduler went away
            why = f"no answer within {self.timeout:g} s" if isinstance(error, _Late) else _brief(error)
            raise MlnbError(f"engine: lost the Dask scheduler {self._scheduler_address()} during {description} "
                            f"({why})") from None
        finally:
            try:
                lost = before - self._workers() if before and getattr(self, "client", None) is not None else set()
            except MlnbError:
                lost = set()
            if lost:
                progress.log(f"engine: {len(lost)} Dask worker(s) left during {description} "
                             f"({', '.join(sorted(lost))}); their tasks were re-run on the others")

    def map(self, function: Callable, partitions: Sequence, *args, description: str = "tasks") -> list:
        """[function(p, *args) for p in partitions], each on a worker; results gathered here in order."""
        shared = self._scatter(args)
        futures = [self.client.submit(function, partition, *shared, pure=False, retries=self.retries,
                                      key=f"{getattr(function, '__name__', 'task')}-{i}-{_token()}")
                   for i, partition in enumerate(partitions)]
        try:
            return self._collect(futures, description, partitions)
        finally:
            del futures, shared

    def map_reduce(self, function: Callable, partitions: Sequence, *args, combine: Callable[[Any, Any], Any],
                   description: str = "tasks") -> Any:
        """The partitions' results combined on the workers, in ``tree_reduce``'s shape; only the
        final value comes here."""
        shared = self._scatter(args)
        # every future is held until the end: a released one cannot be recomputed if a worker that held
        # its result is lost (the scheduler then cancels its dependents: "lost dependencies")
        held = []

        def submit(*arguments):
            held.append(self.client.submit(*arguments, pure=False, retries=self.retries))
            return held[-1]

        root = tree_reduce((submit(function, partition, *shared) for partition in partitions),
                           lambda a, b: submit(combine, a, b))
        try:
            return self._collect(root, description, partitions)
        finally:
            held.clear()


def _brief(error: BaseException) -> str:
    """An exception's message on one line, cut to 300 characters."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:300] + "..."


def _is_large(value) -> bool:
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.nbytes > 100_000
    return isinstance(value, dict) or hasattr(value, "__dict__")


def _token() -> str:
    import uuid

    return uuid.uuid4().hex[:8]
