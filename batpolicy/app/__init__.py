"""The application on top: the command line, campaigns and plots.

:mod:`.cli` builds ``batpolicy``'s sub-commands (the console script and ``python -m
batpolicy``); :mod:`.sim_cli` (``simulate``, ``fake-batsim``), :mod:`.io_cli` (workload
tools), :mod:`.platforms_cli` (``platform``), :mod:`.plot_cli` and :mod:`.campaign` are
its rooms. Nothing below imports this package.
"""
