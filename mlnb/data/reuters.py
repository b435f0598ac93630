"""Reuters-21578, Distribution 1.0: the original SGML files and the ModApte split.

The collection is 22 Latin-1 files, ``reut2-000.sgm`` ... ``reut2-021.sgm``
(1,000 stories each, 578 in the last), each a ``<!DOCTYPE ...>`` line followed
by ``<REUTERS ...> ... </REUTERS>`` elements. The ``<REUTERS>`` tag carries the
attributes TOPICS (YES / NO / BYPASS: whether the story had topics *in the
older Reuters-22173 data*, used only to define splits), LEWISSPLIT (TRAIN /
TEST / NOT-USED), CGISPLIT, OLDID and NEWID. Inside, ``<TOPICS>`` lists the
topic categories as ``<D>name</D>`` and ``<TEXT>`` holds the story, usually as
``<TITLE>``, ``<DATELINE>`` and ``<BODY>``; stories with ``TYPE="BRIEF"`` have
only a title (and the placeholder "Blah blah blah."), ``TYPE="UNPROC"`` ones
only loose text. Literal ``<`` and ``&`` in the text are written ``&lt;`` and
``&amp;``, and the wire service's control characters as ``&#2;``, ``&#3;`` ...

The ModApte split (README.txt, section VIII.B): training = TOPICS="YES" and
LEWISSPLIT="TRAIN" (9,603 stories), test = TOPICS="YES" and LEWISSPLIT="TEST"
(3,299). The usual benchmark ("ModApte-90") then keeps the 90 topics with at
least one training and one test story and the stories with at least one of
them: 7,770 training / 3,019 test documents from these files (the usually quoted ApteMod
count is 7,769 training). A document's text is its title, a newline
and its body, counted by :func:`mlnb.data.text.vectorize_texts` with a vocabulary
from the training texts only.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, replace
from itertools import chain
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from mlnb.data.dataset import Dataset
from mlnb.data.text import TextOptions, vectorize_texts
from mlnb.data.validate import existing_file, existing_folder
from mlnb.errors import MlnbError

SPLITS = ("modapte",)
#: the report's sentence for the ModApte split (``Dataset.split_rule``)
SPLIT_RULE = "the ModApte split (LEWISSPLIT TRAIN / TEST of the TOPICS=\"YES\" stories)"

# The opening tag must end on its own line; a line that starts one but never
# closes it (a file cut mid-tag) is caught by the missing ">".
_REUTERS_TAG = re.compile(r"<REUTERS\b([^>\n]*)(>?)|</REUTERS>")
_ATTRIBUTE = re.compile(r"""([A-Za-z][\w.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""")
_TOPICS = re.compile(r"<TOPICS\b[^>]*>(.*?)</TOPICS>", re.S)
_D = re.compile(r"<D>(.*?)</D>", re.S)
_TEXT = re.compile(r"<TEXT\b[^>]*>(.*?)</TEXT>", re.S)
_TITLE = re.compile(r"<TITLE>(.*?)</TITLE>", re.S)
_BODY = re.compile(r"<BODY>(.*?)</BODY>", re.S)
_NON_BODY = re.compile(r"<(TITLE|DATELINE|AUTHOR)>.*?</\1>", re.S)
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
# html.unescape drops references to control characters (&#2; &#3; ...), but
# raw control bytes (a \r, a form feed) would pass through: keep only tab and newline.
_CONTROL = {code: None for code in chain(range(0x00, 0x20), range(0x7F, 0xA0)) if code not in (0x09, 0x0A)}


@dataclass(frozen=True)
class ReutersDocument:
    """One ``<REUTERS>`` element.

    Attributes
    ----------
    newid : int
        The NEWID attribute (1 ... 21578, in chronological order).
    lewissplit : str
        "TRAIN", "TEST" or "NOT-USED".
    topics_attr : str
        The TOPICS attribute, "YES", "NO" or "BYPASS" (not whether ``topics`` is empty).
    topics : tuple of str
        Topic names from the ``<TOPICS>`` element, in file order.
    title, body : str
        Decoded text of ``<TITLE>`` and ``<BODY>``; without ``<BODY>`` the body is
        whatever loose text ``<TEXT>`` holds.
    """

    newid: int
    lewissplit: str
    topics_attr: str
    topics: tuple
    title: str
    body: str

    @property
    def text(self) -> str:
        """Title and body, the text that gets vectorized."""
        return self.title + "\n" + self.body


def _clean(fragment: str) -> str:
    """Markup-free, entity-decoded text without control characters."""
    return html.unescape(_TAG.sub(" ", fragment)).translate(_CONTROL).strip()


def _attributes(tag_text: str) -> dict:
    return {m.group(1).upper(): next(v for v in m.group(2, 3, 4) if v is not None)
            for m in _ATTRIBUTE.finditer(tag_text)}


def _elements(text: str, path: Path):
    """Yield (attributes, content, line) for each ``<REUTERS>`` element of a file."""
    opened, opened_line = None, 0
    line, counted_to = 1, 0  # lines are counted incrementally: recounting from 0 is quadratic
    for match in _REUTERS_TAG.finditer(text):
        line += text.count("\n", counted_to, match.start())
        counted_to = match.start()
        if match.group(0) == "</REUTERS>":
            if opened is None:
                raise MlnbError(f"{path}:{line}: </REUTERS> without an opening <REUTERS> tag before it")
            yield opened.group(1), text[opened.end():match.start()], opened_line
            opened = None
            continue
        if opened is not None:  # a second opening tag: the first element was cut short
            break
        if not match.group(2):
            raise MlnbError(f"{path}:{line}: expected '>' to end the <REUTERS ...> tag on its line")
        opened, opened_line = match, line
    if opened is not None:
        raise MlnbError(f"{path}:{opened_line}: <REUTERS> opened here is not closed")


def _document(attributes_text: str, content: str, path: Path, line: int) -> ReutersDocument:
    attributes = _attributes(attributes_text)
    newid = attributes.get("NEWID")
    if newid is None:
        raise MlnbError(f"{path}:{line}: expected a NEWID attribute in the <REUTERS> tag")
    if not (newid.strip().isascii() and newid.strip().isdigit()):
        raise MlnbError(f"{path}:{line}: expected NEWID to be a non-negative integer, got {newid!r}")
    if "LEWISSPLIT" not in attributes:
        raise MlnbError(f"{path}:{line}: expected a LEWISSPLIT attribute in the <REUTERS> tag")
    topics_attr = attributes.get("TOPICS", "YES").upper()  # YES is lewis.dtd's default
    if topics_attr not in ("YES", "NO", "BYPASS"):
        raise MlnbError(f"{path}:{line}: expected TOPICS to be YES, NO or BYPASS, got {topics_attr!r}")
    topics_match = _TOPICS.search(content)
    topics = tuple(filter(None, map(_clean, _D.findall(topics_match.group(1))))) if topics_match else ()
    text_match = _TEXT.search(content)
    story = text_match.group(1) if text_match else ""
    title_match, body_match = _TITLE.search(story), _BODY.search(story)
    # BRIEF and UNPROC stories have no <BODY>: their text is loose inside <TEXT>.
    body = body_match.group(1) if body_match else _NON_BODY.sub(" ", story)
    return ReutersDocument(newid=int(newid), lewissplit=attributes["LEWISSPLIT"].strip().upper(),
                           topics_attr=topics_attr, topics=topics,
                           title=_clean(title_match.group(1)) if title_match else "", body=_clean(body))


def _sgml_files(folder) -> list[Path]:
    folder = existing_folder(folder, "Reuters-21578 data")
    paths = sorted(folder.glob("reut2-*.sgm"))
    if not paths:
        raise MlnbError(f"{folder}: no reut2-*.sgm files (expected the Reuters-21578 SGML files)")
    return paths


def read_reuters_file(path) -> list[ReutersDocument]:
    """Every ``<REUTERS>`` element of one ``.sgm`` file, in file order.

    Raises
    ------
    MlnbError
        When the file cannot be read, holds no ``<REUTERS>`` element, an element
        is not closed, or a tag lacks a valid NEWID or LEWISSPLIT.
    """
    path = existing_file(path, "Reuters-21578 SGML")
    try:
        text = path.read_text(encoding="latin-1")  # every byte decodes: errors are structural
    except OSError as error:
        raise MlnbError(f"{path}: cannot read ({error.strerror or error})") from None
    documents = [_document(attributes, content, path, line)
                 for attributes, content, line in _elements(text, path)]
    if not documents:
        raise MlnbError(f"{path}: no <REUTERS> documents")
    return documents


def read_reuters21578(folder) -> list[ReutersDocument]:
    """Every ``<REUTERS>`` element of ``folder/reut2-*.sgm``, in file order.

    Parameters
    ----------
    folder : str or path-like
        The Reuters-21578 distribution folder.

    Returns
    -------
    list of ReutersDocument
        21,578 documents for the full distribution.
    """
    return [document for path in _sgml_files(folder) for document in read_reuters_file(path)]


def split_modapte(documents, min_train_per_topic: int = 1, min_test_per_topic: int = 1):
    """The ModApte training and test documents and the topics kept.

    Parameters
    ----------
    documents : list of ReutersDocument
    min_train_per_topic, min_test_per_topic : int
        Keep topics with at least this many training and test documents. When
        either is positive only documents with a kept topic remain; with both 0
        every TOPICS="YES" document of the split stays, even one without topics.

    Returns
    -------
    (train, test, topics) : list, list, sorted list of str
    """
    for label, value in (("min_train_per_topic", min_train_per_topic),
                         ("min_test_per_topic", min_test_per_topic)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise MlnbError(f"{label} must be a non-negative integer, got {value!r}")
    train = [d for d in documents if d.topics_attr == "YES" and d.lewissplit == "TRAIN"]
    test = [d for d in documents if d.topics_attr == "YES" and d.lewissplit == "TEST"]
    # A topic listed twice in one story still counts that story once.
    train_counts = Counter(chain.from_iterable(set(d.topics) for d in train))
    test_counts = Counter(chain.from_iterable(set(d.topics) for d in test))
    topics = sorted(t for t in train_counts.keys() | test_counts.keys()
                    if train_counts[t] >= min_train_per_topic and test_counts[t] >= min_test_per_topic)
    if min_train_per_topic or min_test_per_topic:
        kept = set(topics)
        train = [d for d in train if kept.intersection(d.topics)]
        test = [d for d in test if kept.intersection(d.topics)]
    return train, test, topics


def _label_matrix(documents, topics: list[str]) -> sp.csr_matrix:
    """0/1 CSR (documents × topics); topics not in the sorted ``topics`` are ignored."""
    lengths = np.fromiter((len(d.topics) for d in documents), dtype=np.int64, count=len(documents))
    flat = np.array(list(chain.from_iterable(d.topics for d in documents)), dtype=str)
    names = np.array(topics, dtype=str)
    columns = np.minimum(np.searchsorted(names, flat), names.size - 1)
    known = names[columns] == flat if flat.size else np.zeros(0, dtype=bool)
    rows = np.repeat(np.arange(len(documents)), lengths)
    Y = sp.csr_matrix((np.ones(int(known.sum()), dtype=np.int8), (rows[known], columns[known])),
                      shape=(len(documents), names.size))
    Y.sum_duplicates()
    Y.data[:] = 1
    return Y


def load_reuters21578(folder, split: str = "modapte", min_train_per_topic: int = 1,
                      min_test_per_topic: int = 1, text_options: TextOptions = TextOptions(),
                      name: str = "reuters21578") -> Dataset:
    """Reuters-21578 as a :class:`Dataset` on the ModApte split.

    Parameters
    ----------
    folder : str or path-like
        The folder with ``reut2-000.sgm`` ... ``reut2-021.sgm``.
    split : str
        Only "modapte".
    min_train_per_topic, min_test_per_topic : int
        See :func:`split_modapte`; 1 and 1 give the standard 90 topics.
    text_options : TextOptions
        How titles and bodies become counts.
    name : str
        The dataset's label in reports.

    Returns
    -------
    Dataset
        Training rows first, then test rows; categories are the topic names, sorted; ids are the
        stories' NEWIDs.
    """
    if split not in SPLITS:
        raise MlnbError(f"unknown Reuters-21578 split {split!r}: expected one of {', '.join(SPLITS)}")
    train, test, topics = split_modapte(read_reuters21578(folder), min_train_per_topic,
                                        min_test_per_topic)
    restriction = (f"at least {min_train_per_topic} training and {min_test_per_topic} test "
                   "document(s) per topic")
    if not topics:
        raise MlnbError(f"{folder}: no ModApte topics left with {restriction}")
    if not train or not test:
        raise MlnbError(f"{folder}: no ModApte {'training' if not train else 'test'} documents left "
                        f"with {restriction}")
    counted = vectorize_texts([d.text for d in train], [d.text for d in test], text_options)
    dataset = Dataset.from_train_test(counted.X_train, _label_matrix(train, topics), counted.X_test,
                                      _label_matrix(test, topics), topics, counted.feature_names, name=name,
                                      ids=([d.newid for d in train], [d.newid for d in test]), split_rule=SPLIT_RULE)
    return replace(dataset, text_features=counted.text_features)
