"""Binary shards (mlnb.data.shards): exact round trip, atomic conversion, one-line errors for damaged shards."""

import json
import pathlib
import pickle

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

from mlnb.data.shards import (
    MANIFEST,
    ShardSource,
    convert,
    read_manifest,
    shard_sources,
)
from mlnb.data.stream import (
    ChunkSource,
    SvmlightSource,
    TextReading,
    TextSource,
    concatenate,
    split_source,
)
from mlnb.data.synthetic import make_rcv1_like
from mlnb.data.text import TextOptions
from mlnb.errors import MlnbError


def same(A, B) -> bool:
    return A.shape == B.shape and (A != B).nnz == 0


@pytest.fixture(scope="module")
def svm_source(tmp_path_factory):
    folder = tmp_path_factory.mktemp("svm")
    data = make_rcv1_like(n_documents=2000, n_features=500, n_categories=12, words_per_document=20, seed=5)
    X = data.X.copy()
    X.data[::5] = X.data[::5] / 3  # real values too
    for k, (a, b) in enumerate([(0, 1200), (1200, 2000)]):
        dump_svmlight_file(X[a:b], data.Y.tocsr()[a:b], str(folder / f"part-{k}.svm"), multilabel=True,
                           zero_based=False)
    return SvmlightSource(str(folder / "part-*.svm"))


@pytest.fixture(scope="module")
def shards(svm_source, tmp_path_factory):
    out = tmp_path_factory.mktemp("shards") / "corpus"
    convert(svm_source, out, shard_documents=450)
    return out


def test_round_trip_is_exact(svm_source, shards):
    X, Y, ids = concatenate(svm_source.chunks(1000))
    source = ShardSource(shards)
    manifest = read_manifest(shards)
    assert [s["n_documents"] for s in manifest["shards"]] == [450] * 4 + [200]
    assert manifest["feature_values"] == "real" and manifest["non_negative_values"] is True
    assert (source.n_features, source.category_names, source.n_documents) == \
        (svm_source.n_features, svm_source.category_names, 2000)
    for chunk_size in (1, 100, 450, 5000):
        Xs, Ys, ids_s = concatenate(source.chunks(chunk_size))
        assert same(Xs, X) and same(Ys, Y) and Xs.dtype == np.float32 and Ys.dtype == np.int8
        np.testing.assert_array_equal(ids_s, ids)  # the glob's ids, (file << 40) + line, are kept


def test_partitions_cover_every_document_once_and_pickle(shards):
    source = ShardSource(shards, partition_documents=160)
    partitions = source.partitions()
    assert len(partitions) == 4 * 3 + 2 and all(p.n_documents <= 160 for p in partitions)
    clone = pickle.loads(pickle.dumps(source))
    ids = np.concatenate([c.ids for p in partitions[::-1] for c in clone.read(pickle.loads(pickle.dumps(p)), 64)])
    assert ids.size == 2000 and np.unique(ids).size == 2000
    np.testing.assert_array_equal(np.sort(ids), concatenate(source.chunks(2000))[2])


def test_hash_split_of_shards_is_the_split_of_the_original(svm_source, shards):
    _, test = split_source(svm_source, seed=3, test_fraction=0.25)
    _, shard_test = shard_sources(shards, seed=3, test_fraction=0.25, partition_documents=100)
    a, b = concatenate(test.chunks(500)), concatenate(shard_test.chunks(33))
    np.testing.assert_array_equal(a[2], b[2])
    assert same(a[0], b[0]) and same(a[1], b[1])


def test_text_corpus_keeps_its_vocabulary(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": f"word{i % 7} common w{i % 3}", "label": f"c{i % 2}"}) + "\n"
                            for i in range(50)))
    source = TextSource(path, TextReading(), TextOptions(vectorizer="count"))
    out = tmp_path / "shards"
    convert(source, out, shard_documents=20)
    back = ShardSource(out)
    assert back.feature_names == source.feature_names and back.category_names == ["c0", "c1"]
    assert read_manifest(out)["feature_values"] == "integer"
    assert same(concatenate(back.chunks(7))[0], concatenate(source.chunks(50))[0])


