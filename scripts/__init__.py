"""The command-line tools, on top of the library: analysis, experiments, benchmarks."""
