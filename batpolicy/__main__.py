"""``python -m batpolicy`` runs the command line."""

from batpolicy.scheduler.cli import console

console()
