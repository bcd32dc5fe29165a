"""Reproducing a paper (`bench reproduce`, `bench check`, `bench config-search`): recipes, their runs, merged-run
checks, the configuration search and how far each table is reproduced."""
