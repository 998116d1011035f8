"""Batsim 4.2.1's ``-E``: power states, SimGrid 3.32's host-energy plugin, energy outputs.

The machines' power states and switches, and the outputs ``_consumed_energy.csv`` and
``_pstate_changes.csv``.
"""
