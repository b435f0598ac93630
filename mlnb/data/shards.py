"""Binary shards: a corpus as a folder of CSR arrays in raw .npy files, read by memory mapping.

Layout (written by :func:`convert`, wired as ``mlnb convert``)::

    folder/
      manifest.json            format and version, n_features, category names, value kinds, and per
                               shard: documents, non-zeros, first and last id, file sizes, CRC-32s
      feature_names.json       (text corpora with a vocabulary only) the feature names, in column order
      shard-00000/             one folder per shard of ``shard_documents`` documents:
        X_indptr.npy  int64 (m + 1)    X_indices.npy int32 (nnz)    X_data.npy float32 (nnz)
        Y_indptr.npy  int64 (m + 1)    Y_indices.npy int32 (labels)
        ids.npy       int64 (m)        the documents' ids in the source (so the hash split is kept)
      shard-00001/ ...

Why raw .npy files (measured by experiments/bench_shards.py, numbers in the README): ``np.load(...,
mmap_mode="r")`` maps them, so a chunk (or a Dask partition of a row range) reads only its own
pages and a shard never has to fit in memory, at memory-copy speed — tens of times the svmlight
parser. An .npz (even uncompressed) cannot be mapped by numpy: each member is read whole. Parquet
would need pyarrow, which mlnb does not depend on.

Safety: the manifest is JSON and every array is loaded with ``allow_pickle=False``, so opening a
shard folder never runs code. A missing, truncated or inconsistent shard file is one MlnbError
line naming it; every chunk's structure (index ranges, order) is checked before use, and its values
go through ``validate.check_features``. ``verify=True`` also checks each file's CRC-32.

Writing is atomic: each shard is written under a temporary name and renamed, and the manifest is
written last (also renamed into place), so a conversion that fails or is interrupted never leaves
a folder that looks complete.
"""

from __future__ import annotations

import json
import os
import shutil
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb import progress
from mlnb.data.stream import (
    Chunk,
    ChunkSource,
    Partition,
    check_chunk_size,
    make_chunk,
    split_source,
    track_chunks,
)
from mlnb.data.validate import existing_folder
from mlnb.errors import MlnbError

FORMAT = "mlnb-shards"
VERSION = 1
MANIFEST = "manifest.json"
FEATURE_NAMES = "feature_names.json"
#: the arrays of a shard and their dtypes
ARRAYS = {"X_indptr": "int64", "X_indices": "int32", "X_data": "float32", "Y_indptr": "int64",
          "Y_indices": "int32", "ids": "int64"}


def shard_name(number: int) -> str:
    return f"shard-{number:05d}"


# -- writing -----------------------------------------------------------------------------------------
def _crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(2**22):
            crc = zlib.crc32(block, crc)
    return crc


def _write_shard(folder: Path, number: int, X: sp.csr_matrix, Y: sp.csr_matrix, ids: np.ndarray) -> dict:
    """Write one shard under a temporary name, then rename it; its manifest entry."""
    name = shard_name(number)
    temporary = folder / f".{name}.partial-{os.getpid()}"
    if temporary.exists():
        shutil.rmtree(temporary)
    temporary.mkdir()
    arrays = {"X_indptr": X.indptr, "X_indices": X.indices, "X_data": X.data, "Y_indptr": Y.indptr,
              "Y_indices": Y.indices, "ids": ids}
    entry = {"name": name, "n_documents": int(X.shape[0]), "nnz": int(X.nnz), "n_labels": int(Y.nnz),
             "first_id": int(ids[0]), "last_id": int(ids[-1]), "bytes": {}, "crc32": {}}
    for key, array in arrays.items():
        path = temporary / f"{key}.npy"
        np.save(path, np.ascontiguousarray(array, dtype=ARRAYS[key]), allow_pickle=False)
        entry["bytes"][key] = path.stat().st_size
        entry["crc32"][key] = _crc32(path)
    final = folder / name
    if final.exists():
        shutil.rmtree(final)
    os.replace(temporary, final)
    return entry


