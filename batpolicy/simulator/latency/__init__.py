"""The latency driver: Batsim 4.2.1's SimGrid actors on a platform whose links take time.

The actors: the server's mailbox, the submitters; each message's delay is
:mod:`..delays`'.
"""
