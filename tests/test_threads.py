"""Every stage of a study gives the same bits whatever the number of threads (issue 26).

One script in fresh processes started with NUMBA_NUM_THREADS = 1 and 3 (an odd count: uneven
splits of rows, columns and tasks), printing a digest of each stage's output: NB counting and
counts → weights, scoring, the per-category AUC, ``evaluate()`` (its pool follows numba's thread
count), the streamed evaluation, DeLong intervals and tests, the bootstrap, and a whole study
(``run_study``: fit, decide, score, evaluate, intervals, comparisons). LR's own thread test is in
tests/models/logistic/test_logistic.py.
"""

import textwrap

import pytest

from mlnb._kernels.jit import HAVE_NUMBA

SCRIPT = textwrap.dedent("""
    import hashlib, sys, tempfile, warnings
    import numba, numpy as np, scipy.sparse as sp
    warnings.simplefilter("ignore")
    from mlnb.config import load_config
    from mlnb.data.synthetic import make_rcv1_like
    from mlnb.metrics.evaluation import evaluate
    from mlnb.metrics.ranking import label_ranking_metrics, roc_auc
    from mlnb.metrics.significance import delong_tests
    from mlnb.metrics.streaming import ScoreSpill, evaluate_spilled
    from mlnb.metrics.uncertainty import auc_confidence_intervals, bootstrap_intervals
    from mlnb.models import NaiveBayes
    from mlnb.study import run_study

    def digest(*parts):
        h = hashlib.sha256()
        for part in parts:
            h.update(np.ascontiguousarray(part).tobytes() if isinstance(part, np.ndarray) else repr(part).encode())
        return h.hexdigest()[:16]

    def evaluation_digest(e):
        return digest(e.per_category.to_numpy().astype(str), e.roc_tpr, e.gains, sorted(e.summary.items()))

    data = make_rcv1_like(n_documents=6000, n_features=3000, n_categories=21, seed=4)
    X, Y = data.X_train, data.Y_train
    X_test, Y_test = data.X_test, data.Y_test
    out = [str(numba.get_num_threads())]
    nb = NaiveBayes(alpha=0.5).fit(X, Y)
    binary = NaiveBayes(alpha=0.5, binarize=True).fit(X, Y)
    out.append("nb:" + digest(nb.counts_.F, nb.counts_.t, nb.weights_, nb.bias_, binary.weights_))
    S = nb.decision_function(X_test)
    S2 = binary.decision_function(X_test)
    assert X_test.nnz * S.shape[1] >= 2_000_000  # the parallel scoring kernel, not the serial one
    out.append("scoring:" + digest(S, S2))
    out.append("roc_auc:" + digest(roc_auc(Y_test, S)))
    out.append("ranking:" + digest(sorted(label_ranking_metrics(Y_test, S).items())))
    out.append("evaluate:" + evaluation_digest(evaluate(Y_test, S, curve_categories=[0, 5])))
    with tempfile.TemporaryDirectory() as folder:
        spill = ScoreSpill(folder + "/spill", S.shape[1])
        for start in range(0, S.shape[0], 700):
            spill.append(Y_test[start:start + 700], S[start:start + 700])
        out.append("spilled:" + evaluation_digest(evaluate_spilled(spill, curve_categories=[3])))
    out.append("delong:" + digest(delong_tests(Y_test, S, S2).to_numpy(), auc_confidence_intervals(Y_test, S)))
    out.append("bootstrap:" + digest(sorted(bootstrap_intervals(Y_test, S, n_boot=20).items())))
    config = load_config("configs/quickstart.toml", ["data.synthetic.n_documents=3000",
                                                     "data.synthetic.n_features=2000", "eval.bootstrap=20"])
    result = run_study(config)
    out.append("study:" + digest(*[evaluation_digest(run.evaluation) for run in result.models],
                                 *[run.scores for run in result.models],
                                 *[c.table.to_numpy().astype(str) for c in result.comparisons],
                                 *[run.auc_intervals for run in result.models],
                                 *[sorted(run.intervals.items()) for run in result.models]))
    print(" ".join(out))
""")


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")
def test_every_stage_gives_the_same_bits_on_one_and_three_threads(output_with_numba_threads):
    one, three = output_with_numba_threads(SCRIPT, 1), output_with_numba_threads(SCRIPT, 3)
    assert (one[0], three[0]) == ("1", "3")
    assert len(one) == 10
    for a, b in zip(one[1:], three[1:]):
        assert a == b, f"{a.split(':')[0]} differs between 1 and 3 threads"
