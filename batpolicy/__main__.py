"""``python -m batpolicy`` runs the command line."""

from batpolicy.scheduler.app.cli import console

console()
