"""A series of snapshots -> price intervals, with the same semantics as a nightly scrape (pure).

An observation at time t either confirms a key's open price (its ``last_seen`` moves to t), changes it
(the open interval closes at t and a new one opens at t), or lacks it (the open interval closes at t).
When the archive ends, every open interval closes at its last confirmation, so imported prices never
look current. An import that continues an earlier one starts from that import's open prices
(``carried``): an unchanged price extends the stored interval instead of starting a new one.

A **glitch** is not history. A price that holds for exactly one snapshot, less than a day, and is a
big move (the larger of it and its neighbour more than ``1 + warehouse.load.FLAG_CHANGE`` = 1.6 times
the smaller) is dropped and counted (``glitches``) when either

* the next snapshot has the old price back (A -> B -> A: anycloud-sh/catalog's Azure rows flip a
  T4 price from $1.204 to $1.94 and back within three hours a dozen times): A simply continues; or
* it had just appeared (the offer was absent from the snapshot before) and the next snapshot
  corrects it by a big move or withdraws it (new -> B -> C, new -> B -> gone): Cyclenerd's commit
  6df5fae introduced a3-megagpu-8g priced without its H100s ($10.12 an hour against $88.49 for
  a3-highgpu-8g) and d45989c withdrew it two hours later; the offer starts when it is first priced
  for more than one snapshot.

A price that held for a day or more is history, however much it moved (weekly archives). Closed
intervals are handed out one snapshot late, so a glitch can still be taken back.

Observations must come in time order. Two at the same instant (or a commit dated before its parent,
which rebases produce) do not make zero-length intervals: the later commit replaces the earlier one's
snapshot at the earlier instant.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from scraper.archive.snapshot import Attrs, Key
from warehouse.load import FLAG_CHANGE

SAME_PRICE = 1e-9  # as warehouse.load: closer than this is the same price
CORRECTED_WITHIN = timedelta(days=1)  # a one-snapshot price corrected this fast by a big move is a glitch


def big_move(a: float, b: float) -> bool:
    return max(a, b) > (1 + FLAG_CHANGE) * min(a, b)


@dataclass(slots=True)
class Interval:
    key: Key
    attrs: Attrs
    usd: float
    valid_from: datetime
    valid_to: datetime | None  # set when closed
    last_seen: datetime
    commit: str  # the commit that first showed this price
    last_commit: str  # the last commit that confirmed it
    continues: bool = False  # replaces a stored interval that starts at ``valid_from`` (incremental import)
    new: bool = False  # the key had no price just before this interval


@dataclass(frozen=True, slots=True)
class Carried:
    """An interval the previous import left open at the archive's end."""

    usd: float
    valid_from: datetime
    commit: str
    attrs: Attrs
    last_seen: datetime


class IntervalBuilder:
    """Feed snapshots in time order with :meth:`observe`; collect closed intervals as they are returned."""

    def __init__(self, carried: dict[Key, Carried] | None = None) -> None:
        self.open: dict[Key, Interval] = {}
        for key, c in (carried or {}).items():
            self.open[key] = Interval(
                key, c.attrs, c.usd, c.valid_from, None, c.last_seen, c.commit, c.commit, continues=True
            )
        self._pending: tuple[datetime, str, dict[Key, float], dict[Key, Attrs]] | None = None
        self.last_time: datetime | None = max((c.last_seen for c in (carried or {}).values()), default=None)
        self.observations = 0
        self.glitches = 0
        self._just_closed: dict[Key, Interval] = {}  # closed by the last snapshot, held back one snapshot
        self._carried = bool(carried)

    def observe(self, at: datetime, commit: str, prices: dict[Key, float], attrs: dict[Key, Attrs]) -> list[Interval]:
        """Record a snapshot taken at ``at``; returns the intervals it closed (of the previous snapshot)."""
        if self._pending is not None and at <= self._pending[0]:
            self._pending = (self._pending[0], commit, prices, attrs)  # same instant: the later commit wins
            return []
        if self.last_time is not None and at <= self.last_time:
            at = self.last_time  # cannot happen after carried state unless clocks went back; keep order
        closed = self._flush()
        self._pending = (at, commit, prices, attrs)
        return closed

    def confirm(self, at: datetime, commit: str) -> list[Interval]:
        """The archive still holds the last snapshot at ``at`` (its tip): every open price is seen again."""
        closed = self._flush()
        if self.last_time is not None and at > self.last_time:
            for interval in self.open.values():
                interval.last_seen = at
                interval.last_commit = commit
            self.last_time = at
        return closed

    def finish(self) -> list[Interval]:
        """Close every open interval at its last confirmation: the archive says nothing after that."""
        closed = self._flush()
        closed += self._just_closed.values()
        self._just_closed = {}
        for interval in self.open.values():
            interval.valid_to = interval.last_seen
        # a price first seen in the last snapshot has no duration yet but was seen: it stays, and the next
        # import of this archive continues it
        ends = list(self.open.values())
        self.open = {}
        return [i for i in closed if i.valid_to is not None and i.valid_to > i.valid_from] + ends

    def _flush(self) -> list[Interval]:
        if self._pending is None:
            return []
        at, commit, prices, attrs = self._pending
        self._pending = None
        self.observations += 1
        previous_time, self.last_time = self.last_time, at
        for key, before in list(self._just_closed.items()):
            glitch = self.open.get(key)
            usd = prices.get(key)
            if (
                glitch is not None
                and usd is not None
                and glitch.valid_from == previous_time
                and at - glitch.valid_from < CORRECTED_WITHIN
                and abs(usd - before.usd) < SAME_PRICE
                and big_move(glitch.usd, before.usd)
            ):
                before.valid_to = None  # the old price never really left
                self.open[key] = before
                del self._just_closed[key]
                self.glitches += 1
        closed = list(self._just_closed.values())
        self._just_closed = {}
        closing: set[Key] = set()
        for key, interval in list(self.open.items()):
            usd = prices.get(key)
            if usd is not None and abs(usd - interval.usd) < SAME_PRICE:
                interval.last_seen = at
                interval.last_commit = commit
                continue
            interval.valid_to = at
            del self.open[key]
            closing.add(key)
            fleeting = (
                interval.valid_from == previous_time
                and interval.last_seen == previous_time
                and at - interval.valid_from < CORRECTED_WITHIN
            )
            if fleeting and interval.new and (usd is None or big_move(usd, interval.usd)):
                self.glitches += 1  # corrected or withdrawn within the day: never a price
                continue
            if interval.valid_to > interval.valid_from:
                self._just_closed[key] = interval
        for key, usd in prices.items():
            if key not in self.open:
                # new: absent from a snapshot before this one (not merely the first snapshot read)
                new = key not in closing and (self.observations > 1 or self._carried)
                self.open[key] = Interval(key, attrs[key], usd, at, None, at, commit, commit, new=new)
        return closed


def build(
    observations: Iterable[tuple[datetime, str, dict[Key, float], dict[Key, Attrs]]],
    tip: tuple[datetime, str] | None = None,
) -> list[Interval]:
    """All intervals of a series of snapshots (tests and small archives; the importer streams)."""
    builder = IntervalBuilder()
    out: list[Interval] = []
    for at, commit, prices, attrs in observations:
        out += builder.observe(at, commit, prices, attrs)
    if tip is not None:
        out += builder.confirm(*tip)
    out += builder.finish()
    return out
