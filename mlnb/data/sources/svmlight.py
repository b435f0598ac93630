"""``data.source = "svmlight"``: LIBSVM multilabel files, one or a glob of shards (:mod:`mlnb.data.svmlight`),
in memory or streamed (:class:`mlnb.data.stream.SvmlightSource`): the same reader, documents, ids and split."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import MAX_CATEGORIES, MAX_FEATURES, DataShape, Request, SourceKind
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


def shape(s: SvmlightConfig, data, features):
    """Only the sizes the options give (n_features, n_categories: 0 = set by the files)."""
    V, K = s.n_features or None, s.n_categories or None
    return (DataShape(None, None, V, K, None),
            {"n_features": f"data.svmlight.n_features = {V}", "n_categories": f"data.svmlight.n_categories = {K}"})


#: a line of LIBSVM multilabel data (``mlnb init`` tells the format by it when the suffix does not)
SVMLIGHT_LINE = r"^\s*(\d+(,\d+)*)?(\s+(qid:\S+\s+)?\d+:\S+)+\s*(#.*)?$"
SVMLIGHT_SUFFIXES = (".svm", ".svmlight", ".libsvm", ".lsvm")


def detect(look):
    """``mlnb init``: a file named ``.svm`` (``.svmlight``, ``.libsvm``, ``.lsvm``; maybe compressed) or whose
    first 200 lines are LIBSVM lines; a ``test`` file beside a ``train`` one is its test part, and a
    ``<name>.labels.txt`` (``.names``, ``.categories.txt``) its category names."""
    import re
    from pathlib import Path

    from mlnb.data.detect import Detected, from_chunks, partner
    from mlnb.data.stream import SvmlightSource, svmlight_sources

    if look.is_folder:
        return None
    path, name = look.path, look.path.name.lower()
    stem = name[:-3] if name.endswith(".gz") else name[:-4] if name.endswith(".bz2") else name
    lines = look.lines
    if not (stem.endswith(SVMLIGHT_SUFFIXES) or (lines and all(re.match(SVMLIGHT_LINE, line) for line in lines[:200]))):
        return None
    zero = any(re.search(r"\s0:", line) for line in lines)
    options = {"path": str(path)}
    if zero:
        options["index_base"] = 0
    test = partner(path, "train", "test")
    if test is not None:
        options["test_path"] = str(test)
    base = re.sub(r"\.(svm|svmlight|libsvm|lsvm|txt|dat)(\.gz|\.bz2)?$", "", str(path))
    for names in (f"{base}.labels.txt", f"{base}.names", f"{base}.categories.txt"):
        if Path(names).is_file():
            options["category_names_path"] = names
    kwargs = dict(index_base=0 if zero else 1, category_names=options.get("category_names_path"))
    if test is not None:
        train_source, test_source = svmlight_sources(path, test, **kwargs)
    else:
        train_source, test_source = SvmlightSource(path, **kwargs), None
    found = Detected("svmlight", options, f"svmlight (LIBSVM) file{'s' if test else ''} of feature values")
    return from_chunks(found, (train_source, test_source), train_source.category_names)


SOURCE = SourceKind(name="svmlight", options=SvmlightConfig, load=load, open_streams=open_streams,
                    open_whole=open_whole, split=split, required=("path",),
                    help="LIBSVM multilabel files (`<labels> <index>:<value> ...`), one or a glob of shards",
                    files=lambda s: [p for p in (s.path, s.test_path) if p],
                    labels="either", shape=shape, detect=detect, detect_order=40)
