"""Analysis of run results: a library and its command-line tools."""
