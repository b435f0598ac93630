"""``data.source = "svmlight"``: LIBSVM multilabel files, one or a glob of shards (:mod:`mlnb.data.svmlight`),
in memory or streamed (:class:`mlnb.data.stream.SvmlightSource`): the same reader, documents, ids and split."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import MAX_CATEGORIES, MAX_FEATURES, Request, SourceKind
from mlnb.data.splits import given_split_rule, hash_split_rule
from mlnb.options import option


@dataclass
class SvmlightConfig:
    path: str = option("", "LIBSVM multilabel file, or a glob pattern of shards (plain, .gz or .bz2); relative to the "
                       "working directory")
    test_path: str = option("", "optional separate test file (or glob); empty = a seeded hash split of `path`")
    n_features: int = option(0, "number of features; 0 = the largest index seen", min=0, max=MAX_FEATURES)
    index_base: int = option(1, "index of the first feature: 1 (LIBSVM) or 0", choices=(0, 1))
    n_categories: int = option(0, "number of categories; 0 = largest label id + 1", min=0, max=MAX_CATEGORIES)
    category_names_path: str = option("", "optional file with one category name per line, in id order")


def _options(s: SvmlightConfig) -> dict:
    return dict(n_features=s.n_features or None, index_base=s.index_base, n_categories=s.n_categories or None,
                category_names=s.category_names_path or None)


def load(s: SvmlightConfig, request: Request):
    from mlnb.data.svmlight import load_svmlight_dataset

    return load_svmlight_dataset(s.path, test_path=s.test_path or None, test_fraction=request.test_fraction,
                                 seed=request.seed, **_options(s))


def open_streams(s: SvmlightConfig, request: Request):
    from mlnb.data.stream import svmlight_sources

    return svmlight_sources(s.path, s.test_path or None, seed=request.seed, test_fraction=request.test_fraction,
                            **_options(s))


def open_whole(s: SvmlightConfig, request: Request):
    from mlnb.data.stream import SvmlightSource, svmlight_sources

    if s.test_path:
        return svmlight_sources(s.path, s.test_path, **_options(s))
    return SvmlightSource(s.path, **_options(s)), None


def split(s: SvmlightConfig, request: Request) -> str:
    return given_split_rule("test file", s.test_path) if s.test_path else hash_split_rule(request.seed,
                                                                                          request.test_fraction)


SOURCE = SourceKind(name="svmlight", options=SvmlightConfig, load=load, open_streams=open_streams,
                    open_whole=open_whole, split=split, required=("path",),
                    help="LIBSVM multilabel files (`<labels> <index>:<value> ...`), one or a glob of shards",
                    files=lambda s: [p for p in (s.path, s.test_path) if p])
