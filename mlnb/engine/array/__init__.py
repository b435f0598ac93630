r"""The array engine: the study's hot stages written once against the array API, run by CuPy on a GPU.

    device       where it runs: the namespace pair (xp, xsp) — CuPy and cupyx.scipy.sparse on a GPU,
                 numpy and scipy.sparse for tests (``engine.device = "array-numpy"``)
    naive_bayes  counts Fᵀ = X̂ᵀ·Y by one sparse product; counts → W for the count event models
    logistic     the minibatch AdaGrad/SGD passes of ``mlnb.models.logistic``, dense on the device
    scoring      Z = Φ(X)·W + b, one sparse × dense product
    ranking      per-category AUC (midranks), ROC on a grid and lift, from one sort on the device
    fitting      which models of a study it fits (asked of their estimators and records, never
                 their names), and its one hook in the study (``mlnb.study.fitting``)
    model        the fitted model the study sees (``ArrayModel``): W and b on the device

Selected by ``[engine] device = "gpu"`` (``mlnb.config.EngineConfig``); the default, "cpu", never
imports this package's GPU side, and CuPy is an optional extra (``pip install 'mlnb[gpu]'``).
"""
