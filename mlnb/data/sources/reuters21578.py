"""``data.source = "reuters21578"``: Reuters-21578's SGML files on the ModApte split (:mod:`mlnb.data.reuters`)."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import Request, SourceKind, hashed_shape
from mlnb.data.sources.text import text_options_of
from mlnb.options import option


@dataclass
class Reuters21578Config:
    folder: str = option("", "folder with reut2-000.sgm ... reut2-021.sgm")
    min_train_per_topic: int = option(1, "keep topics with at least this many ModApte training documents "
                                      "(1 and 1: the standard 90 topics)", min=0)
    min_test_per_topic: int = option(1, "... and at least this many test documents", min=0)


def load(s: Reuters21578Config, request: Request):
    from mlnb.data.reuters import load_reuters21578

    return load_reuters21578(s.folder, min_train_per_topic=s.min_train_per_topic,
                             min_test_per_topic=s.min_test_per_topic, text_options=text_options_of(request))


def split(s: Reuters21578Config, request: Request) -> str:
    from mlnb.data.reuters import SPLIT_RULE

    return SPLIT_RULE


SOURCE = SourceKind(name="reuters21578", options=Reuters21578Config, load=load, split=split, required=("folder",),
                    labels="multi", shape=hashed_shape, help="Reuters-21578 news stories (SGML) on the ModApte split")
