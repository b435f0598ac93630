r"""The array (device) side of the models: the study's hot stages written once against the array API, run by
CuPy on a GPU. Each model family keeps its device fit beside its CPU code; what they share lives here.

    device       where it runs: the namespace pair (xp, xsp) — CuPy and cupyx.scipy.sparse on a GPU,
                 numpy and scipy.sparse for tests (``engine.device = "array-numpy"``)
    fitting      the device a study fits on (``ArrayDevice``): it fits a model by its kind's
                 ``fit_on_device`` (``ModelKind``), never by the kind's name; its one hook in the study
                 is ``mlnb.study.fitting``
    model        the fitted model the study sees (``ArrayModel``): W and b on the device
    scoring      Z = Φ(X)·W + b, one sparse × dense product

The families' device fits: ``mlnb.models.naive_bayes.array`` (counts Fᵀ = X̂ᵀ·Y by one sparse product;
counts → W for the count event models) and ``mlnb.models.logistic.array`` (the minibatch AdaGrad/SGD
passes, dense on the device); per-category AUC, ROC and lift from one sort on the device are
``mlnb.metrics.array_ranking``.

Selected by ``[engine] device = "gpu"`` (``mlnb.config.EngineConfig``); the default, "cpu", never
imports CuPy, and CuPy is an optional extra (``pip install 'mlnb[gpu]'``).
"""
