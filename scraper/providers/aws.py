"""AWS EC2: on-demand from the Price List bulk files, spot from the public spot feed, Spot Advisor risk.

No credentials are needed for any of the three sources.

* **On-demand**: ``{COSTOPT_AWS_PRICING_URL}/offers/v1.0/aws/AmazonEC2/current/region_index.json``
  names, per region, the current offer file (``.../AmazonEC2/<publication>/<region>/index.json``;
  its ``.csv`` twin is used). The publication id in that URL is the change detector: a region whose
  version URL is the one the last successful run loaded is not downloaded at all; its prices are
  carried forward. Otherwise the CSV (hundreds of MB) is streamed to disk and scanned line by line
  (``aws_csv``), keeping the Linux on-demand price of each GPU instance type in ``aws_instances``.
  The version id is also the file's publication time: the prices' age counts from it.
* **Spot**: ``{COSTOPT_AWS_SPOT_URL}/spot.json``, one Linux price per (region, size).
* **Spot Advisor**: ``{COSTOPT_AWS_SPOT_ADVISOR_URL}/spot-advisor-data.json``, savings and
  interruption-frequency bucket per (region, type) -> ``SpotRisk``.

Regions: ``COSTOPT_AWS_REGIONS`` (comma-separated codes), default ``DEFAULT_REGIONS``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Mapping
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from scraper.base import ParseResult, Provider, RawPayload, regions_from
from scraper.providers import aws_csv, aws_instances, aws_spot
from warehouse.errors import ParseError, ProviderError
from warehouse.records import PriceRecord, SpotRisk

if TYPE_CHECKING:
    from scraper.http import Fetcher

PRICING_VAR = "COSTOPT_AWS_PRICING_URL"
SPOT_VAR = "COSTOPT_AWS_SPOT_URL"
ADVISOR_VAR = "COSTOPT_AWS_SPOT_ADVISOR_URL"
REGIONS_VAR = "COSTOPT_AWS_REGIONS"
REGION_INDEX_PATH = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
SPOT_PATH = "/spot.json"
ADVISOR_PATH = "/spot-advisor-data.json"
# regions with the broadest GPU line-up (P4/P5/P6, G5/G6/G6e) across the Americas, Europe and APAC
DEFAULT_REGIONS: tuple[str, ...] = (
    "us-east-1",
    "us-east-2",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-northeast-1",
    "ap-southeast-2",
    "ap-south-1",
)
_REGION_CODE = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$")
_CSV_REGION = re.compile(r"/AmazonEC2/[^/]+/([a-z0-9-]+)/index\.csv$")
_VERSION = re.compile(r"/AmazonEC2/(\d{14})/")
T = TypeVar("T")


def version_key(region: str) -> str:
    return f"version:{region}"


def regions_from_env(env: Mapping[str, str]) -> tuple[str, ...]:
    return regions_from(env, REGIONS_VAR, DEFAULT_REGIONS, _REGION_CODE, "us-east-1")


@cache  # one URL per region file, asked once per record
def published_at(url: str) -> datetime | None:
    """The publication time an offer file's version id carries (``.../AmazonEC2/20261119221500/...``), UTC."""
    match = _VERSION.search(url.split("?", 1)[0])
    if match is None:
        return None
    try:
        return datetime.strptime(match.group(1), "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def csv_url_of(base: str, version_url: str) -> str:
    """The CSV twin of a region's current offer file, as an absolute URL."""
    url = version_url if version_url.startswith(("http://", "https://")) else f"{base}/{version_url.lstrip('/')}"
    return url[: -len(".json")] + ".csv" if url.endswith(".json") else url


async def _all(coros: list[Awaitable[T]]) -> list[T]:
    """Run concurrently; on the first failure cancel the rest (their temp files are removed) and re-raise."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class AwsProvider(Provider):
    name: ClassVar[str] = "aws"
    parser_version: ClassVar[str] = "1"
    base_urls: ClassVar[dict[str, str]] = {
        PRICING_VAR: "https://pricing.us-east-1.amazonaws.com",
        SPOT_VAR: "https://website.spot.ec2.aws.a2z.com",
        ADVISOR_VAR: "https://spot-bid-advisor.s3.amazonaws.com",
    }

    config_vars: ClassVar[tuple[str, ...]] = (REGIONS_VAR,)

    @property
    def regions(self) -> tuple[str, ...]:
        """Configured regions; a bad ``COSTOPT_AWS_REGIONS`` fails this provider only, not the run."""
        return regions_from_env(self.env)

    def configured_regions(self) -> tuple[str, ...] | None:
        return self.regions

    def scope_of(self, region: str, pricing: str) -> str:
        """Per region: its price file, its part of the spot feed, its part of the Spot Advisor.

        Counted per region (not per feed) so that a region vanishing from a feed is caught, and so
        that configuring fewer regions is not mistaken for a feed that shrank.
        """
        return f"{pricing}/{region}"

    def expects(self, scope: str) -> bool:
        _, _, region = scope.partition("/")
        return not region or region in self.regions

    # --- fetch -----------------------------------------------------------------------------------

    async def fetch(self, http: Fetcher) -> list[RawPayload]:
        regions = self.regions
        base = self.base_url(PRICING_VAR)
        index_url = base + REGION_INDEX_PATH
        index = await http.get(index_url, conditional=True)
        if index.not_modified and any(http.recall(version_key(r)) is None for r in regions):
            # unchanged since last time, but a newly configured region needs its version URL
            index = await http.get(index_url)
        payloads: list[RawPayload] = [index]
        if index.not_modified:
            csv_urls = {r: http.recall(version_key(r)) or "" for r in regions}
        else:
            csv_urls = self._csv_urls(base, index, regions)
        payloads += await _all([self._region(http, region, url) for region, url in csv_urls.items()])
        spot_base, advisor_base = self.base_url(SPOT_VAR), self.base_url(ADVISOR_VAR)
        payloads += await _all([http.get(spot_base + SPOT_PATH), http.get(advisor_base + ADVISOR_PATH)])
        return payloads

    def _csv_urls(self, base: str, index: RawPayload, regions: tuple[str, ...]) -> dict[str, str]:
        data = aws_spot.load_json(index.body, index.url)
        listed = data.get("regions") if isinstance(data, dict) else None
        if not isinstance(listed, dict):
            raise ParseError(f"aws: {index.url}: region index has no 'regions' object")
        if not listed:  # an upstream fault, not the user's COSTOPT_AWS_REGIONS: every region would be "missing"
            raise ParseError(f"aws: {index.url}: the region index lists no region")
        missing = [r for r in regions if r not in listed]
        if missing:
            raise ProviderError(
                f"aws: region(s) {', '.join(missing)} not in the EC2 region index ({REGIONS_VAR}); "
                f"known: {', '.join(sorted(listed))}"
            )
        urls = {}
        for region in regions:
            version_url = (listed[region] or {}).get("currentVersionUrl")
            if not isinstance(version_url, str) or not version_url:
                raise ParseError(f"aws: {index.url}: region {region} has no currentVersionUrl")
            urls[region] = csv_url_of(base, version_url)
        return urls

    async def _region(self, http: Fetcher, region: str, url: str) -> RawPayload:
        scope = (region, "on_demand")
        if http.recall(version_key(region)) == url:
            return RawPayload(url=url, fetched_at=http.clock(), status=304, not_modified=True, scope=scope)
        payload = await http.get(url, conditional=True, to_file=True, scope=scope)
        http.remember(version_key(region), url)
        return payload

    # --- parse -----------------------------------------------------------------------------------

    def parse(self, payloads: list[RawPayload]) -> ParseResult:
        result = ParseResult()
        for payload in payloads:
            kind = self._kind(payload)
            if kind == "index":
                continue  # only tells fetch where the offer files are
            if kind == "csv":
                self._parse_csv(payload, result)
            elif payload.not_modified:
                continue  # spot feeds are fetched unconditionally; nothing to carry
            elif kind == "spot":
                self._parse_spot(payload, result)
            elif kind == "advisor":
                self._parse_advisor(payload, result)
            else:
                raise ParseError(f"aws: do not know how to parse {payload.url}")
        return result

    @staticmethod
    def _kind(payload: RawPayload) -> str:
        path = payload.url.split("?", 1)[0]
        if path.endswith("region_index.json"):
            return "index"
        if path.endswith(".csv") or payload.scope[1:2] == ("on_demand",):
            return "csv"
        if path.endswith(ADVISOR_PATH):
            return "advisor"
        if path.endswith((SPOT_PATH, "/spot.js")):
            return "spot"
        return "unknown"

    def _parse_csv(self, payload: RawPayload, result: ParseResult) -> None:
        region = payload.scope[0] if payload.scope else None
        if region is None and (m := _CSV_REGION.search(payload.url.split("?", 1)[0])):
            region = m.group(1)
        if payload.not_modified:
            if region is None:
                raise ParseError(f"aws: unchanged offer file {payload.url} names no region")
            result.carried.add((region, "on_demand"))
            return
        if payload.path is None:
            raise ParseError(f"aws: {payload.url}: offer file was not saved to disk")
        rows, scan = aws_csv.scan(payload.path, region, payload.url, frozenset(aws_instances.INSTANCES))
        if scan.malformed:
            result.skip("malformed CSV row", f"{region}: {scan.malformed_example}")
        seen: set[tuple[str, str]] = set()
        for row in rows:
            spec = aws_instances.lookup(row.instance_type)
            if spec is None:
                reason = aws_instances.untracked_reason(row.instance_type) or "unknown instance type"
                result.skip(reason, f"{row.region}/{row.instance_type} (GPU count {row.gpu_count:g})")
                continue
            if (row.region, row.instance_type) in seen:
                result.skip("duplicate on-demand row", f"{row.region}/{row.instance_type}")
                continue
            seen.add((row.region, row.instance_type))
            result.prices.append(
                self._record(row.region, row.instance_type, spec, "on_demand", row.usd_per_hour, payload)
            )

    def _parse_spot(self, payload: RawPayload, result: ParseResult) -> None:
        data = aws_spot.load_json(payload.body, payload.url)
        seen: set[tuple[str, str]] = set()
        for region, size, price in aws_spot.spot_prices(data, payload.url, self.regions, self._wanted):
            if (region, size) in seen:
                result.skip("duplicate spot price", f"{region}/{size}")
                continue
            seen.add((region, size))
            spec = aws_instances.INSTANCES[size]
            result.prices.append(self._record(region, size, spec, "spot", price, payload))

    def _parse_advisor(self, payload: RawPayload, result: ParseResult) -> None:
        data = aws_spot.load_json(payload.body, payload.url)
        ranges = data.get("ranges") if isinstance(data, dict) else None
        if not isinstance(ranges, list) or not ranges:
            raise ParseError(f"aws: {payload.url}: Spot Advisor data has no 'ranges'")
        try:
            buckets = aws_spot.bucket_bounds(ranges)
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"aws: {payload.url}: unreadable 'ranges' ({exc})") from None
        for region, instance_type, savings, bucket in aws_spot.advisor_entries(
            data, payload.url, self.regions, self._wanted
        ):
            if bucket not in buckets:
                result.skip("unknown interruption bucket", f"{region}/{instance_type} r={bucket}")
                continue
            found = buckets[bucket]
            result.spot_risk.append(
                SpotRisk(
                    provider=self.name,
                    region=region,
                    instance_type=instance_type,
                    savings_pct=savings,
                    bucket=bucket,
                    label=found.label,
                    interruption_pct_min=found.pct_min,
                    interruption_pct_max=found.pct_max,
                    source=payload.url,
                    observed_at=payload.fetched_at,
                )
            )

    @staticmethod
    def _wanted(instance_type: str) -> bool:
        return instance_type in aws_instances.INSTANCES

    def _record(
        self,
        region: str,
        instance_type: str,
        spec: aws_instances.GpuInstance,
        pricing: Any,
        usd: float,
        payload: RawPayload,
    ) -> PriceRecord:
        # an offer file's prices are AWS's as of its publication: their age counts from there
        published = published_at(payload.url) if pricing == "on_demand" else None
        return PriceRecord(
            provider=self.name,
            region=region,
            instance_type=instance_type,
            gpu=spec.gpu,
            gpu_count=spec.gpu_count,
            pricing=pricing,
            usd_per_hour=usd,
            source=payload.url,
            observed_at=_utc(payload.fetched_at),
            vcpus=spec.vcpus,
            memory_gib=spec.memory_gib,
            source_time=published,
            source_basis="published" if published is not None else "observed",
        )


def _utc(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
