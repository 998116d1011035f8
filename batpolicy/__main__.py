"""``python -m batpolicy`` runs the command line."""

from batpolicy.scheduler.cli import main

raise SystemExit(main())
