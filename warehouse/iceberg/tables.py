"""The published tables: an explicit column list per table, its partitioning and its sort order.

What a table publishes is declared here and nowhere else, so a column added to the warehouse by a
migration is NOT published until it is added to a list below; then the next publish adds it to the
Iceberg table (schema evolution: a new optional column, NULL in the rows published before it). A
column is never renamed or retyped in place: that would break every reader's queries.

``price_history`` is partitioned by provider and by the *month of valid_to*, with every open
interval (``valid_to IS NULL``) in one partition per provider. A closed interval never changes
again, so a nightly publish rewrites only the small open partitions and appends the intervals closed
since the last publish to the current month; older partitions are never touched. A query "prices in
force at time T" (``valid_to > T OR valid_to IS NULL``) still prunes every month before T.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table.sorting import SortOrder
    from pyiceberg.types import IcebergType

Kind = Literal["long", "int", "double", "string", "timestamptz", "list<string>"]
Transform = Literal["identity", "month"]


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: Kind
    doc: str
    required: bool = False


@dataclass(frozen=True, slots=True)
class TableSpec:
    """One published table: where its rows come from in the warehouse and how they are laid out."""

    name: str
    source: str  # a warehouse table or view
    columns: tuple[Column, ...]
    partition: tuple[tuple[str, Transform], ...]
    sort: tuple[str, ...]
    doc: str
    # rows are only ever inserted, with increasing keys: a nightly publish appends the keys above the
    # largest one published (offers, scrape_runs); None: compared row by row every time
    append_key: str | None = None

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def select_sql(self, where: str = "") -> str:
        """The warehouse query for this table's rows: the declared columns only, in the declared order."""
        cols = ", ".join(self.column_names)
        clause = f" WHERE {where}" if where else ""
        return f"SELECT {cols} FROM {self.source}{clause} ORDER BY {', '.join(self.sort)}"

    def iceberg_schema(self) -> Schema:
        from pyiceberg.schema import Schema
        from pyiceberg.types import NestedField

        fields = []
        next_id = len(self.columns) + 1
        for i, c in enumerate(self.columns, start=1):
            kind, next_id = _iceberg_type(c.kind, next_id)
            fields.append(NestedField(i, c.name, kind, required=c.required, doc=c.doc))
        return Schema(*fields)

    def partition_spec(self, schema: Schema) -> PartitionSpec:
        from pyiceberg.partitioning import PartitionField, PartitionSpec
        from pyiceberg.transforms import IdentityTransform, MonthTransform

        fields = []
        for i, (column, transform) in enumerate(self.partition):
            source = schema.find_field(column)
            if transform == "identity":
                fields.append(PartitionField(source.field_id, 1000 + i, IdentityTransform(), column))
            else:
                fields.append(PartitionField(source.field_id, 1000 + i, MonthTransform(), f"{column}_month"))
        return PartitionSpec(*fields)

    def sort_order(self, schema: Schema) -> SortOrder:
        from pyiceberg.table.sorting import SortField, SortOrder
        from pyiceberg.transforms import IdentityTransform

        return SortOrder(*[SortField(schema.find_field(c).field_id, IdentityTransform()) for c in self.sort])

    def arrow_schema(self) -> pa.Schema:
        import pyarrow as pa

        types = {
            "long": pa.int64(),
            "int": pa.int32(),
            "double": pa.float64(),
            "string": pa.string(),
            "timestamptz": pa.timestamp("us", tz="UTC"),
            "list<string>": pa.list_(pa.string()),
        }
        return pa.schema([pa.field(c.name, types[c.kind], nullable=not c.required) for c in self.columns])


def _iceberg_type(kind: Kind, next_id: int) -> tuple[IcebergType, int]:
    from pyiceberg.types import DoubleType, IntegerType, ListType, LongType, StringType, TimestamptzType

    simple: dict[str, IcebergType] = {
        "long": LongType(),
        "int": IntegerType(),
        "double": DoubleType(),
        "string": StringType(),
        "timestamptz": TimestamptzType(),
    }
    if kind in simple:
        return simple[kind], next_id
    return ListType(next_id, StringType(), element_required=False), next_id + 1


def _c(name: str, kind: Kind, doc: str, required: bool = False) -> Column:
    return Column(name, kind, doc, required)


PRICE_HISTORY = TableSpec(
    name="price_history",
    source="price_history",
    columns=(
        _c("offer_id", "long", "key into offers", True),
        _c("provider", "string", "aws, gcp, azure, lambda, coreweave, vastai", True),
        _c("region", "string", "provider region; Lambda 'all'; Vast.ai the host's country code"),
        _c("instance_type", "string", "the provider's name for what is rented"),
        _c("gpu", "string", "canonical GPU name (see gpus)"),
        _c("gpu_count", "double", "GPUs per instance"),
        _c("pricing", "string", "on_demand, spot, interruptible, reserved_1y, reserved_3y", True),
        _c("usd_per_hour", "double", "price of the whole instance per hour, USD"),
        _c("usd_per_gpu_hour", "double", "usd_per_hour / gpu_count"),
        _c("valid_from", "timestamptz", "when the price took this value (UTC)", True),
        _c("valid_to", "timestamptz", "when it changed or the offer disappeared; NULL while current"),
        _c("last_seen", "timestamptz", "the last scrape that confirmed this price"),
        _c("first_run", "long", "scrape_runs.run_id that opened the interval"),
        _c("last_run", "long", "scrape_runs.run_id that last confirmed it"),
        _c("source", "string", "the URL the price was read from"),
    ),
    partition=(("provider", "identity"), ("valid_to", "month")),
    sort=("offer_id", "pricing", "valid_from"),
    doc="every price interval; open intervals (valid_to NULL) sit in one partition per provider",
)

