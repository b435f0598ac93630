"""Config ``[data]`` (with ``streaming = true``) -> the (train, test) chunk sources.

The streaming counterpart of :mod:`mlnb.data.sources`: the same keys mean the same things, and
a given ``test_path`` is the test part, else a seeded hash split of the document ids (so the
documents on each side differ from the in-memory loader's random permutation split, but every
run, chunk size and Dask partitioning with the same seed agrees).
"""

from __future__ import annotations

from mlnb.config import STREAMING_SOURCES, DataConfig, FeaturesConfig
from mlnb.data.sources import text_options
from mlnb.data.stream import (
    ChunkSource,
    SvmlightSource,
    TextReading,
    TextSource,
    svmlight_sources,
    text_sources,
)
from mlnb.errors import MlnbError


def _required(value: str, key: str, source: str) -> str:
    if not value:
        raise MlnbError(f"data.{key}: required when data.source = '{source}'")
    return value


def open_source(config: DataConfig, features: FeaturesConfig | None = None) -> tuple[ChunkSource, ChunkSource | None]:
    """The unsplit source of ``config`` and its test source (None without ``test_path``): what
    ``mlnb convert`` writes as shards. A text corpus with CountVectorizer takes its vocabulary from
    the training file (with a test file) or from all its documents (without one: a later hash split
    of the shards then has test-only words as columns; use ``vectorizer = "hashing"``, or convert
    a train and a test file, to keep the in-memory rule "vocabulary from training documents only")."""
    source = _streaming_source(config)
    features = features or FeaturesConfig()
    if source == "svmlight":
        s = config.svmlight
        if s.test_path:
            return svmlight_sources(_required(s.path, "svmlight.path", source), s.test_path, **_svmlight_options(s))
        return SvmlightSource(_required(s.path, "svmlight.path", source), **_svmlight_options(s)), None
    if source == "text":
        s = config.text
        path = _required(s.path, "text.path", source)
        if s.test_path:
            return text_sources(path, s.test_path, reading=_reading(s), text_options=text_options(features))
        return TextSource(path, _reading(s), text_options(features)), None
    from mlnb.data.shards import ShardSource

    s = config.shards
    return (ShardSource(_required(s.path, "shards.path", source)),
            ShardSource(s.test_path) if s.test_path else None)


def _streaming_source(config: DataConfig) -> str:
    if config.source not in STREAMING_SOURCES:
        raise MlnbError(f"data.streaming: data.source = '{config.source}' cannot be read in chunks; streaming "
                        f"sources are {', '.join(STREAMING_SOURCES)} (write other data as svmlight, or set "
                        "streaming = false)")
    return config.source


def _svmlight_options(s) -> dict:
    return dict(n_features=s.n_features or None, index_base=s.index_base, n_categories=s.n_categories or None,
                category_names=s.category_names_path or None)


def _reading(s) -> TextReading:
    return TextReading(format=s.format, header=s.header, text_column=s.text_column, label_column=s.label_column,
                       labels=s.labels, label_separator=s.label_separator, negative_labels=tuple(s.negative_labels),
                       encoding=s.encoding)


def open_streams(config: DataConfig, features: FeaturesConfig | None = None,
                 seed: int = 0) -> tuple[ChunkSource, ChunkSource]:
    """(train, test) chunk sources for ``config`` (data.streaming = true)."""
    source = _streaming_source(config)
    features = features or FeaturesConfig()
    if source == "svmlight":
        s = config.svmlight
        return svmlight_sources(_required(s.path, "svmlight.path", source), s.test_path or None,
                                seed=seed, test_fraction=config.test_fraction, **_svmlight_options(s))
    if source == "text":
        s = config.text
        return text_sources(_required(s.path, "text.path", source), s.test_path or None, reading=_reading(s),
                            text_options=text_options(features), seed=seed, test_fraction=config.test_fraction)
    from mlnb.data.shards import shard_sources

    s = config.shards
    return shard_sources(_required(s.path, "shards.path", source), s.test_path or None, seed=seed,
                         test_fraction=config.test_fraction)
