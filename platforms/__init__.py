"""Platform models, SimGrid/Batsim XML reading, the view from SIMULATION_BEGINS, generators."""

from batpolicy.platforms.model import Group, Link, Machine, Platform

__all__ = ["Group", "Link", "Machine", "Platform"]
