"""Data sources: each builds a :class:`Dataset` (X, Y, names, ids, split), or streams its chunks.

The registered sources, their options and the config's way in are in :mod:`mlnb.data.sources`.
"""

from mlnb._lazy import lazy_exports

# name -> its module, imported on first use (PEP 562): a study of one source should not import every
# other source's reader (the RCV1 and svmlight ones import scikit-learn's dataset loaders).
_EXPORTS = {"load_arff_dataset": "mlnb.data.arff", "Dataset": "mlnb.data.dataset", "hash_split": "mlnb.data.dataset",
            "load_lyrl2004": "mlnb.data.rcv1", "load_rcv1": "mlnb.data.rcv1", "load_reuters21578": "mlnb.data.reuters",
            "load_svmlight_dataset": "mlnb.data.svmlight", "read_svmlight": "mlnb.data.svmlight",
            "make_rcv1_like": "mlnb.data.synthetic", "load_text_dataset": "mlnb.data.text"}

__all__ = ["Dataset", "hash_split", "load_arff_dataset", "load_lyrl2004", "load_rcv1", "load_reuters21578",
           "load_svmlight_dataset", "load_text_dataset", "make_rcv1_like", "read_svmlight"]

__getattr__, __dir__ = lazy_exports("mlnb.data", _EXPORTS, globals())
