"""The store's scores as seed statistics and table rows: the table specs, the rows they group results into,
and each cell's statistics (the report, the API's frames and `bench run` read them)."""
