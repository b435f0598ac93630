"""The Dask backend: the same partition functions, run by the workers of a Dask cluster.

Workers read their own partitions (a partition is a file name and a range, never data); what
travels is what the functions return — NB counts, LR states, score summaries — and the
arguments they share (a model's state), scattered once to every worker. Reductions run on the
workers in ``tree_reduce``'s shape, so their sums are bit-identical to the local backend's.

Failures, each one line (``MlnbError``):

* no scheduler at ``engine.address`` within ``engine.timeout`` seconds;
* workers that cannot import mlnb (a cluster must run the same mlnb as the client);
* a worker that dies while running a task: the scheduler re-runs its tasks on the other workers
  (a LocalCluster's nanny also restarts it) and the run goes on, logged on stderr; a task that
  kills ``engine.retries`` + 1 workers is given up, naming its partition;
* an error inside a task (a corrupt shard, a missing file) arrives as the task's own message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from mlnb import progress
from mlnb.backends.reduce import tree_reduce
from mlnb.errors import MlnbError


def _import_mlnb_version() -> str:
    import mlnb

    return getattr(mlnb, "__version__", "unknown")


class DaskBackend:
    """Map partitions to a Dask cluster's workers and reduce there."""

    name = "dask"

    def __init__(self, address: str = "", n_workers: int = 2, threads_per_worker: int = 1, timeout: float = 30.0,
                 retries: int = 1):
        import dask
        from distributed import Client, LocalCluster

        self.address, self.retries, self._cluster = address, retries, None
        # a task that kills more than `retries` + 1 workers is given up (KilledWorker)
        settings = {"distributed.scheduler.allowed-failures": retries,
                    "distributed.comm.timeouts.connect": f"{timeout}s"}
        self._config = dask.config.set(settings)
        self._config.__enter__()
        try:
            if address:
                try:
                    self.client = Client(address, timeout=timeout, set_as_default=False)
                except (OSError, TimeoutError) as error:
                    raise MlnbError(f"engine.address = {address!r}: no Dask scheduler answered within {timeout:g} s "
                                    f"({error})") from None
            else:
                # one numba thread per worker thread: n_workers × threads_per_worker threads in all
                self._cluster = LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker,
                                             processes=True, dashboard_address=":0", silence_logs=logging.ERROR,
                                             env={"NUMBA_NUM_THREADS": str(threads_per_worker)})
                self.client = Client(self._cluster, set_as_default=False)
            try:
                self.client.wait_for_workers(1, timeout=timeout)
            except (OSError, TimeoutError):
                raise MlnbError(f"engine: the Dask scheduler {self.client.scheduler.address} has no worker "
                                f"after {timeout:g} s (engine.timeout)") from None
            self._check_workers()
        except BaseException:
            self.close()
            raise
        self.n_workers = len(self._workers())

    # -- life cycle ------------------------------------------------------------------------
    def __enter__(self) -> DaskBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        client = self.__dict__.pop("client", None)
        if client is not None:
            client.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
        if self._config is not None:
            self._config.__exit__(None, None, None)
            self._config = None

    def _workers(self) -> set[str]:
        return set(self.client.scheduler_info(n_workers=-1)["workers"])

    def _check_workers(self) -> None:
        try:
            versions = self.client.run(_import_mlnb_version)
        except ImportError as error:
            raise MlnbError(f"engine: the Dask workers cannot import mlnb ({error}); install the same mlnb on every "
                            "worker as on this machine") from None
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
        """Arguments shared by every task: sent to every worker once, not once per task."""
        # in a list: scatter would send a dict's values one by one, under its keys as names
        return [self.client.scatter([arg], broadcast=True, hash=False)[0] if _is_large(arg) else arg for arg in args]

    def _collect(self, futures, description: str, partitions: Sequence):
        from concurrent.futures import CancelledError

        from distributed import KilledWorker

        before = self._workers()
        try:
            return self.client.gather(futures)
        except KilledWorker as error:
            key = str(getattr(error, "task", ""))
            raise MlnbError(f"engine: {description}: a task ({key}) was given up after killing {self.retries + 1} "
                            f"Dask worker(s) (engine.retries = {self.retries}); the workers may be out of memory "
                            "— see their logs") from None
        except CancelledError as error:  # its inputs were lost with a worker more often than retries allow
            raise MlnbError(f"engine: {description}: a task was cancelled by the Dask scheduler ({error}); a worker "
                            "was probably lost — see the workers' logs, or raise engine.retries") from None
        except (OSError, TimeoutError) as error:  # the scheduler went away
            raise MlnbError(f"engine: lost the Dask scheduler during {description} ({error})") from None
        finally:
            lost = before - self._workers() if getattr(self, "client", None) is not None else set()
            if lost:
                progress.log(f"engine: {len(lost)} Dask worker(s) left during {description} "
                             f"({', '.join(sorted(lost))}); their tasks were re-run on the others")

    def map(self, function: Callable, partitions: Sequence, *args, description: str = "tasks") -> list:
        """[function(p, *args) for p in partitions], each on a worker; results gathered here in order."""
        shared = self._scatter(args)
        futures = [self.client.submit(function, partition, *shared, pure=False, retries=self.retries,
                                      key=f"{getattr(function, '__name__', 'task')}-{i}-{_token()}")
                   for i, partition in enumerate(partitions)]
        return self._collect(futures, description, partitions)

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


def _is_large(value) -> bool:
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.nbytes > 100_000
    return isinstance(value, dict) or hasattr(value, "__dict__")


def _token() -> str:
    import uuid

    return uuid.uuid4().hex[:8]
