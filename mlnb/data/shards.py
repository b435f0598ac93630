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
shard folder never runs code. Every size the manifest states (documents, features, categories, the
JSON itself) goes through :func:`mlnb.budget.check_data_sizes` when it is opened, and each .npy header
is read alone and checked against the manifest (dtype, shape, file size) before a file is mapped, so
no size written in a shard folder sizes an allocation unchecked. A missing, truncated or inconsistent
shard file is one MlnbError line naming it; every chunk's structure (index ranges, order) is checked
before use, and its values go through ``validate.check_features``.

Checksums: by default (``verify=True``; ``data.shards.verify``) every file of a shard is checked
against the manifest's CRC-32 when a source first opens that shard (once per shard per source object,
so once per process), before it is mapped: a file changed since conversion, even to valid values
that no structure check can see, is refused. Cost: the first pass over the shards reads each file
once more, later passes of the same source nothing extra (measured by experiments/bench_shards.py);
from a cold disk the verification read also warms the cache that the mapped reads then use.

Writing never loses data: a conversion writes everything (train shards, ``test/``, manifests last)
into a new staging folder beside the output (``.NAME.partial-PID-RANDOM``), which replaces the output
folder only once complete (an atomic exchange of the two folders where the system has one,
``renameat2``); the earlier conversion is removed only then, without following symbolic links. An
output folder that is or contains an input, or that holds anything a conversion does not write (a
symbolic link, a user's file), is refused before anything is read; a lock file beside the output
(``.NAME.lock``) refuses a second conversion into it while one runs; an unwritable or full folder
is one line naming the file.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import secrets
import shutil
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb import progress
from mlnb._kernels.jit import map_threads, worker_threads
from mlnb.budget import check_data_sizes, human
from mlnb.data.stream import (
    Chunk,
    ChunkSource,
    Partition,
    check_chunk_size,
    make_chunk,
    split_source,
    track_chunks,
)
from mlnb.data.regular import check_regular
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
#: bytes of a shard file that one thread reads and checksums at a time (the pieces' CRCs are then combined)
CRC_PIECE_BYTES = 1 << 23


def _crc32(path: Path) -> int:
    """zlib's CRC-32 of the file. A large file is read in pieces of ``CRC_PIECE_BYTES`` on a thread
    pool (``os.pread`` and ``zlib.crc32`` let other threads run), the first piece taking the
    remainder, and the pieces' CRCs are combined: the same number as one pass (a 10M-document
    corpus is 6 GB of shards, too much for one core; measured by experiments/bench_scale.py)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= CRC_PIECE_BYTES or worker_threads() <= 1:
            crc = 0
            while block := f.read(2**22):
                crc = zlib.crc32(block, crc)
            return crc
        first = size % CRC_PIECE_BYTES or CRC_PIECE_BYTES
        pieces = [(0, first)] + [(start, CRC_PIECE_BYTES) for start in range(first, size, CRC_PIECE_BYTES)]
        crcs = map_threads(lambda piece: _piece_crc32(f.fileno(), *piece), pieces)
    crc, shift = crcs[0], _zeros_operator(CRC_PIECE_BYTES)
    for piece_crc in crcs[1:]:  # crc(A B) = M·crc(A) xor crc(B), M: len(B) zero bytes through the register
        crc = _gf2_times(shift, crc) ^ piece_crc
    return crc


def _piece_crc32(fd: int, start: int, size: int) -> int:
    block = os.pread(fd, size, start)
    if len(block) != size:
        raise OSError(errno.EIO, f"short read: {len(block)} of {size} bytes at byte {start}")
    return zlib.crc32(block)


def _gf2_times(matrix: list[int], vector: int) -> int:
    """The 32 × 32 matrix over GF(2) (a list of columns) times the vector (an int's 32 bits)."""
    total, column = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[column]
        vector >>= 1
        column += 1
    return total


_ZERO_OPERATORS: dict[int, list[int]] = {}


def _zeros_operator(length: int) -> list[int]:
    """M, the GF(2) matrix of ``length`` zero bytes passing through the CRC-32 register, so that
    crc(A B) = M·crc(A) xor crc(B) for every B of ``length`` bytes (zlib's crc32_combine: repeated
    squaring of the one-zero-bit operator); cached."""
    if length not in _ZERO_OPERATORS:
        one_bit = [0xEDB88320] + [1 << n for n in range(31)]  # the reflected polynomial's shift by one zero bit
        power = one_bit
        for _ in range(3):  # 8 zero bits: one zero byte
            power = [_gf2_times(power, power[n]) for n in range(32)]
        result, remaining = None, length
        while remaining:
            if remaining & 1:
                result = power if result is None else [_gf2_times(power, result[n]) for n in range(32)]
            remaining >>= 1
            if remaining:
                power = [_gf2_times(power, power[n]) for n in range(32)]
        _ZERO_OPERATORS[length] = result or [1 << n for n in range(32)]
    return _ZERO_OPERATORS[length]


def _write_shard(folder: Path, number: int, X: sp.csr_matrix, Y: sp.csr_matrix, ids: np.ndarray) -> dict:
    """Write one shard into ``folder`` (the conversion's own staging folder); its manifest entry."""
    name = shard_name(number)
    final = folder / name
    final.mkdir()
    arrays = {"X_indptr": X.indptr, "X_indices": X.indices, "X_data": X.data, "Y_indptr": Y.indptr,
              "Y_indices": Y.indices, "ids": ids}
    entry = {"name": name, "n_documents": int(X.shape[0]), "nnz": int(X.nnz), "n_labels": int(Y.nnz),
             "first_id": int(ids[0]), "last_id": int(ids[-1]), "bytes": {}, "crc32": {}}
    _check_disk(folder, sum(np.asarray(a).size * np.dtype(ARRAYS[k]).itemsize + 128 for k, a in arrays.items()))
    for key, array in arrays.items():
        path = final / f"{key}.npy"
        np.save(path, np.ascontiguousarray(array, dtype=ARRAYS[key]), allow_pickle=False)
        entry["bytes"][key] = path.stat().st_size
        entry["crc32"][key] = _crc32(path)
    return entry


def _check_disk(folder: Path, n_bytes: int) -> None:
    """Refuse, before writing them, ``n_bytes`` that the file system of ``folder`` has no room for."""
    free = shutil.disk_usage(folder).free
    if n_bytes > free:
        raise MlnbError(f"{folder}: the next shard needs {human(n_bytes)} of disk, more than the {human(free)} free; "
                        "free some space or convert elsewhere")


def _write_json(path: Path, value) -> None:
    with open(path, "x", encoding="utf-8") as f:
        json.dump(value, f, indent=1)
        f.flush()
        os.fsync(f.fileno())


def _input_paths(source) -> list[Path]:
    """The files and folders that ``source`` (and the sources it wraps) reads."""
    found, seen = [], set()
    while source is not None and id(source) not in seen:
        seen.add(id(source))
        found += [Path(p) for p in getattr(source, "paths", None) or []]
        if getattr(source, "folder", None):
            found.append(Path(source.folder))
        source = getattr(source, "source", None)
    return found


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies within it (both resolved: symbolic links followed)."""
    path, folder = path.resolve(), folder.resolve()
    return path == folder or folder in path.parents


def _written_by_convert(folder: Path, prefix: str = "") -> str | None:
    """None when ``folder`` holds only what a conversion writes (so replacing it loses nothing else); else
    the first entry that is not (named for the message). Symbolic links are never followed."""
    for entry in sorted(folder.iterdir()):
        name = entry.name
        if entry.is_symlink():
            return f"the symbolic link {prefix}{name}"
        if name in (MANIFEST, FEATURE_NAMES) and entry.is_file():
            continue
        if entry.is_dir() and (name.startswith("shard-") and all(
                f.name.endswith(".npy") and f.is_file() and not f.is_symlink() for f in entry.iterdir())):
            continue
        if name == "test" and not prefix and entry.is_dir():
            inner = _written_by_convert(entry, "test/")
            if inner is None:
                continue
            return inner
        return f"{prefix}{name}"
    return None


def _check_out(out: Path, overwrite: bool, sources) -> None:
    """Refuse, before any document is read, an output folder that cannot be written or replaced safely."""
    for source in sources:
        for path in _input_paths(source):
            if _inside(path, out):
                raise MlnbError(f"{out}: the output folder is or contains the input {path}; convert into a new "
                                "folder (then move it)")
            if path.is_dir() and _inside(out, path):
                raise MlnbError(f"{out}: the output folder lies inside the input folder {path}; convert into a "
                                "folder outside it")
    if out.is_symlink():
        raise MlnbError(f"{out}: is a symbolic link; expected a folder for the shards (a new one, or with "
                        "--overwrite an earlier conversion)")
    if out.exists() and not out.is_dir():
        raise MlnbError(f"{out}: is a file; expected a folder for the shards")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise MlnbError(f"{out}: the folder is not empty; choose a new folder (or overwrite an earlier "
                            "conversion)")
        if not (out / MANIFEST).is_file() and not any(p.name.startswith("shard-") for p in out.iterdir()):
            raise MlnbError(f"{out}: not a shard folder (no {MANIFEST}); refusing to overwrite it")
        other = _written_by_convert(out)
        if other is not None:
            raise MlnbError(f"{out}: holds {other}, which mlnb convert does not write; refusing to replace the folder "
                            "(move it away first)")


def _lock(out: Path):
    """An exclusive lock on converting into ``out`` (a lock file beside it, removed at the end); one line
    when another conversion holds it."""
    import fcntl

    path = out.parent / f".{out.name}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise MlnbError(f"{out}: another mlnb convert is writing this folder (it holds {path}); wait for it "
                            "to finish") from None
        try:
            if os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                return path, fd
        except FileNotFoundError:
            pass
        os.close(fd)  # the holder removed it between our open and lock: take the new one


def _unlock(path: Path, fd: int) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
    os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE); False where that is not available."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(error, os.strerror(error), str(b))


def _swap_in(staging: Path, out: Path) -> None:
    """Put the complete ``staging`` folder at ``out``; an earlier folder at ``out`` is removed only once
    the new one is in place (without following any symbolic link in it)."""
    if not out.exists():
        os.rename(staging, out)
        return
    if _exchange(staging, out):
        old = staging  # the earlier conversion, now under the staging name
    else:
        old = out.parent / f"{staging.name}.old"
        os.rename(out, old)
        try:
            os.rename(staging, out)
        except OSError:
            os.rename(old, out)
            raise
    shutil.rmtree(old, ignore_errors=True)  # removes links, never what they point to


def convert(source: ChunkSource, out_folder, shard_documents: int = 100_000, overwrite: bool = False,
            description: str | None = None, test_source: ChunkSource | None = None) -> Path:
    """Write every document of ``source`` (any ChunkSource, in its order) as binary shards of
    ``shard_documents`` documents into ``out_folder`` (and those of ``test_source``, when given, into
    ``out_folder/test``); returns the manifest's path.

    The folder must not exist or be empty (``overwrite=True``: a folder holding only an earlier
    conversion is replaced); it may not be or contain an input. Memory: one shard's arrays (about 8
    bytes per non-zero). Atomic: everything is written into a new staging folder beside ``out_folder``
    (``.NAME.partial-PID-RANDOM``), which replaces it only once complete (an atomic exchange where the
    system has one); a failed or interrupted conversion leaves ``out_folder`` as it was. A lock file
    beside it refuses a second conversion into the same folder while one runs.
    """
    shard_documents = check_chunk_size(shard_documents, "shard_documents")
    out = Path(os.path.abspath(out_folder))
    sources = [source] + ([test_source] if test_source is not None else [])
    _check_out(out, overwrite, sources)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        lock = _lock(out)
    except OSError as error:
        raise _write_error(error, out) from None
    staging = out.parent / f".{out.name}.partial-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        _check_out(out, overwrite, sources)  # again, now that no other conversion can change it
        for stale in out.parent.glob(f".{glob.escape(out.name)}.partial-*"):  # of a killed conversion: the
            shutil.rmtree(stale) if stale.is_dir() and not stale.is_symlink() else stale.unlink()  # lock is ours
        staging.mkdir()
        manifest = _convert_into(source, staging, shard_documents, description)
        if test_source is not None:
            (staging / "test").mkdir()
            _convert_into(test_source, staging / "test", shard_documents, description)
        _swap_in(staging, out)
    except OSError as error:
        raise _write_error(error, out) from None
    finally:
        if staging.exists() or staging.is_symlink():
            shutil.rmtree(staging, ignore_errors=True)
        _unlock(*lock)
    progress.log(f"wrote {len(manifest['shards'])} shard(s), {manifest['n_documents']:,} documents, to {out}")
    return out / MANIFEST


def _write_error(error: OSError, out: Path) -> MlnbError:
    """One line for a folder that cannot be written (read-only, full, ...), naming the file."""
    where = error.filename or out
    reason = error.strerror or str(error)
    hint = {errno.ENOSPC: "; free some space or convert elsewhere", errno.EDQUOT: "; free some space",
            errno.EACCES: "; choose a folder you may write", errno.EPERM: "; choose a folder you may write",
            errno.EROFS: "; choose a writable file system"}.get(error.errno, "")
    return MlnbError(f"{where}: cannot write the shards ({reason}){hint}")


def _convert_into(source: ChunkSource, out: Path, shard_documents: int, description: str | None) -> dict:
    """Write the shards of ``source`` and, last, their manifest into the empty folder ``out``."""
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
    return manifest


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
    if not path.exists():
        partial = any(folder.glob("shard-*"))
        raise MlnbError(f"{path}: no such file" + ("; the shards are there but the manifest is not: a conversion "
                                                   "that did not finish?" if partial else
                                                   " (not a folder written by mlnb convert)"))
    check_regular(path, "the shards' manifest")
    try:
        # parsed JSON takes several times its bytes: through the budget before it is read
        check_data_sizes(str(path), extra_bytes=JSON_MEMORY_FACTOR * path.stat().st_size, what="parsing the manifest")
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MlnbError(f"{path}: not valid JSON ({error})") from None
    except RecursionError:
        raise MlnbError(f"{path}: not valid JSON (nested too deeply)") from None
    except OSError as error:
        raise MlnbError(f"{path}: cannot read the manifest ({error.strerror or error})") from None
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
    check_data_sizes(str(path), n_features=n_features, n_categories=len(names))
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
            if not 0 <= _expect(shard, key, int, where) < 2**63:
                raise _manifest_error(path, f"{shard['name']}: {key} = {shard[key]}; expected 0 ≤ {key} < 2^63")
        if shard["n_documents"] < 1 or shard["first_id"] <= previous_last or shard["last_id"] < shard["first_id"]:
            raise _manifest_error(path, f"{shard['name']}: inconsistent document count or ids")
        previous_last = shard["last_id"]
        if shard["nnz"] > shard["n_documents"] * n_features or shard["n_labels"] > shard["n_documents"] * len(names):
            raise _manifest_error(path, f"{shard['name']}: more stored values than documents × columns")
        for key in ("bytes", "crc32"):
            entry = _expect(shard, key, dict, where)
            if set(entry) != set(ARRAYS) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                    for v in entry.values()):
                raise _manifest_error(path, f"{shard['name']}: {key} must give an integer for each of "
                                            f"{', '.join(ARRAYS)}")
    n_documents = sum(shard["n_documents"] for shard in shards)
    check_data_sizes(str(path), n_documents=n_documents, n_features=n_features, n_categories=len(names))
    return manifest


#: memory that parsing a JSON file takes, per byte of the file (Python objects of its strings and numbers)
JSON_MEMORY_FACTOR = 10


def _check_file(path: Path, expected_bytes: int) -> None:
    """A shard file there, of the size the manifest gives."""
    try:
        if not path.exists():
            raise MlnbError(f"{path}: missing shard file (the manifest lists it)")
        check_regular(path, "a shard file")
        size = path.stat().st_size
    except OSError as error:
        raise MlnbError(f"{path}: cannot read the shard file ({error.strerror or error})") from None
    if size != expected_bytes:
        what = "truncated" if size < expected_bytes else "longer than written"
        raise MlnbError(f"{path}: {what}: {size} bytes, the manifest says {expected_bytes}")


def _check_header(path: Path, key: str, expected_shape: tuple, size: int) -> None:
    """The .npy header of ``path`` read alone (a bounded read) and checked against the manifest's dtype and
    shape, and against the file's size, before anything is mapped or allocated by the shape it claims."""
    fmt = np.lib.format
    try:
        with open(path, "rb") as f:
            version = fmt.read_magic(f)
            shape, fortran, dtype = (fmt.read_array_header_1_0(f) if version == (1, 0) else
                                     fmt.read_array_header_2_0(f))
            offset = f.tell()
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as error:
        raise MlnbError(f"{path}: not a readable .npy array ({error})") from None
    if dtype != np.dtype(ARRAYS[key]) or tuple(shape) != expected_shape or fortran:
        raise MlnbError(f"{path}: its header claims {dtype} {tuple(shape)}; the manifest says {ARRAYS[key]} "
                        f"{expected_shape}")
    if offset + int(np.prod(shape, dtype=object)) * dtype.itemsize != size:
        raise MlnbError(f"{path}: its header claims {dtype} {tuple(shape)}, which is not its {size} bytes")


def _load_array(shard: Path, key: str, expected_shape: tuple, expected_bytes: int) -> np.ndarray:
    """Map one array of a shard, refusing it when missing, truncated or unlike the manifest (its header
    checked first: a shape it claims never sizes an allocation)."""
    path = shard / f"{key}.npy"
    _check_file(path, expected_bytes)
    _check_header(path, key, expected_shape, expected_bytes)
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
    original. ``verify=True`` (the default) checks every file's CRC-32 against the manifest before
    a shard is first read by this source (one extra read of the shard, once; see the module docstring).
    """

    reads_row_ranges = True

    def __init__(self, folder, partition_documents: int | None = None, verify: bool = True):
        self.folder = str(existing_folder(folder, "binary shards"))
        self.manifest = read_manifest(self.folder)
        self.n_features = self.manifest["n_features"]
        self.category_names = list(self.manifest["category_names"])
        self.feature_names = self._feature_names()
        self.name = str(self.manifest.get("name") or Path(self.folder).name)
        self.partition_documents = None if partition_documents is None else check_chunk_size(partition_documents)
        self.verify = verify
        self._verified: set = set()  # shards whose CRC-32s this source checked (once each, per process)

    def _feature_names(self) -> list | None:
        if not self.manifest.get("feature_names"):
            return None
        path = Path(self.folder) / FEATURE_NAMES
        try:
            if path.exists():
                check_regular(path, "the shards' feature names")
            check_data_sizes(str(path), extra_bytes=JSON_MEMORY_FACTOR * path.stat().st_size,
                             what="parsing the feature names")
            names = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise MlnbError(f"{path}: missing (the manifest names it)") from None
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
            raise MlnbError(f"{path}: not valid JSON ({error})") from None
        except OSError as error:
            raise MlnbError(f"{path}: cannot read the feature names ({error.strerror or error})") from None
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
        if self.verify and path.name not in self._verified:
            for key in ARRAYS:
                file = path / f"{key}.npy"
                _check_file(file, entry["bytes"][key])
                try:
                    crc = _crc32(file)
                except OSError as error:
                    raise MlnbError(f"{file}: cannot read the shard file ({error.strerror or error})") from None
                if crc != entry["crc32"][key]:
                    raise MlnbError(f"{file}: corrupt: its CRC-32 differs from the manifest's (the file changed "
                                    "since mlnb convert wrote it)")
            self._verified.add(path.name)
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
    file must give one line, not a wrong matrix or a crash); copied and checked on every thread
    (``mlnb._kernels.csr.checked_row_range``)."""
    from mlnb._kernels.csr import checked_row_range  # (numba: imported when a shard is read, not with the sources)

    pointers, columns, values, problem = checked_row_range(indptr, indices, data, a, b, width)
    if problem == "decreasing":
        raise MlnbError(f"{path / what}_indptr.npy: decreases within rows {a + 1}..{b}: corrupt shard")
    if problem == "outside":
        raise MlnbError(f"{path / what}_indices.npy: a column index outside 0..{width - 1} within rows "
                        f"{a + 1}..{b}: corrupt shard")
    if problem == "unordered":
        raise MlnbError(f"{path / what}_indices.npy: column indices not increasing within a row among rows "
                        f"{a + 1}..{b}: corrupt shard")
    values = np.ones(columns.size, dtype=np.int8) if values is None else values
    matrix = sp.csr_matrix((values, columns, pointers), shape=(b - a, width))
    matrix.has_sorted_indices = True
    return matrix

def shard_sources(path, test_path=None, *, seed: int = 0, test_fraction: float = 0.5,
                  partition_documents: int | None = None, verify: bool = True) -> tuple[ChunkSource, ChunkSource]:
    """(train, test) sources of shard folders: ``test_path`` is the test part, else a seeded hash split
    of the stored ids of ``path``'s documents."""
    train = ShardSource(path, partition_documents, verify)
    test = ShardSource(test_path, partition_documents, verify) if test_path else None
    return split_source(train, seed, test_fraction, test)
