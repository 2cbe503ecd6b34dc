"""Drawing a protocol's pool of valid payloads from Hypothesis strategies, deterministically.

``draw(seed, strategy)`` gives the same value for the same seed string in every process
(a shell, pytest, a Spark worker): the ``ConjectureData`` is seeded from the string, and
the provider ignores the constants Hypothesis collects from whatever modules the process
imported.  ``SCAPY_RANDOM`` guards scapy's ``fuzz()``, which draws from the module
``random``: a mutator seeds it and builds under the lock.
"""

from __future__ import annotations

import random
import threading
from typing import Any, ClassVar

from hypothesis.control import BuildContext
from hypothesis.internal.conjecture.choice import choice_constraints_key, choice_permitted
from hypothesis.internal.conjecture.data import ConjectureData
from hypothesis.internal.conjecture.providers import GLOBAL_CONSTANTS, HypothesisProvider

SCAPY_RANDOM = threading.Lock()


class _SeededProvider(HypothesisProvider):
    """Hypothesis's own provider without its *local* constants.

    Now and then Hypothesis draws a constant instead of a random value, from a global
    list and from the literals of whatever modules the process has imported.  The latter
    differ between a shell, pytest and a Spark worker, and with them the pool of a seed:
    this provider uses the global list only, so a seed means the same pool everywhere."""

    _pools: ClassVar[dict[Any, tuple[Any, ...]]] = {}

    def _maybe_draw_constant(self, choice_type: Any, constraints: Any, *, p: float = 0.05) -> Any:
        assert self._random is not None
        if self._random.random() > p:
            return None
        key = (choice_type, choice_constraints_key(choice_type, constraints))
        pool = self._pools.get(key)
        if pool is None:
            pool = tuple(
                c
                for c in GLOBAL_CONSTANTS.set_for_type(choice_type)
                if choice_permitted(c, constraints)
            )
            self._pools[key] = pool
        return self._random.choice(pool) if pool else None


def draw(seed: str, strategy: Any) -> Any:
    """One value of ``strategy``, a pure function of ``seed``."""
    data = ConjectureData(random=random.Random(seed), provider=_SeededProvider)
    with BuildContext(data, is_final=True, wrapped_test=draw):
        return data.draw(strategy)
