"""Scheduling policies: one module per family, one registry (:mod:`.registry`).

Policies import the protocol's data types and the state API only: never a socket, a
clock, or the JSON codec (tests/test_layout.py checks it).
"""
