"""pybatsim 3.2.1 schedulers in the simulator's process.

Found and built as ``pybatsim NAME`` does (:mod:`.loader`), driven without a socket
(:mod:`.driver`), for :func:`batpolicy.testing.simulate` (:mod:`.testing`).
"""
