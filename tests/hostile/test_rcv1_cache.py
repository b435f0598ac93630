"""A config may point data.rcv1.data_home at a folder someone else filled: reading it must not run code,
and a failed run must not leave folders behind."""

import os

import joblib
import numpy as np
import pytest
import scipy.sparse as sp

from mlnb import MlnbError
from mlnb.data.rcv1 import CACHE_NAMES, load_rcv1

N = 30


class Payload:
    """Unpickling this calls ``how`` (os.system or exec), which creates ``marker``."""

    def __init__(self, marker, how):
        self.marker, self.how = str(marker), how

    def __reduce__(self):
        if self.how == "system":
            return os.system, (f"touch '{self.marker}'",)
        return exec, (f"open({self.marker!r}, 'w').close()",)


def cache_values():
    rng = np.random.default_rng(0)
    X = sp.random(N, 47236, density=0.001, format="csr", random_state=1)
    Y = sp.csr_array((rng.random((N, 3)) < 0.4).astype(np.uint8))  # as scikit-learn 1.9 writes it
    names = np.empty(3, dtype=object)
    names[:] = ["C15", "CCAT", "GCAT"]  # fetch_rcv1's object array of topic codes
    return [X, np.arange(2286, 2286 + N, dtype=np.uint32), Y, names]


def write_cache(home, replace=None, compress=9):
    """fetch_rcv1's four files in home/RCV1, written as it writes them; ``replace`` = {index: value}."""
    folder = home / "RCV1"
    folder.mkdir(parents=True, exist_ok=True)
    values = cache_values()
    for index, value in (replace or {}).items():
        values[index] = value
    for name, value in zip(CACHE_NAMES, values):
        joblib.dump(value, folder / name, compress=compress)
    return folder


def test_the_payload_is_live_under_joblib_load(tmp_path):
    """The control: the crafted file does run code when loaded the usual way."""
    marker = tmp_path / "ran"
    joblib.dump(Payload(marker, "system"), tmp_path / "evil.pkl")
    joblib.load(tmp_path / "evil.pkl")
    assert marker.exists()


@pytest.mark.parametrize("compress", [0, 9])
@pytest.mark.parametrize("how", ["system", "exec"])
@pytest.mark.parametrize("index, wrap", [
    (0, lambda p: p),                                                   # the whole samples file
    (1, lambda p: {"ids": np.arange(3), "x": p}),                       # inside a container
    (3, lambda p: np.array([p, "CCAT"], dtype=object)),                 # in the nested object-array pickle
], ids=["top-level", "in-a-dict", "in-an-object-array"])
def test_a_crafted_cache_file_is_refused_and_runs_nothing(tmp_path, how, index, wrap, compress):
    marker = tmp_path / "ran"
    write_cache(tmp_path / "home", {index: wrap(Payload(marker, how))}, compress=compress)
    with pytest.raises(MlnbError) as caught:
        load_rcv1(data_home=str(tmp_path / "home"), split="random", test_size=10)
    message = str(caught.value)
    assert "\n" not in message and CACHE_NAMES[index] in message and "refused" in message
    assert not marker.exists()


def test_a_csr_matrix_with_indices_outside_its_shape_is_refused(tmp_path):
    X = cache_values()[0]
    X.indices[0] = 10**6  # the pickle stores the arrays as they are; nothing checks them on the way in
    write_cache(tmp_path, {0: X})
    with pytest.raises(MlnbError, match=r"samples_py3\.pkl: not a consistent CSR matrix"):
        load_rcv1(data_home=str(tmp_path), split="random", test_size=10)


def test_mismatched_cache_files_name_the_file(tmp_path):
    write_cache(tmp_path, {1: np.arange(5)})
    with pytest.raises(MlnbError, match=r"sample_id_py3\.pkl: expected 30 document ids"):
        load_rcv1(data_home=str(tmp_path), split="random", test_size=10)


@pytest.mark.parametrize("compress", [0, 3, ("gzip", 3), ("bz2", 3), ("lzma", 3), 9])
def test_a_cache_written_like_scikit_learn_loads_as_fetch_rcv1_reads_it(tmp_path, compress):
    from sklearn.datasets import fetch_rcv1

    write_cache(tmp_path, compress=compress)
    data = load_rcv1(data_home=str(tmp_path), split="random", test_size=10, seed=0)
    oracle = fetch_rcv1(data_home=str(tmp_path))  # trusted here: this test wrote the files
    assert data.category_names == ["C15", "CCAT", "GCAT"] == list(oracle.target_names)
    np.testing.assert_array_equal(data.X.toarray(), oracle.data.toarray().astype(np.float32))
    np.testing.assert_array_equal(data.Y.toarray(), oracle.target.toarray())
    assert data.X.dtype == np.float32 and data.train_index.size == 20 and data.test_index.size == 10


def test_a_missing_cache_creates_no_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SCIKIT_LEARN_DATA", raising=False)
    for data_home in ["relative/data", str(tmp_path / "absolute" / "data"), None, ""]:
        with pytest.raises(MlnbError, match=r"RCV1 is not in scikit-learn's cache at .*download_if_missing is false"):
            load_rcv1(data_home=data_home, download_if_missing=False)
    assert list(tmp_path.iterdir()) == []  # not relative/, absolute/, nor home/scikit_learn_data


def test_a_partial_cache_is_refused_before_scikit_learn_can_load_it(tmp_path, monkeypatch):
    import sklearn.datasets

    folder = write_cache(tmp_path)
    (folder / CACHE_NAMES[2]).unlink()
    monkeypatch.setattr(sklearn.datasets, "fetch_rcv1", lambda **kw: pytest.fail("fetch_rcv1 was called"))
    with pytest.raises(MlnbError, match=r"cache is incomplete \(missing sample_topics_py3\.pkl\)"):
        load_rcv1(data_home=str(tmp_path), download_if_missing=True)


def test_download_goes_through_scikit_learn_and_is_read_back_restricted(tmp_path, monkeypatch):
    import sklearn.datasets

    calls = []

    def fake_fetch_rcv1(data_home, download_if_missing):  # stands in for the network
        calls.append((data_home, download_if_missing))
        write_cache(tmp_path / "home")

    monkeypatch.setattr(sklearn.datasets, "fetch_rcv1", fake_fetch_rcv1)
    data = load_rcv1(data_home=str(tmp_path / "home"), download_if_missing=True, split="random", test_size=10)
    assert calls == [(str(tmp_path / "home"), True)] and data.X.shape == (N, 47236)
    load_rcv1(data_home=str(tmp_path / "home"), download_if_missing=True, split="random", test_size=10)
    assert len(calls) == 1  # cached: not fetched again

    def failing_fetch_rcv1(data_home, download_if_missing):
        raise OSError("no network")

    monkeypatch.setattr(sklearn.datasets, "fetch_rcv1", failing_fetch_rcv1)
    with pytest.raises(MlnbError, match=r"and the download failed \(OSError: no network\)"):
        load_rcv1(data_home=str(tmp_path / "other"), download_if_missing=True)
