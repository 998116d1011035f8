"""Job models: how long a job runs on its allocation and how its end moves.

The interface (:mod:`.base`), the one registry open to plug-ins (:mod:`.registry`), the
per-job choice (:mod:`.choice`), co-allocation's models (:mod:`.coalloc`) and SimGrid's
parallel tasks (:mod:`.ptask`).
"""
