"""The Token Box (``docs/concepts.md#the-token-box``): one module per step of the algorithm.

- :mod:`.state` — the working records: slots and units;
- :mod:`.measure` and :mod:`.totals` — measuring every section in one pass,
  and the exact count of what is emitted;
- :mod:`.claim` — claims and expansion;
- :mod:`.compress` — compression: lenses, cuts, eviction, drops;
- :mod:`.groups` — atomic groups across sections;
- :mod:`.refill` — giving back what compression took;
- :mod:`.selector` — how item selection plugs in (:class:`ItemSelector`);
- :mod:`.results` — the per-section records;
- :mod:`.inputs` — the layout's ``input_hash``;
- :mod:`.core` — :class:`TokenBox`, which runs the steps in order.
"""

from tokenbox_core.box.core import TokenBox
from tokenbox_core.box.selector import Choice, ItemSelector, SizedItem
from tokenbox_core.box.state import DEFAULT_OMISSION, MARKER_IDS_SHOWN

__all__ = ["DEFAULT_OMISSION", "MARKER_IDS_SHOWN", "Choice", "ItemSelector", "SizedItem", "TokenBox"]
