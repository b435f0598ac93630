"""The bounds of every size that sizes an allocation, whether a config key or a data file sets it.

Re-exported by :mod:`mlnb.data.registry` (the config keys' bounds) and applied to the sizes that data
files set by :func:`mlnb.budget.check_data_sizes`. Imports nothing, so that both may import it.
"""

# Upper bounds of the sizes that size an allocation: far above any real corpus (RCV1: 804,414
# documents, 47,236 features, 103 categories), far below what would end in a MemoryError before a
# word of output. What a run needs within them is estimated by mlnb.budget before any data is read.
MAX_DOCUMENTS = 10**9
MAX_FEATURES = 2**31 - 1  # scipy's int32 column indices
MAX_CATEGORIES = 10**6
#: the longest line a reader holds (an svmlight document, a CSV/TSV record, a JSON-lines object): a
#: document of a million features is ~15 MB; a longer line is refused before it is held whole
MAX_LINE_BYTES = 2**28