OFFERS = TableSpec(
    name="offers",
    source="offers",
    columns=(
        _c("offer_id", "long", "key", True),
        _c("provider", "string", "provider", True),
        _c("region", "string", "provider region"),
        _c("instance_type", "string", "the provider's name for what is rented"),
        _c("gpu", "string", "canonical GPU name"),
        _c("gpu_count", "double", "GPUs per instance"),
        _c("vcpus", "int", "vCPUs per instance, where known"),
        _c("memory_gib", "double", "RAM per instance, GiB, where known"),
        _c("first_seen", "timestamptz", "first scrape that listed the offer (UTC)"),
    ),
    partition=(("provider", "identity"),),
    sort=("offer_id",),
    doc="one row per provider, region and instance type",
    append_key="offer_id",
)

SCRAPE_RUNS = TableSpec(
    name="scrape_runs",
    source="scrape_runs",
    columns=(
        _c("run_id", "long", "key", True),
        _c("provider", "string", "provider", True),
        _c("mode", "string", "live, replay, snapshot (or import)"),
        _c("started_at", "timestamptz", "run start (UTC)", True),
        _c("finished_at", "timestamptz", "run end (UTC)"),
        _c("observed_at", "timestamptz", "when the prices were fetched (the recorded time on replay)"),
        _c("status", "string", "ok, failed, skipped"),
        _c("offers", "int", "offers loaded"),
        _c("prices_changed", "int", "intervals opened"),
        _c("prices_closed", "int", "intervals closed"),
        _c("unknown_items", "int", "upstream items skipped"),
        _c("flags", "int", "large moves flagged"),
        _c("bytes_downloaded", "long", "bytes fetched"),
        _c("seconds", "double", "run time"),
        _c("error", "string", "why a run failed or was skipped"),
        _c("source_urls", "list<string>", "URLs read"),
        _c("parser_version", "string", "parser version"),
        _c("notes", "string", "notes"),
    ),
    partition=(("started_at", "month"),),
    sort=("run_id",),
    doc="one row per provider run",
    append_key="run_id",
)

GPUS = TableSpec(
    name="gpus",
    source="gpus",
    columns=(
        _c("name", "string", "canonical GPU name", True),
        _c("aliases", "list<string>", "other names accepted for it"),
        _c("vendor", "string", "vendor"),
        _c("architecture", "string", "architecture"),
        _c("form_factor", "string", "SXM, PCIe, ..."),
        _c("memory_gb", "double", "memory, GB"),
        _c("memory_bandwidth_gb_s", "double", "memory bandwidth, GB/s"),
        _c("bf16_tflops", "double", "dense BF16 TFLOPS; NULL where the GPU has no BF16 (V100, T4)"),
        _c("fp16_tflops", "double", "dense FP16 tensor TFLOPS (FP32 accumulate)"),
        _c("fp8_tflops", "double", "dense FP8 TFLOPS"),
        _c("tdp_w", "double", "board power, W"),
        _c("intra_node", "string", "GPU-to-GPU link inside a server"),
        _c("interconnect", "string", "interconnect"),
        _c("purchase_price_usd", "double", "typical purchase price of one GPU, USD"),
        _c("purchase_price_date", "string", "date of that price"),
        _c("purchase_price_source", "string", "source of that price"),
        _c("spec_source", "string", "source of the specifications"),
        _c("notes", "string", "notes"),
    ),
    partition=(),
    sort=("name",),
    doc="GPU reference data, with sources",
)

SPOT_RISK = TableSpec(
    name="spot_risk",
    source="spot_risk",
    columns=(
        _c("provider", "string", "provider", True),
        _c("region", "string", "region", True),
        _c("instance_type", "string", "instance type", True),
        _c("savings_pct", "double", "advertised saving against on-demand, %"),
        _c("bucket", "int", "interruption-frequency bucket"),
        _c("label", "string", "bucket label, e.g. <5%"),
        _c("interruption_pct_min", "double", "interrupted per month, lower bound, %"),
        _c("interruption_pct_max", "double", "interrupted per month, upper bound, %"),
        _c("observed_at", "timestamptz", "when it was read (UTC)"),
        _c("run_id", "long", "scrape_runs.run_id"),
        _c("source", "string", "the URL it was read from"),
    ),
    partition=(("provider", "identity"),),
    sort=("provider", "region", "instance_type"),
    doc="published interruption data (AWS Spot Advisor)",
)

# Commit order: reference tables first, facts last, so that a reader who sees a price_history row
# always finds its offer and its runs, even while a publish is under way or after one failed.
TABLES: tuple[TableSpec, ...] = (GPUS, OFFERS, SCRAPE_RUNS, SPOT_RISK, PRICE_HISTORY)
