"""``serve --validate``: the reference broker as a checking peer for client libraries.

:mod:`.contract` is what a protocol supplies (a :class:`~.contract.Validation`);
:mod:`.frontend` wraps the protocol's front-end; :mod:`.faults` reads fault plans;
:mod:`.ledger` records what was seen; :mod:`.reactions` reads what a client did after a
fault; :mod:`.results` builds the report model; :mod:`.command` is the command.
"""