def _write_json(path: Path, value) -> None:
    temporary = path.with_name(f".{path.name}.partial-{os.getpid()}")
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def convert(source: ChunkSource, out_folder, shard_documents: int = 100_000, overwrite: bool = False,
            description: str | None = None) -> Path:
    """Write every document of ``source`` (any ChunkSource, in its order) as binary shards of
    ``shard_documents`` documents into ``out_folder``; returns the manifest's path.

    The folder must not exist or be empty (``overwrite=True``: a folder holding an earlier
    conversion is replaced). Memory: one shard's arrays (about 8 bytes per non-zero). Atomic: the
    manifest is written last, so a failed or interrupted conversion leaves no manifest.
    """
    shard_documents = check_chunk_size(shard_documents)
    out = Path(out_folder)
    if out.exists() and not out.is_dir():
        raise MlnbError(f"{out}: is a file; expected a folder for the shards")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise MlnbError(f"{out}: the folder is not empty; choose a new folder (or overwrite an earlier "
                            "conversion)")
        if not (out / MANIFEST).is_file() and not any(p.name.startswith("shard-") for p in out.iterdir()):
            raise MlnbError(f"{out}: not a shard folder (no {MANIFEST}); refusing to overwrite it")
        (out / MANIFEST).unlink(missing_ok=True)  # from now on the folder does not look complete
        for entry in out.iterdir():
            if entry.name.startswith("shard-") and entry.is_dir() or entry.name == FEATURE_NAMES:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    out.mkdir(parents=True, exist_ok=True)
    shards: list[dict] = []
    pending: list[Chunk] = []
    n_pending = 0
    integer_values, non_negative = True, True
    labels_per_document = [np.inf, 0]

    def flush(n: int) -> None:
        nonlocal pending, n_pending
        X = sp.vstack([c.X for c in pending], format="csr")
        Y = sp.vstack([c.Y for c in pending], format="csr")
        ids = np.concatenate([c.ids for c in pending])
        X.sort_indices()
        Y.sort_indices()
        shards.append(_write_shard(out, len(shards), X[:n], Y[:n], ids[:n]))
        pending = [Chunk(X[n:], Y[n:], ids[n:], "", 0)] if ids.size > n else []
        n_pending = ids.size - n

    try:
        chunk_size = min(shard_documents, 10_000)
        for chunk in track_chunks(source.chunks(chunk_size), source.expected_documents,
                                  description=f"converting {source.name}"):
            if chunk.X.nnz:
                integer_values = integer_values and bool(np.all(chunk.X.data == np.round(chunk.X.data)))
                non_negative = non_negative and bool(chunk.X.data.min() >= 0)
            counts = np.diff(chunk.Y.indptr)
            if counts.size:
                labels_per_document = [min(labels_per_document[0], counts.min()),
                                       max(labels_per_document[1], counts.max())]
            pending.append(chunk)
            n_pending += chunk.n_documents
            while n_pending >= shard_documents:
                flush(shard_documents)
        if n_pending:
            flush(n_pending)
        if not shards:
            raise MlnbError(f"{source.name}: no documents to convert")
        feature_names = getattr(source, "feature_names", None)
        if feature_names is not None:
            _write_json(out / FEATURE_NAMES, list(feature_names))
        manifest = {
            "format": FORMAT, "version": VERSION, "name": source.name, "description": description or "",
            "n_features": int(source.n_features), "category_names": list(map(str, source.category_names)),
            "n_documents": int(sum(s["n_documents"] for s in shards)), "nnz": int(sum(s["nnz"] for s in shards)),
            "feature_values": "integer" if integer_values else "real", "non_negative_values": non_negative,
            "labels_per_document": [int(labels_per_document[0]), int(labels_per_document[1])],
            "feature_names": FEATURE_NAMES if feature_names is not None else None,
            "dtypes": ARRAYS, "shards": shards}
        _write_json(out / MANIFEST, manifest)
    finally:
        for partial in out.glob(f".*.partial-{os.getpid()}"):
            shutil.rmtree(partial) if partial.is_dir() else partial.unlink()
    progress.log(f"wrote {len(shards)} shard(s), {manifest['n_documents']:,} documents, to {out}")
    return out / MANIFEST


