"""Batsim 4.2.1's ``-E``: machines' power states and switches, SimGrid 3.32's host-energy
plugin, and the energy outputs (``_consumed_energy.csv``, ``_pstate_changes.csv``).
"""
