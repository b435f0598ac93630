"""What vulture cannot see being used: names called by frameworks, and public API used outside the package.

``python -m vulture mlnb tests/vulture_whitelist.py --min-confidence 60`` then finds no function without a
caller outside the tests (``tests/test_architecture.py`` runs it where vulture is installed). A vulture
whitelist: it is read, never run (``_`` stands for any object). Add a name here only with its reason; a
function that only tests call is dead code to delete, with the tests that test only it.
"""
# ruff: noqa
# flake8: noqa

# called by frameworks
_.setup  # distributed's WorkerPlugin hook (mlnb/backends/dask.py)
_.show_config, _.init, _.compile_kernels  # typer commands, registered by their decorators (mlnb/cli.py)
_.find_class, _.persistent_load  # pickle.Unpickler hooks (mlnb/data/rcv1.py)
_._repr_html_  # Jupyter's rich display (mlnb/metrics/evaluation.py)
_.on_start, _.on_end  # progress listeners' callbacks (mlnb/precompile.py, mlnb/timings.py)

# public API: documented in docs/ (the API reference's pages, the guides)
_.fold  # the calibrations' (W, b) folding: fit_calibration's docstring example, docs/guide/decisions.md
_.delong_test, _.delong_tests  # docs/reference/api/metrics.md
_.auc_permutation_test  # docs/reference/api/metrics.md
_.excluded_table  # Evaluation's members, docs/reference/api/metrics.md
_.run_models  # docs/reference/api/study.md, docs/guide/python-api.md
_.column_event_models_  # a fitted attribute of NaiveBayes(event_model="mixed"), in its docstring
_.read_arff, _.read_mulan_labels  # mlnb/data/arff.py's public readers ("public API" there)
_.from_dense, _.to_dense  # SparseCounts's conversions, in mlnb/models/naive_bayes/sparse_counts.py's API list

# public API used by experiments/ scripts
_.auc_per_category  # experiments/bench_gpu.py
_.from_scores, _.auc_max_error, _.average_precision, _.micro_average_precision  # experiments/bench_roc_auc.py
_.fit_chunks  # experiments/bench_counters.py

# the metrics' public value types and functions: what a Python user reads, beside what the study reads
_.recall, _.f1, _.accuracy  # ConfusionCounts's ratios, beside its precision (mlnb/metrics/classification.py)
_.delong_covariance  # the DeLong covariance of any number of score columns (mlnb/metrics/significance.py)
_.delong_tests_by_column  # delong_tests of scores read a category at a time, as the streamed study reads them

# not yet read by the study (reported to be wired, not deleted): a streamed study's reliability table of the
# scores before calibration, which the in-memory study draws
_.uncalibrated_table  # mlnb/metrics/streaming.py