# -- reading -----------------------------------------------------------------------------------------
def _manifest_error(path: Path, what: str) -> MlnbError:
    return MlnbError(f"{path}: {what}")


def _expect(manifest: dict, key: str, kind, path: Path):
    value = manifest.get(key)
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _manifest_error(path, f"key {key!r} is missing or not a {names} (not a manifest written by "
                                    "mlnb convert?)")
    return value


def read_manifest(folder) -> dict:
    """The manifest of a shard folder, checked key by key (JSON only: reading it runs no code)."""
    folder = existing_folder(folder, "binary shards")
    path = folder / MANIFEST
    if not path.is_file():
        partial = any(folder.glob("shard-*"))
        raise MlnbError(f"{path}: no such file" + ("; the shards are there but the manifest is not: a conversion "
                                                   "that did not finish?" if partial else
                                                   " (not a folder written by mlnb convert)"))
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MlnbError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _manifest_error(path, f"not an {FORMAT} manifest")
    version = _expect(manifest, "version", int, path)
    if version > VERSION:
        raise _manifest_error(path, f"format version {version} is newer than this mlnb reads ({VERSION}); "
                                    "upgrade mlnb")
    n_features = _expect(manifest, "n_features", int, path)
    if n_features < 1:
        raise _manifest_error(path, f"n_features = {n_features}; expected at least 1")
    names = _expect(manifest, "category_names", list, path)
    if not names or not all(isinstance(n, str) for n in names) or len(set(names)) != len(names):
        raise _manifest_error(path, "category_names must be a non-empty list of distinct strings")
    if _expect(manifest, "dtypes", dict, path) != ARRAYS:
        raise _manifest_error(path, f"dtypes {manifest['dtypes']} differ from the ones this mlnb reads ({ARRAYS})")
    shards = _expect(manifest, "shards", list, path)
    if not shards:
        raise _manifest_error(path, "lists no shards")
    previous_last = -1
    for number, shard in enumerate(shards):
        where = path if not isinstance(shard, dict) else folder / str(shard.get("name"))
        if not isinstance(shard, dict):
            raise _manifest_error(path, f"shard entry {number} is not an object")
        for key in ("name",):
            _expect(shard, key, str, where)
        if shard["name"] != shard_name(number):
            raise _manifest_error(path, f"shard entry {number} is named {shard['name']!r}; expected "
                                        f"{shard_name(number)!r}")
        for key in ("n_documents", "nnz", "n_labels", "first_id", "last_id"):
            if _expect(shard, key, int, where) < 0:
                raise _manifest_error(path, f"{shard['name']}: {key} is negative")
        if shard["n_documents"] < 1 or shard["first_id"] <= previous_last or shard["last_id"] < shard["first_id"]:
            raise _manifest_error(path, f"{shard['name']}: inconsistent document count or ids")
        previous_last = shard["last_id"]
        for key in ("bytes", "crc32"):
            entry = _expect(shard, key, dict, where)
            if set(entry) != set(ARRAYS) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                    for v in entry.values()):
                raise _manifest_error(path, f"{shard['name']}: {key} must give an integer for each of "
                                            f"{', '.join(ARRAYS)}")
    return manifest


