"""Seed and item statistics: the table specs, the result index (stored results grouped into table rows) with each
cell's seed statistics, and over the stored per-item outcomes (usebench/eval/items.py) bootstrap intervals of a
metric, paired differences between two rows with their tests, Holm's correction, and `bench compare`.

- :mod:`usebench.stats.table_specs`: the declarative table specs (rows, columns, averages);
- :mod:`usebench.stats.table_rows`: the result index: stored results grouped into table rows, each cell's statistics;
- :mod:`usebench.stats.seeds`: seed statistics (mean, std, n, per-seed values), refusing to mix runs;
- :mod:`usebench.stats.resample`: resampled item counts and every metric's value under them, vectorised;
- :mod:`usebench.stats.intervals`: a metric over seeds and items (:class:`Measurement`) and its interval;
- :mod:`usebench.stats.paired`: B - A with its interval and a paired test over items, Holm's correction;
- :mod:`usebench.stats.loading`: a stored result's items, checked against its record;
- :mod:`usebench.stats.compare`: `bench compare A B` and ``usebench.compare``;
- :mod:`usebench.stats.table_cells`: the report's cells (intervals, the best and the rows not worse than it).
"""
