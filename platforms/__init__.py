"""Platform models, SimGrid/Batsim XML reading, generators and bundled example platforms."""

from batpolicy.platforms.model import Link, Machine, Platform

__all__ = ["Link", "Machine", "Platform"]
