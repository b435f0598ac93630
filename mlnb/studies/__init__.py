"""Studies built on single runs: paired comparisons, sweeps, learning curves."""
