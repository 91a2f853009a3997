"""Records in: the record and registry contract, readers and importers, the reduction to model x task cells (in memory, streaming, DuckDB, Spark), the simulator of records with known truth."""