class FailingSource(ChunkSource):
    """Yields the chunks of another source, then fails: a conversion interrupted half-way."""

    def __init__(self, source, after: int):
        self.source, self.after = source, after
        self.n_features, self.category_names, self.name = source.n_features, source.category_names, "failing"

    def partitions(self):
        return self.source.partitions()

    def read(self, partition, chunk_size):
        for k, chunk in enumerate(self.source.read(partition, chunk_size)):
            if k == self.after:
                raise MlnbError("disk full (simulated)")
            yield chunk


def test_a_failed_conversion_leaves_no_manifest(svm_source, tmp_path):
    """Written into a staging folder beside OUT and swapped in once complete: a failure leaves nothing."""
    out = tmp_path / "partial"
    with pytest.raises(MlnbError, match="simulated"):
        convert(FailingSource(svm_source, after=5), out, shard_documents=100)
    assert not out.exists() and list(tmp_path.iterdir()) == []  # no staging folder or lock left
    out.mkdir()
    (out / "shard-00000").mkdir()  # what an older mlnb left behind
    with pytest.raises(MlnbError, match="manifest is not: a conversion that did not finish"):
        ShardSource(out)
    with pytest.raises(MlnbError, match="not empty"):
        convert(svm_source, out, shard_documents=1000)
    convert(svm_source, out, shard_documents=1000, overwrite=True)
    assert ShardSource(out).n_documents == 2000 and not (out / "shard-00002").exists()
    with pytest.raises(MlnbError, match="simulated"):
        convert(FailingSource(svm_source, after=5), out, shard_documents=100, overwrite=True)
    assert ShardSource(out).n_documents == 2000  # the earlier conversion, untouched


@pytest.fixture()
def damaged(shards, tmp_path):
    """A fresh copy of the shards to damage."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(shards, copy)
    return copy


def read_all(folder, **options):
    options.setdefault("verify", False)  # these tests damage files to check the structure checks
    return concatenate(ShardSource(folder, **options).chunks(1000))


def one_line(error) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def test_missing_shard(damaged):
    import shutil

    shutil.rmtree(damaged / "shard-00002")
    with pytest.raises(MlnbError) as error:
        read_all(damaged)
    assert one_line(error) == f"{damaged / 'shard-00002'}: missing shard (the manifest lists it)"
    (damaged / "shard-00003" / "X_data.npy").unlink()
    with pytest.raises(MlnbError, match=r"shard-00003/X_data\.npy: missing shard file"):
        list(ShardSource(damaged).read(ShardSource(damaged).partitions()[3], 100))


def test_truncated_shard_file(damaged):
    path = damaged / "shard-00001" / "X_indices.npy"
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(MlnbError) as error:
        read_all(damaged)
    assert one_line(error).startswith(f"{path}: truncated: ")


def test_manifest_inconsistent_with_a_shard(damaged):
    manifest = json.loads((damaged / MANIFEST).read_text())
    manifest["shards"][1]["nnz"] += 1
    (damaged / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(MlnbError) as error:
        read_all(damaged)
    assert "shard-00001" in one_line(error)


def test_corrupt_arrays_give_one_line_not_a_wrong_matrix(damaged):
    path = damaged / "shard-00000" / "X_indices.npy"
    indices = np.load(path, mmap_mode="r+")
    indices[100] = 10**6  # beyond n_features
    indices.flush()
    del indices
    with pytest.raises(MlnbError, match=r"shard-00000/X_indices\.npy: a column index outside 0\.\.499"):
        read_all(damaged)
    path = damaged / "shard-00004" / "X_data.npy"
    data = np.load(path, mmap_mode="r+")
    data[3] = np.nan
    data.flush()
    del data
    with pytest.raises(MlnbError, match=r"shard-00004:\d+: feature value nan"):
        concatenate(ShardSource(damaged, verify=False).read(ShardSource(damaged).partitions()[4], 1000))
    with pytest.raises(MlnbError, match=r"shard-00004/X_data\.npy: corrupt: its CRC-32 differs"):
        concatenate(ShardSource(damaged, verify=True).read(ShardSource(damaged).partitions()[4], 1000))


class Touch:
    """Unpickling this creates a file: the proof that a loader ran code from the data."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