def _load_array(shard: Path, key: str, expected_shape: tuple, expected_bytes: int) -> np.ndarray:
    """Map one array of a shard, refusing it when missing, truncated or unlike the manifest."""
    path = shard / f"{key}.npy"
    if not path.is_file():
        raise MlnbError(f"{path}: missing shard file (the manifest lists it)")
    size = path.stat().st_size
    if size != expected_bytes:
        what = "truncated" if size < expected_bytes else "longer than written"
        raise MlnbError(f"{path}: {what}: {size} bytes, the manifest says {expected_bytes}")
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise MlnbError(f"{path}: not a readable .npy array ({error})") from None
    if array.dtype != np.dtype(ARRAYS[key]) or array.shape != expected_shape:
        raise MlnbError(f"{path}: holds {array.dtype} {array.shape}; the manifest says {ARRAYS[key]} "
                        f"{expected_shape}")
    return array


@dataclass
class _Shard:
    X_indptr: np.ndarray
    X_indices: np.ndarray
    X_data: np.ndarray
    Y_indptr: np.ndarray
    Y_indices: np.ndarray
    ids: np.ndarray


class ShardSource(ChunkSource):
    """The documents of a shard folder (written by :func:`convert`), in chunks.

    Partitions: one per shard, or row ranges of at most ``partition_documents`` documents
    (a Dask worker then maps only its own rows). Ids are those stored in the shards (the
    source's ids at conversion), so the hash split of a converted corpus is the split of the
    original. ``verify=True`` checks every file's CRC-32 against the manifest before reading
    a shard (one extra read of the shard).
    """

    def __init__(self, folder, partition_documents: int | None = None, verify: bool = False):
        self.folder = str(existing_folder(folder, "binary shards"))
        self.manifest = read_manifest(self.folder)
        self.n_features = self.manifest["n_features"]
        self.category_names = list(self.manifest["category_names"])
        self.feature_names = self._feature_names()
        self.name = str(self.manifest.get("name") or Path(self.folder).name)
        self.partition_documents = None if partition_documents is None else check_chunk_size(partition_documents)
        self.verify = verify

    def _feature_names(self) -> list | None:
        if not self.manifest.get("feature_names"):
            return None
        path = Path(self.folder) / FEATURE_NAMES
        try:
            names = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise MlnbError(f"{path}: missing (the manifest names it)") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise MlnbError(f"{path}: not valid JSON ({error})") from None
        if not isinstance(names, list) or len(names) != self.n_features:
            raise MlnbError(f"{path}: expected a list of {self.n_features} feature names")
        return names

    @property
    def n_documents(self) -> int:
        return int(sum(s["n_documents"] for s in self.manifest["shards"]))

    def partitions(self) -> list[Partition]:
        partitions = []
        for shard in self.manifest["shards"]:
            n = shard["n_documents"]
            step = self.partition_documents or n
            for start in range(0, n, step):
                stop = min(start + step, n)
                partitions.append(Partition(path=str(Path(self.folder) / shard["name"]), number=len(partitions),
                                            first_id=shard["first_id"], start=start, stop=stop,
                                            n_documents=stop - start))
        return partitions

    def _open(self, path: Path) -> tuple[_Shard, dict]:
        entries = {s["name"]: s for s in self.manifest["shards"]}
        if path.name not in entries or path.parent != Path(self.folder):
            raise MlnbError(f"{path}: not a shard of {self.folder}")
        entry = entries[path.name]
        if not path.is_dir():
            raise MlnbError(f"{path}: missing shard (the manifest lists it)")
        m, nnz, n_labels = entry["n_documents"], entry["nnz"], entry["n_labels"]
        shapes = {"X_indptr": (m + 1,), "X_indices": (nnz,), "X_data": (nnz,), "Y_indptr": (m + 1,),
                  "Y_indices": (n_labels,), "ids": (m,)}
        if self.verify:
            for key in ARRAYS:
                file = path / f"{key}.npy"
                if file.is_file() and _crc32(file) != entry["crc32"][key]:
                    raise MlnbError(f"{file}: corrupt: its CRC-32 differs from the manifest's")
        shard = _Shard(**{key: _load_array(path, key, shapes[key], entry["bytes"][key]) for key in ARRAYS})
        for key, total in (("X_indptr", nnz), ("Y_indptr", n_labels)):
            ends = getattr(shard, key)[[0, -1]]
            if ends[0] != 0 or ends[1] != total:
                raise MlnbError(f"{path / key}.npy: starts at {ends[0]} and ends at {ends[1]}; expected 0 and "
                                f"{total} (inconsistent with the manifest)")
        if shard.ids[0] != entry["first_id"] or shard.ids[-1] != entry["last_id"]:
            raise MlnbError(f"{path / 'ids.npy'}: ids {shard.ids[0]}..{shard.ids[-1]} differ from the manifest's "
                            f"{entry['first_id']}..{entry['last_id']}")
        return shard, entry

    def read(self, partition: Partition, chunk_size: int) -> Iterator[Chunk]:
        chunk_size = check_chunk_size(chunk_size)
        path = Path(partition.path)
        shard, entry = self._open(path)
        stop = entry["n_documents"] if partition.stop is None else partition.stop
        if not 0 <= partition.start < stop <= entry["n_documents"]:
            raise MlnbError(f"{path}: documents {partition.start}..{stop} are not within its "
                            f"{entry['n_documents']} documents")
        for a in range(partition.start, stop, chunk_size):
            b = min(a + chunk_size, stop)
            yield self._chunk(shard, a, b, path)

    def _chunk(self, shard: _Shard, a: int, b: int, path: Path) -> Chunk:
        m = b - a
        X = _csr_rows(shard.X_indptr, shard.X_indices, shard.X_data, a, b, self.n_features, path, "X")
        Y = _csr_rows(shard.Y_indptr, shard.Y_indices, None, a, b, self.n_categories, path, "Y")
        ids = np.array(shard.ids[a:b])
        if m > 1 and not np.all(ids[1:] > ids[:-1]):
            raise MlnbError(f"{path / 'ids.npy'}: ids do not increase within rows {a + 1}..{b}: corrupt shard")
        return make_chunk(X, Y, ids, str(path), a + 1)


