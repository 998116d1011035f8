"""Campaigns: many simulations from one TOML file, on a process pool or a Dask cluster.

:mod:`.spec` reads the file into runs, :mod:`.task` runs one through the product's
readers and simulator, :mod:`.executors` says where runs execute, :mod:`.runner` skips
finished runs and writes the one results table.
"""
