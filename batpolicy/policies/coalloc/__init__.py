"""Bandwidth-aware co-allocation on multi-clusters (Jones, Pang, Stanzione & Ligon, 2005).

Seed 003, §4-§5: the ``coalloc`` meta-scheduler (:mod:`.policy`), its modules LA, MIG,
First-fit and B1-B4 (:mod:`.modules`) and A1 (:mod:`.satisfy`).
"""

from batpolicy.policies.coalloc.policy import Coalloc

__all__ = ["Coalloc"]
