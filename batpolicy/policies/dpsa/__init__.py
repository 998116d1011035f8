"""DPSA policy family (Grudenic & Bogunovic, MIPRO 2011): ``dpsa-p``, ``dpsa-n``, ``dpsa-w``.

Modules: :mod:`.policy` (the policies, Fig. 2's main procedure), :mod:`.problem` (the
subset problem and its two availability classes), :mod:`.exact` (exact dynamic
programming, the default) and :mod:`.search` (the paper's bounded enumeration).
"""

from batpolicy.policies.dpsa.policy import Dpsa, DpsaN, DpsaW

DpsaP = Dpsa

__all__ = ["Dpsa", "DpsaN", "DpsaP", "DpsaW"]
