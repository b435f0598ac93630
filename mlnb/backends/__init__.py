"""Where a streaming study's work runs: this process, or a Dask cluster.

A backend maps a function over partitions of the data and adds up what comes
back; the functions themselves (``mlnb.backends.tasks``) are the same either
way, so a study gives the same numbers on both (NB exactly; LR up to the
parameter mixing that data-parallel training needs, see ``tasks.lr_pass``).

    local : the partitions one after the other in this process (the numba kernels use
            every core inside each step)
    dask  : ``distributed.Client`` on a running scheduler (``engine.address``) or on a
            ``LocalCluster`` of ``engine.n_workers`` processes; workers read their own
            partitions, only models, counts and summaries travel
"""

from __future__ import annotations

from mlnb.backends.local import LocalBackend


def open_backend(engine):
    """The backend ``engine`` (the config's ``[engine]`` table) names; use it as a context manager."""
    if engine.kind == "dask":
        from mlnb.backends.dask import DaskBackend  # dask is imported only when asked for

        return DaskBackend(address=engine.address, n_workers=engine.n_workers,
                           threads_per_worker=engine.threads_per_worker, timeout=engine.timeout,
                           retries=engine.retries)
    return LocalBackend()


__all__ = ["LocalBackend", "open_backend"]
