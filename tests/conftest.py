"""Shared fixtures: a small synthetic corpus and the real data beside the project."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlnb.data.synthetic import make_rcv1_like

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
RCV1_SUBSET = SHARED_DATA / "rcv1subset" / "rcv1subset1.svm.gz"


@pytest.fixture(scope="session")
def small_corpus():
    """3,000 documents, 2,000 words, 20 categories: seconds to fit anything."""
    return make_rcv1_like(n_documents=3000, n_features=2000, n_categories=20, seed=7)


@pytest.fixture(scope="session")
def rcv1_subset():
    """The real RCV1-v2 subset (6,000 documents) from ../shared/data, or a skip."""
    if not RCV1_SUBSET.is_file():
        pytest.skip(f"real data not found at {RCV1_SUBSET} (../shared/data is beside the project "
                    "only in the development checkout)")
    from mlnb.data.svmlight import load_svmlight_dataset

    return load_svmlight_dataset(RCV1_SUBSET, n_features=47236, seed=0)


@pytest.fixture(scope="session")
def output_with_numba_threads():
    """``run(script, threads, *args)`` -> the script's stdout split on whitespace, from a subprocess
    started with NUMBA_NUM_THREADS = threads (it takes effect only at start-up). The scripts print
    numba.get_num_threads() first, then digests of what must not depend on it."""

    def run(script: str, threads: int, *args: str) -> list[str]:
        env = {**os.environ, "NUMBA_NUM_THREADS": str(threads)}
        done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    return run
