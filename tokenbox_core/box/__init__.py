"""The Token Box (``docs/concepts.md#the-token-box``): one module per step of the algorithm.

- :mod:`._state` — the working records: slots and units;
- :mod:`._measure` and :mod:`._totals` — measuring every section in one pass,
  and the exact count of what is emitted;
- :mod:`._claim` — claims and expansion;
- :mod:`._compress` — compression: lenses, cuts, eviction, drops;
- :mod:`._groups` — atomic groups across sections;
- :mod:`._refill` — giving back what compression took;
- :mod:`._selector` — how item selection plugs in (:class:`ItemSelector`);
- :mod:`._results` — the per-section records;
- :mod:`._inputs` — the layout's ``input_hash``;
- :mod:`._core` — :class:`TokenBox`, which runs the steps in order.
"""

from tokenbox_core.box._core import TokenBox
from tokenbox_core.box._selector import Choice, ItemSelector, SizedItem
from tokenbox_core.box._state import DEFAULT_OMISSION, MARKER_IDS_SHOWN

__all__ = ["DEFAULT_OMISSION", "MARKER_IDS_SHOWN", "Choice", "ItemSelector", "SizedItem", "TokenBox"]
