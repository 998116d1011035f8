"""Example job models, one module each, registered by being here (:mod:`..registry`).

``NAME.py`` is the model ``NAME`` (``_`` read as ``-``), its class the module's
``JOB_MODEL``: :mod:`.scaled_delay` is ``--job-model scaled-delay[:F]``. See
docs/simulator.md, "Adding a job model".
"""
