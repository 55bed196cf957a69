"""Evidence from a timing log: the per-record split of the held time, component statistics, bounds, phases."""