def test_loading_never_runs_code(damaged, tmp_path):
    """A pickled object array in place of a shard file is refused (allow_pickle=False), not loaded."""
    path = damaged / "shard-00000" / "ids.npy"
    size = path.stat().st_size
    marker = tmp_path / "code-ran"
    np.save(path, np.array([Touch(marker)] * 3, dtype=object), allow_pickle=True)
    manifest = json.loads((damaged / MANIFEST).read_text())
    manifest["shards"][0]["bytes"]["ids"] = path.stat().st_size  # make the sizes agree
    (damaged / MANIFEST).write_text(json.dumps(manifest))
    assert path.stat().st_size != size
    with pytest.raises(MlnbError, match=r"ids\.npy: its header claims object \(3,\); the manifest says int64"):
        read_all(damaged)
    assert not marker.exists()


@pytest.mark.parametrize("change, message", [
    (lambda m: m.update(format="other"), "not an mlnb-shards manifest"),
    (lambda m: m.update(version=99), "format version 99 is newer"),
    (lambda m: m.update(n_features="47236"), "key 'n_features' is missing or not a int"),
    (lambda m: m.update(category_names=["a", "a"]), "distinct strings"),
    (lambda m: m["shards"][0].update(name="../../etc"), "expected 'shard-00000'"),
    (lambda m: m.update(shards=[]), "lists no shards"),
])
def test_bad_manifests(damaged, change, message):
    manifest = json.loads((damaged / MANIFEST).read_text())
    change(manifest)
    (damaged / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(MlnbError) as error:
        ShardSource(damaged)
    assert message in one_line(error) and str(damaged / MANIFEST) in str(error.value)


def test_not_json_and_not_a_folder(damaged, tmp_path):
    (damaged / MANIFEST).write_text("{not json")
    with pytest.raises(MlnbError, match="manifest.json: not valid JSON"):
        ShardSource(damaged)
    with pytest.raises(MlnbError, match="no such folder"):
        ShardSource(tmp_path / "nowhere")


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_files_crc_from_pieces_on_threads_is_zlibs(tmp_path, monkeypatch, threads):
    import zlib

    from mlnb.data import shards

    monkeypatch.setattr(shards, "CRC_PIECE_BYTES", 1000)
    monkeypatch.setattr(shards, "worker_threads", lambda: threads)
    rng = np.random.default_rng(threads)
    for size in (0, 1, 999, 1000, 1001, 2000, 2999, 12_345):  # no piece, one, a remainder first, whole pieces
        path = tmp_path / f"file-{size}"
        path.write_bytes(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
        assert shards._crc32(path) == zlib.crc32(path.read_bytes()), size
    zeros = tmp_path / "zeros"  # zero bytes: where a wrong shift operator would still give zlib's number alone
    zeros.write_bytes(b"\0" * 5000)
    assert shards._crc32(zeros) == zlib.crc32(b"\0" * 5000)
    for length in (1, 7, 1000):  # crc(A B) = M·crc(A) xor crc(B) for any B of that length
        message, more = (rng.integers(0, 256, size, dtype=np.uint8).tobytes() for size in (37, length))
        assert shards._gf2_times(shards._zeros_operator(length), zlib.crc32(message)) ^ zlib.crc32(more) == \
            zlib.crc32(message + more)
