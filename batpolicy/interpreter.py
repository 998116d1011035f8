"""Which CPython runs batpolicy, and whether it was built for speed.

The interpreter's build moves simulate's CPU by about a fifth, serve's beside Batsim by
about a tenth: pyenv's default build (no profile-guided or link-time optimisation, a
shared ``libpython``) against a distribution's or python.org's (docs/performance.md,
"Measuring on a shared VM"). ``batpolicy --version``, the daemon's start-up log line and
every benchmark result say which one ran.
"""

from __future__ import annotations

import platform
import sysconfig
from pathlib import Path

__all__ = ["describe"]

#: configure options that make CPython faster (PGO and LTO).
SPEED_OPTIONS = ("--enable-optimizations", "--with-lto")


def describe() -> str:
    """One line: implementation, version, PGO/LTO configure options, libpython linkage.

    The linkage is what the running executable maps (``/proc/self/maps``), not how the
    build was configured: Debian configures ``--enable-shared`` yet links its
    ``python3.11`` statically. Distributions build with PGO and LTO from their own rules,
    which ``CONFIG_ARGS`` does not show (Debian's again): read the line with that in mind.

    >>> describe().startswith(platform.python_implementation())
    True
    """
    args = sysconfig.get_config_var("CONFIG_ARGS") or ""
    options = [o for o in SPEED_OPTIONS if o in args]
    try:
        shared = "libpython" in Path("/proc/self/maps").read_text()
    except OSError:  # not Linux: the build's setting
        shared = bool(sysconfig.get_config_var("Py_ENABLE_SHARED"))
    return (f"{platform.python_implementation()} {platform.python_version()} "
            f"({' '.join(options) or 'no PGO/LTO configure options'}, "
            f"{'shared' if shared else 'static'} libpython)")