def _csr_rows(indptr, indices, data, a: int, b: int, width: int, path: Path, what: str) -> sp.csr_matrix:
    """Rows a .. b of a mapped CSR as a matrix of its own, after checking its structure (a corrupt
    file must give one line, not a wrong matrix or a crash)."""
    pointers = np.array(indptr[a:b + 1])
    if np.any(np.diff(pointers) < 0):
        raise MlnbError(f"{path / what}_indptr.npy: decreases within rows {a + 1}..{b}: corrupt shard")
    first, last = int(pointers[0]), int(pointers[-1])
    columns = np.array(indices[first:last])
    if columns.size:
        if columns.min() < 0 or columns.max() >= width:
            raise MlnbError(f"{path / what}_indices.npy: a column index outside 0..{width - 1} within rows "
                            f"{a + 1}..{b}: corrupt shard")
        local = pointers - first
        increasing = np.diff(columns) > 0
        row_starts = local[1:-1][(local[1:-1] > 0) & (local[1:-1] < columns.size)]
        increasing[row_starts - 1] = True  # a new row may start lower
        if not increasing.all():
            raise MlnbError(f"{path / what}_indices.npy: column indices not increasing within a row among rows "
                            f"{a + 1}..{b}: corrupt shard")
    values = np.ones(columns.size, dtype=np.int8) if data is None else np.array(data[first:last])
    matrix = sp.csr_matrix((values, columns, pointers - first), shape=(b - a, width))
    matrix.has_sorted_indices = True
    return matrix


def shard_sources(path, test_path=None, *, seed: int = 0, test_fraction: float = 0.5,
                  partition_documents: int | None = None) -> tuple[ChunkSource, ChunkSource]:
    """(train, test) sources of shard folders: ``test_path`` is the test part, else a seeded hash split
    of the stored ids of ``path``'s documents."""
    train = ShardSource(path, partition_documents)
    test = ShardSource(test_path, partition_documents) if test_path else None
    return split_source(train, seed, test_fraction, test)
