"""``data.source = "shards"``: a folder of binary shards written by ``mlnb convert`` (:mod:`mlnb.data.shards`),
read whole or streamed: the ids stored in the shards keep the hash split of the converted corpus."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import Request, SourceKind, unknown_shape
from mlnb.data.splits import given_split_rule, hash_split_rule
from mlnb.options import option


@dataclass
class ShardsConfig:
    path: str = option("", "folder of binary shards with their manifest.json, written by `mlnb convert`")
    test_path: str = option("", "optional folder of test shards; empty = a seeded hash split of `path`")
    verify: bool = option(True, "check every shard file's CRC-32 against the manifest when the shard is first "
                          "opened (one extra read of the shards, once per process)")


def _whole(source):
    """(X, Y, ids) of every document of a shard source."""
    from mlnb.budget import check_data_sizes
    from mlnb.data.shards import MANIFEST
    from mlnb.data.stream import concatenate
    from mlnb.errors import MlnbError

    check_data_sizes(f"{source.folder}/{MANIFEST}", n_features=source.n_features, n_categories=source.n_categories,
                     nnz=int(source.manifest["nnz"]) if isinstance(source.manifest.get("nnz"), int) else None,
                     n_documents=source.n_documents)
    chunks = list(source.chunks(1_000_000))
    if not chunks:
        raise MlnbError(f"{source.folder}: the shards hold no documents")
    return concatenate(chunks)


def load(s: ShardsConfig, request: Request):
    """The shards read whole: with a test folder, a given split; else the seeded hash split of the
    documents' ids, the very split a streaming study of the same shards makes."""
    from mlnb.data.dataset import Dataset
    from mlnb.data.shards import ShardSource

    train = ShardSource(s.path, verify=s.verify)
    X, Y, ids = _whole(train)
    if s.test_path:
        X_test, Y_test, test_ids = _whole(ShardSource(s.test_path, verify=s.verify))
        return Dataset.from_train_test(X, Y, X_test, Y_test, category_names=train.category_names,
                                       feature_names=train.feature_names, name=train.name, ids=(ids, test_ids),
                                       split_rule=split(s, request))
    return Dataset.from_arrays(X, Y, train.category_names, train.feature_names, test_fraction=request.test_fraction,
                               seed=request.seed, name=train.name, ids=ids)


def open_streams(s: ShardsConfig, request: Request):
    from mlnb.data.shards import shard_sources

    return shard_sources(s.path, s.test_path or None, seed=request.seed, test_fraction=request.test_fraction,
                         verify=s.verify)


def open_whole(s: ShardsConfig, request: Request):
    from mlnb.data.shards import ShardSource

    return (ShardSource(s.path, verify=s.verify),
            ShardSource(s.test_path, verify=s.verify) if s.test_path else None)


def split(s: ShardsConfig, request: Request) -> str:
    return (given_split_rule("test shards", s.test_path) if s.test_path else
            hash_split_rule(request.seed, request.test_fraction))


def detect(look):
    """``mlnb init``: a folder with a ``manifest.json`` (and a ``test/`` one beside: the test part)."""
    from mlnb.data.detect import Detected, from_chunks
    from mlnb.data.shards import MANIFEST, ShardSource

    path = look.path
    if not look.is_folder or not (path / MANIFEST).is_file():
        return None
    options = {"path": str(path)}
    source = ShardSource(path)
    test = None
    if (path / "test" / MANIFEST).is_file():
        options["test_path"] = str(path / "test")
        test = ShardSource(path / "test")
    found = Detected("shards", options, "binary shards written by `mlnb convert`")
    return from_chunks(found, (source, test), source.category_names)


SOURCE = SourceKind(name="shards", options=ShardsConfig, load=load, open_streams=open_streams, open_whole=open_whole,
                    split=split, required=("path",), help="binary shards written by `mlnb convert` (memory-mapped)",
                    files=lambda s: [p for p in (s.path, s.test_path) if p],
                    labels="either", shape=unknown_shape, detect=detect, detect_order=10)
