"""``data.source = "text"``: CSV, TSV or JSON-lines files of texts and labels (:mod:`mlnb.data.text`), in memory
or streamed (:class:`mlnb.data.stream.TextSource`): the same reader, documents, ids, split and vocabulary."""

from __future__ import annotations

from dataclasses import dataclass

from mlnb.data.registry import Request, SourceKind
from mlnb.data.splits import given_split_rule, hash_split_rule
from mlnb.options import option


@dataclass
class TextConfig:
    path: str = option("", "CSV, TSV or JSON-lines file (or glob of files; plain, .gz or .bz2) with one document "
                       "per row")
    test_path: str = option("", "optional separate test file (or glob); empty = a seeded hash split of `path`")
    format: str = option("auto", "file format; 'auto' = from the file suffix",
                         choices=("auto", "csv", "tsv", "jsonl"))
    header: bool = option(True, "CSV/TSV: the first row names the columns (else columns are '0', '1', ...)")
    text_column: str = option("text", "column (or JSON key) holding the text")
    label_column: str = option("label", "column (or JSON key) holding the label(s)")
    labels: str = option("single", "'single': one label per row; 'multi': a list of labels per row",
                         choices=("single", "multi"))
    label_separator: str = option(",", "multi: the separator of the labels in a CSV/TSV cell, e.g. ';' for "
                                  "\"sport;politics\" (JSON lists need none); labels that look split on the wrong "
                                  "one are refused, naming the one they seem to use")
    negative_labels: list[str] = option([], "labels that mean 'no category' (e.g. [\"ham\"] for spam)")
    encoding: str = option("utf-8", "text encoding of the file")
    check_labels: bool = option(True, "refuse labels that look mis-split (lists on another separator) or not "
                                "labels at all (most of 20 or more occurring in one document only)")


def reading(s: TextConfig):
    """The :class:`mlnb.data.text.TextReading` of the options."""
    from mlnb.data.text import TextReading

    return TextReading(format=s.format, header=s.header, text_column=s.text_column, label_column=s.label_column,
                       labels=s.labels, label_separator=s.label_separator, negative_labels=tuple(s.negative_labels),
                       encoding=s.encoding, check_labels=s.check_labels)


def load(s: TextConfig, request: Request):
    from mlnb.data.text import load_text_dataset

    return load_text_dataset(s.path, test_path=s.test_path or None, reading=reading(s),
                             text_options=request.text_options(), test_fraction=request.test_fraction,
                             seed=request.seed)


def open_streams(s: TextConfig, request: Request):
    from mlnb.data.stream import text_sources

    return text_sources(s.path, s.test_path or None, reading=reading(s), text_options=request.text_options(),
                        seed=request.seed, test_fraction=request.test_fraction)


def open_whole(s: TextConfig, request: Request):
    """With a test file, the pair; without, all documents as one source whose CountVectorizer vocabulary comes
    from all of them (a later hash split of converted shards then has test-only words as columns: use
    ``vectorizer = "hashing"``, or convert a train and a test file, to keep the rule "vocabulary from training
    documents only")."""
    from mlnb.data.stream import TextSource, text_sources

    if s.test_path:
        return text_sources(s.path, s.test_path, reading=reading(s), text_options=request.text_options())
    return TextSource(s.path, reading(s), request.text_options()), None


def split(s: TextConfig, request: Request) -> str:
    return given_split_rule("test file", s.test_path) if s.test_path else hash_split_rule(request.seed,
                                                                                          request.test_fraction)


SOURCE = SourceKind(name="text", options=TextConfig, load=load, open_streams=open_streams, open_whole=open_whole,
                    split=split, required=("path",), help="CSV, TSV or JSON-lines files of texts and their labels",
                    files=lambda s: [p for p in (s.path, s.test_path) if p], prunes_vocabulary=True)
