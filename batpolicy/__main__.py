"""``python -m batpolicy`` runs the command line."""

from batpolicy.app.cli import console

console()
