"""The stages of the one study loop over a data source, whatever its size and engine.

    documents : training or evaluation documents — matrices in memory, or a source read in chunks
                (from disk, here or on Dask) — and the seeded hash rules that carve them
    fitting   : every model fitted from documents: ``fit`` in memory, or what its kind declares
                it learns from in a stream (counts that add, passes of minibatches)
    scoring   : every model's scores of documents, held in memory or spilled to disk
    tasks     : the per-partition functions an executor (``mlnb.backends``) runs: counts, passes, scores

``mlnb.study`` runs them in order (fit → score → decide → evaluate); nothing here compares a
model kind's or a source's name: each stage asks the component what it can do.
"""
