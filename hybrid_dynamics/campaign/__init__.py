"""Damage campaigns: a grid of scenarios from a YAML spec (spec.py), run on a Dask cluster into
a results table (execute.py), each run's outcome (outcome.py) and the summary report (report.py)."""
