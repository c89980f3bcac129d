"""A benchmark-only app: orders with nested addresses and lines, a data set of the benchmarks' own, not the demo's."""
