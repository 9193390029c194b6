"""AWS's two public spot feeds: current spot prices and the Spot Instance Advisor.

* ``spot.json`` (website.spot.ec2.aws.a2z.com) is the feed behind aws.amazon.com/ec2/spot/pricing:
  one Linux and one Windows price per (region, size), no availability zones. It may arrive wrapped
  in ``callback(...);`` as the older ``spot.js`` did, so the wrapper is stripped. GPU sizes can sit
  under non-GPU ``type`` groups, so sizes are matched by name only. Prices are strings, sometimes in
  scientific notation (``"9.0E-4"``); ``"N/A*"``, ``"N/A"``, ``"0"`` and missing mean no price.
  The old feed used legacy region names (``us-east``, ``eu-ireland``, ...), mapped to codes here.
* ``spot-advisor-data.json`` has no price, but per (region, OS, type) the advertised saving ``s``
  (percent against on-demand) and an interruption-frequency bucket ``r`` indexing ``ranges``. What a
  bucket means (bounds stored, frequency planned with) is defined once in ``warehouse.spot_buckets``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Iterator
from typing import Any

from warehouse.errors import ParseError
from warehouse.spot_buckets import bucket_bounds  # one definition, shared with the optimizer

__all__ = ["advisor_entries", "bucket_bounds", "load_json", "region_code", "spot_price", "spot_prices"]

# legacy spot.js region ids -> region codes (spotinfo, ec2instances.info, old AWS pricing scripts)
LEGACY_REGIONS: dict[str, str] = {
    "us-east": "us-east-1",
    "us-west": "us-west-1",
    "eu-ireland": "eu-west-1",
    "eu-frankfurt": "eu-central-1",
    "apac-sin": "ap-southeast-1",
    "apac-syd": "ap-southeast-2",
    "apac-tokyo": "ap-northeast-1",
    "apac-seoul": "ap-northeast-2",
    "apac-osaka": "ap-northeast-3",
}
NO_PRICE = frozenset({"", "N/A", "N/A*", "NA"})
_WRAPPER = re.compile(r"^\s*[A-Za-z_$][\w$.]*\s*\((.*)\)\s*;?\s*$", re.DOTALL)


def region_code(name: str) -> str:
    return LEGACY_REGIONS.get(name, name)


def load_json(body: bytes, source: str) -> Any:
    """JSON, after stripping an optional JSONP ``callback(...);`` wrapper."""
    text = body.decode("utf-8", "replace").lstrip("\ufeff")
    if (match := _WRAPPER.match(text)) and not text.lstrip().startswith(("{", "[")):
        text = match.group(1)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ParseError(f"aws: {source} is not valid JSON ({exc})") from None


def spot_price(value: Any) -> float | None:
    """A feed price string as a float, or None for every way the feed says "no price"."""
    if value is None:
        return None
    text = str(value).strip()
    if text.upper() in NO_PRICE:
        return None
    try:
        price = float(text)
    except ValueError:
        return None
    return price if math.isfinite(price) and price > 0 else None


def spot_prices(
    data: Any, source: str, regions: Collection[str], wanted: Callable[[str], bool]
) -> Iterator[tuple[str, str, float]]:
    """(region code, size, Linux USD/hour) for every wanted size with a price, in configured regions.

    A feed with no region at all, or whose configured regions hold no size or no Linux price column
    anywhere, has changed shape (or is a stub) and is a ParseError, never an empty spot market.
    "N/A" prices are normal (no capacity) and count as read.
    """
    try:
        feed_regions = data["config"]["regions"]
    except (KeyError, TypeError):
        raise ParseError(f"aws: {source}: spot feed has no config.regions") from None
    if not isinstance(feed_regions, list):
        raise ParseError(f"aws: {source}: spot feed config.regions is not a list")
    if not feed_regions:
        raise ParseError(f"aws: {source}: spot feed lists no region at all (an empty feed, not an empty market)")
    ours = sizes = columns = 0
    for region in feed_regions:
        if not isinstance(region, dict):
            continue
        code = region_code(str(region.get("region", "")))
        if code not in regions:
            continue
        ours += 1
        for group in region.get("instanceTypes") or []:
            for size in (group or {}).get("sizes") or []:
                name = (size or {}).get("size")
                if not isinstance(name, str):
                    continue
                sizes += 1
                if not wanted(name):
                    continue
                linux = next(
                    (c for c in size.get("valueColumns") or [] if isinstance(c, dict) and c.get("name") == "linux"),
                    None,
                )
                if linux is None:
                    continue
                columns += 1
                price = spot_price((linux.get("prices") or {}).get("USD"))
                if price is not None:
                    yield code, name, price
    if ours and not sizes:
        raise ParseError(f"aws: {source}: no instance sizes under the configured regions (the feed's shape changed)")
    if sizes and not columns:
        raise ParseError(f"aws: {source}: no GPU size has a 'linux' price column (the feed's shape changed)")


def advisor_entries(
    data: Any, source: str, regions: Collection[str], wanted: Callable[[str], bool]
) -> Iterator[tuple[str, str, float | None, int]]:
    """(region, type, savings %, bucket index) for Linux entries of wanted types in configured regions.

    An Advisor document with no region at all, or whose configured regions have no Linux table or
    no readable bucket anywhere, has changed shape (or is a stub): a ParseError, never "no risk data".
    """
    try:
        advisor = data["spot_advisor"]
    except (KeyError, TypeError):
        raise ParseError(f"aws: {source}: Spot Advisor data has no spot_advisor") from None
    if not isinstance(advisor, dict):
        raise ParseError(f"aws: {source}: spot_advisor is not an object")
    if not advisor:
        raise ParseError(f"aws: {source}: Spot Advisor data lists no region at all (an empty document)")
    ours = linux_tables = entries = readable = 0
    for region, systems in advisor.items():
        if region not in regions or not isinstance(systems, dict):
            continue
        ours += 1
        table = systems.get("Linux")
        if not isinstance(table, dict):
            continue
        linux_tables += 1
        for instance_type, entry in table.items():
            if not wanted(instance_type):
                continue
            entries += 1
            if not isinstance(entry, dict) or not isinstance(entry.get("r"), int | float):
                continue
            readable += 1
            savings = entry.get("s")
            yield region, instance_type, float(savings) if isinstance(savings, int | float) else None, int(entry["r"])
    if ours and not linux_tables:
        raise ParseError(f"aws: {source}: no 'Linux' table under the configured regions (the document's shape changed)")
    if entries and not readable:
        raise ParseError(f"aws: {source}: no GPU entry has an 'r' interruption bucket (the document's shape changed)")
