"""The argument types of every compiled kernel that studies use, whatever their source, task, event model or
updater: what ``mlnb.precompile`` compiles before the first study. Each is numba's text of a signature
(``str`` of a dispatcher's ``signatures``), by module and function; a kernel that another calls is listed
with the types it is called with. ``tests/test_precompile.py`` names any combination a study compiled
that is missing here."""

SIGNATURES = {
    'mlnb._kernels.csr': {
        '_at_or_above': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True))",
        ],
        '_columns_pass': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int8, 1, 'C', False, aligned=True), int64, bool, Array(int64, 2, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True))",
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), int64, bool, Array(int64, 2, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True))",
        ],
        '_copy_rows_parallel': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), int64, int64)",
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int8, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int8, 1, 'C', False, aligned=True), int64, int64)",
        ],
        '_copy_rows_serial': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True))",
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int8, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int8, 1, 'C', False, aligned=True))",
        ],
        '_count': [
            "(Array(int32, 1, 'C', False, aligned=True), int64, int64, Array(int64, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True))",
        ],
        '_row_offsets': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True))",
        ],
        '_row_order': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), int64, Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True))",
        ],
    },
    'mlnb.data.svmlight_blocks': {
        '_parse_numba': [
            "(Array(uint8, 1, 'C', True, aligned=True), int64, int64, int64, Array(int64, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True))",
        ],
    },
    'mlnb.data.synthetic': {
        '_guided_search': [
            "(Array(float64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True))",
        ],
    },
    'mlnb.metrics._delong': {
        '_paired_rows': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), int64, Array(int64, 1, 'C', False, aligned=True), int64)",
            "(Array(float64, 2, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), int64, Array(int64, 1, 'C', False, aligned=True), int64)",
        ],
        '_single_rows': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), int64, Array(int64, 1, 'C', False, aligned=True), int64)",
            "(Array(float64, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), int64, Array(int64, 1, 'C', False, aligned=True), int64)",
        ],
    },
    'mlnb.metrics._pointwise': {
        '_finite_range': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True), int64)",
        ],
        '_sums': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), float64, int64, int64)",
            "(Array(float64, 2, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), float64, int64, int64)",
        ],
        '_sums_one_block': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), float64, int64)",
            "(Array(float64, 2, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), float64, int64)",
        ],
    },
    'mlnb.metrics.ranking': {
        '_column_and_positives': [
            "(Array(float32, 2, 'C', False, aligned=True), int64, Array(int64, 1, 'C', False, aligned=True))",
            "(Array(float64, 2, 'C', False, aligned=True), int64, Array(int64, 1, 'C', False, aligned=True))",
        ],
        '_curve_on_grid': [
            "(Array(float32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True))",
            "(Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True))",
        ],
        '_ranking_sums': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True), int64)",
            "(Array(float64, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True), int64)",
        ],
        '_ranking_sums_one_block': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True))",
            "(Array(float64, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True))",
        ],
        'top_k_hits': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), int64, int64, int64)",
            "(Array(float64, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), int64, int64, int64)",
        ],
    },
    'mlnb.metrics.uncertainty': {
        '_draw_counts': [
            "(Array(int64, 2, 'C', False, aligned=True), Array(uint64, 2, 'C', False, aligned=True), uint64, uint64, Array(int32, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(int32, 2, 'C', False, aligned=True))",
        ],
        '_lemire_counts': [
            "(Array(uint64, 2, 'C', False, aligned=True), uint64, uint64, int64, uint64, uint64)",
        ],
        '_lemire_fill': [
            "(Array(uint64, 2, 'C', False, aligned=True), uint64, uint64, int64, uint64, uint64, Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True))",
        ],
        '_row_sums': [
            "(Array(int64, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(uint8, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), int64)",
        ],
        '_segment_sums': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(uint8, 2, 'C', False, aligned=True), int64)",
        ],
        '_sort_categories': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True))",
            "(Array(float64, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True))",
        ],
        '_sort_pooled': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), int64, Array(int32, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True))",
            "(Array(float64, 2, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), int64, Array(int32, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True))",
        ],
        '_stratified_rows': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), int64, int64, Array(int32, 1, 'C', False, aligned=True))",
        ],
        '_transpose_counts': [
            "(Array(int32, 2, 'C', False, aligned=True), Array(uint8, 2, 'C', False, aligned=True))",
        ],
    },
    'mlnb.models._counting': {
        '_column_extremes': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(bool, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True))",
        ],
        '_count_tasks': [
            "(Array(int64, 2, 'C', False, aligned=True), int64, Array(int64, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), bool, bool, int64, Array(float64, 2, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True))",
        ],
        '_value_range': [
            "(Array(float32, 1, 'C', False, aligned=True),)",
        ],
    },
    'mlnb.models.logistic.kernels': {
        '_adagrad_bias_step': [
            "(Array(float32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), float32, float32)",
        ],
        '_all_equal': [
            "(Array(float32, 1, 'C', False, aligned=True),)",
        ],
        '_block_rows': [
            "(Array(int64, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), int64)",
        ],
        '_catch_up_region': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 2, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), float64, Array(int64, 1, 'C', False, aligned=True), int64, Array(float32, 1, 'C', False, aligned=True), bool, bool, float64, float64, float64, float64, Array(int64, 1, 'C', False, aligned=True), int64, int64, Array(float32, 2, 'C', False, aligned=True))",
        ],
        '_column_means': [
            "(Array(float32, 2, 'C', False, aligned=True),)",
        ],
        '_documents_region': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), bool, Array(float32, 2, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(int64, 2, 'C', False, aligned=True), bool, Array(int64, 1, 'C', False, aligned=True), int64, int64, Array(float32, 2, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), float64, Array(float32, 1, 'C', False, aligned=True), float64, float64, float64)",
        ],
        '_flush_region': [
            "(Array(float32, 2, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), float64, Array(float32, 1, 'C', False, aligned=True), bool, bool, float64, float64, float64, float64, Array(float32, 2, 'C', False, aligned=True), Array(uint8, 1, 'C', False, aligned=True))",
        ],
        '_words_region': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(int64, 2, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(float32, 3, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(int64, 2, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), float64, float64, Array(float64, 1, 'C', False, aligned=True), bool, bool, float64, float64, float64, float64, Array(float32, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), int64, Array(uint32, 2, 'C', False, aligned=True), Array(int64, 1, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(uint8, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(float32, 3, 'C', False, aligned=True))",
        ],
    },
    'mlnb.models._scoring': {
        '_csr_times_dense': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), bool, bool, Array(float32, 2, 'C', False, aligned=True), int64, int64)",
        ],
        '_csr_times_dense_serial': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), Array(float32, 2, 'C', False, aligned=True), Array(float32, 1, 'C', False, aligned=True), bool, bool, Array(float32, 2, 'C', False, aligned=True))",
        ],
    },
    'mlnb.models.naive_bayes.fused': {
        '_bernoulli': [
            "(Array(float64, 2, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), bool, float64, Array(float32, 2, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True))",
            "(Array(float64, 2, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), bool, float64, Array(float64, 2, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True))",
        ],
        '_gaussian': [
            "(Array(float64, 2, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), bool, float64, Array(float64, 1, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True))",
        ],
        '_ratios': [
            "(Array(float64, 2, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), bool, bool, Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), float64, Array(float32, 2, 'C', False, aligned=True))",
            "(Array(float64, 2, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), bool, bool, Array(float64, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), float64, Array(float64, 2, 'C', False, aligned=True))",
        ],
    },
    'mlnb.models.naive_bayes.multiclass': {
        '_joint_kernel': [
            "(Array(int32, 1, 'C', False, aligned=True), Array(int32, 1, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), bool, Array(float64, 2, 'C', False, aligned=True), Array(float64, 1, 'C', False, aligned=True), Array(float64, 2, 'C', False, aligned=True))",
        ],
    },
}
