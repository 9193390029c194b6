"""Numbered schema migrations, recorded in the database itself.

Never edit a migration that has shipped: add the next one. A database whose recorded version is
newer than the last migration here was written by a newer costopt, and is refused rather than
misread.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "initial schema",
        """
CREATE SEQUENCE offer_ids START 1;
CREATE SEQUENCE run_ids START 1;

CREATE TABLE gpus (
    name VARCHAR PRIMARY KEY,
    aliases VARCHAR[],
    vendor VARCHAR,
    architecture VARCHAR,
    form_factor VARCHAR,
    memory_gb DOUBLE,
    memory_bandwidth_gb_s DOUBLE,
    bf16_tflops DOUBLE,
    fp8_tflops DOUBLE,
    tdp_w DOUBLE,
    intra_node VARCHAR,
    interconnect VARCHAR,
    purchase_price_usd DOUBLE,
    purchase_price_date VARCHAR,
    purchase_price_source VARCHAR,
    spec_source VARCHAR,
    notes VARCHAR
);

CREATE TABLE scrape_runs (
    run_id BIGINT PRIMARY KEY,
    provider VARCHAR NOT NULL,
    mode VARCHAR NOT NULL,               -- live | replay | snapshot
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    observed_at TIMESTAMPTZ,             -- when the prices were fetched (recorded time on replay)
    status VARCHAR NOT NULL,             -- ok | failed | skipped
    offers INTEGER DEFAULT 0,
    prices_changed INTEGER DEFAULT 0,
    prices_closed INTEGER DEFAULT 0,
    unknown_items INTEGER DEFAULT 0,
    flags INTEGER DEFAULT 0,
    bytes_downloaded BIGINT DEFAULT 0,
    seconds DOUBLE,
    error VARCHAR,
    source_urls VARCHAR[],
    parser_version VARCHAR,
    notes VARCHAR
);

CREATE TABLE raw_payloads (
    run_id BIGINT NOT NULL,
    url VARCHAR NOT NULL,
    fetched_at TIMESTAMPTZ NOT NULL,
    status INTEGER NOT NULL,
    sha256 VARCHAR,
    bytes BIGINT,
    path VARCHAR,
    not_modified BOOLEAN DEFAULT false
);

CREATE TABLE offers (
    offer_id BIGINT PRIMARY KEY DEFAULT nextval('offer_ids'),
    provider VARCHAR NOT NULL,
    region VARCHAR NOT NULL,
    instance_type VARCHAR NOT NULL,
    gpu VARCHAR NOT NULL,
    gpu_count DOUBLE NOT NULL,
    vcpus INTEGER,
    memory_gib DOUBLE,
    first_seen TIMESTAMPTZ NOT NULL,
    UNIQUE (provider, region, instance_type)
);

-- Price history as intervals: a new row only when the price changes or the offer reappears.
CREATE TABLE prices (
    offer_id BIGINT NOT NULL,
    pricing VARCHAR NOT NULL,
    usd_per_hour DOUBLE NOT NULL,
    valid_from TIMESTAMPTZ NOT NULL,
    valid_to TIMESTAMPTZ,                -- NULL while the price is current
    last_seen TIMESTAMPTZ NOT NULL,      -- the last run that confirmed it
    first_run BIGINT NOT NULL,
    last_run BIGINT NOT NULL,
    source VARCHAR
);

-- Marketplace distributions (Vast.ai): one row per group and run.
CREATE TABLE market_stats (
    run_id BIGINT NOT NULL,
    offer_id BIGINT NOT NULL,
    pricing VARCHAR NOT NULL,
    observed_at TIMESTAMPTZ NOT NULL,
    offer_count INTEGER NOT NULL,
    min_usd DOUBLE, p10_usd DOUBLE, median_usd DOUBLE, max_usd DOUBLE
);

CREATE TABLE spot_risk (
    provider VARCHAR NOT NULL,
    region VARCHAR NOT NULL,
    instance_type VARCHAR NOT NULL,
    savings_pct DOUBLE,
    bucket INTEGER,
    label VARCHAR,
    interruption_pct_min DOUBLE,
    interruption_pct_max DOUBLE,
    observed_at TIMESTAMPTZ,
    run_id BIGINT,
    source VARCHAR,
    PRIMARY KEY (provider, region, instance_type)
);

-- Moves of more than the flag threshold against the last observation: loaded, and flagged.
CREATE TABLE price_flags (
    run_id BIGINT NOT NULL,
    offer_id BIGINT NOT NULL,
    pricing VARCHAR NOT NULL,
    old_usd DOUBLE,
    new_usd DOUBLE,
    change_pct DOUBLE,
    kind VARCHAR
);

-- Conditional-GET validators and provider change markers, kept from the last successful run.
CREATE TABLE http_validators (
    provider VARCHAR NOT NULL,
    url VARCHAR NOT NULL,
    etag VARCHAR,
    last_modified VARCHAR,
    updated_at TIMESTAMPTZ,
    PRIMARY KEY (provider, url)
);
CREATE TABLE provider_state (
    provider VARCHAR NOT NULL,
    key VARCHAR NOT NULL,
    value VARCHAR,
    updated_at TIMESTAMPTZ,
    PRIMARY KEY (provider, key)
);

CREATE VIEW price_history AS
SELECT o.provider, o.region, o.instance_type, o.gpu, o.gpu_count, p.pricing,
       p.usd_per_hour, p.usd_per_hour / o.gpu_count AS usd_per_gpu_hour,
       p.valid_from, p.valid_to, p.last_seen, p.source, o.offer_id, p.first_run, p.last_run
FROM prices p JOIN offers o USING (offer_id);

CREATE VIEW current_prices AS
SELECT provider, region, instance_type, gpu, gpu_count, pricing, usd_per_hour, usd_per_gpu_hour,
       last_seen AS observed_at, valid_from AS price_since,
       round(epoch(now() - last_seen) / 3600.0, 2) AS age_hours, source, offer_id
FROM price_history WHERE valid_to IS NULL;

CREATE MACRO prices_as_of(ts) AS TABLE
SELECT * FROM price_history
WHERE valid_from <= ts::TIMESTAMPTZ AND (valid_to IS NULL OR valid_to > ts::TIMESTAMPTZ);

-- one row per GPU, provider, pricing kind and day on which an interval was in force; a range join
-- against a calendar (DuckDB's IEJoin) rather than expanding every interval into days
CREATE VIEW gpu_hourly AS
WITH days AS (
    SELECT unnest(generate_series(date_trunc('day', (SELECT min(valid_from) FROM prices)),
                                  date_trunc('day', (SELECT max(last_seen) FROM prices)),
                                  INTERVAL 1 DAY)) AS day
)
SELECT h.gpu, h.provider, h.pricing, d.day::DATE AS day,
       min(h.usd_per_gpu_hour) AS min_usd_per_gpu_hour,
       median(h.usd_per_gpu_hour) AS median_usd_per_gpu_hour,
       max(h.usd_per_gpu_hour) AS max_usd_per_gpu_hour,
       count(*) AS offers
FROM price_history h
JOIN days d ON h.valid_from < d.day + INTERVAL 1 DAY AND coalesce(h.valid_to, h.last_seen) > d.day
GROUP BY ALL;

CREATE VIEW market_current AS
SELECT o.provider, o.region, o.instance_type, o.gpu, o.gpu_count, m.pricing, m.observed_at,
       m.offer_count, m.min_usd, m.p10_usd, m.median_usd, m.max_usd
FROM market_stats m JOIN offers o USING (offer_id)
WHERE m.run_id = (SELECT max(run_id) FROM market_stats m2 WHERE m2.offer_id = m.offer_id);
""",
    ),
]

MIGRATIONS.append(
    (
        2,
        "alerts and payload scopes",
        """
-- What a run noticed against the previous state: large moves, offers gone or new, a provider
-- failing run after run, a provider returning far fewer offers than usual.
CREATE TABLE alerts (
    run_id BIGINT,
    provider VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    severity VARCHAR NOT NULL,           -- info | warning | error
    message VARCHAR NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
-- the (region, pricing) a payload covers, so a re-parse can carry unchanged scopes forward
ALTER TABLE raw_payloads ADD COLUMN scope VARCHAR[];
""",
    )
)

MIGRATIONS.append(
    (
        3,
        "source counts per run; no zero-length intervals",
        """
-- How many offers each source of a provider gave in each run (a scope: an AWS region's price file,
-- the spot feed, the Spot Advisor, an Azure region and pricing kind, a Vast.ai pricing kind, ...).
-- The mass-disappearance guard compares a run's counts with the last good run's.
CREATE TABLE run_scopes (
    run_id BIGINT NOT NULL,
    provider VARCHAR NOT NULL,
    scope VARCHAR NOT NULL,
    offers INTEGER NOT NULL,             -- priced offers read from the source (Vast.ai: listings)
    PRIMARY KEY (run_id, scope)
);
-- A reload at the same observation time (costopt reparse) used to close the open interval at T and
-- open another at T: the [T, T) intervals it left were never in force, yet counted for day T.
DELETE FROM prices WHERE valid_to IS NOT NULL AND valid_to <= valid_from;
""",
    )
)

MIGRATIONS.append(
    (
        4,
        "price provenance and marketplace listings",
        """
-- When the source itself vouches for a price (an AWS offer file's publication, a recording's
-- declared vintage; NULL: the observation time), how that time was obtained, and the source's own
-- "in effect since" date where it gives one (Azure effectiveStartDate).
ALTER TABLE prices ADD COLUMN source_time TIMESTAMPTZ;
ALTER TABLE prices ADD COLUMN source_basis VARCHAR;
ALTER TABLE prices ADD COLUMN effective_since TIMESTAMPTZ;
-- Every listing of a marketplace group in the run, cheapest first: what a plan needs to price
-- renting k of them and to filter them by country and reliability.
ALTER TABLE market_stats ADD COLUMN listings STRUCT(usd_per_hour DOUBLE, country VARCHAR, reliability DOUBLE)[];
-- Where a run's data came from: live | recorded | derived | generated (replay manifests declare
-- the last three), and the declared vintage of derived or generated figures.
ALTER TABLE scrape_runs ADD COLUMN data_origin VARCHAR;
ALTER TABLE scrape_runs ADD COLUMN figures_as_of TIMESTAMPTZ;

CREATE OR REPLACE VIEW price_history AS
SELECT o.provider, o.region, o.instance_type, o.gpu, o.gpu_count, p.pricing,
       p.usd_per_hour, p.usd_per_hour / o.gpu_count AS usd_per_gpu_hour,
       p.valid_from, p.valid_to, p.last_seen, p.source, o.offer_id, p.first_run, p.last_run,
       coalesce(p.source_time, p.last_seen) AS source_time, coalesce(p.source_basis, 'observed') AS source_basis,
       p.effective_since
FROM prices p JOIN offers o USING (offer_id);

CREATE OR REPLACE VIEW current_prices AS
SELECT h.provider, h.region, h.instance_type, h.gpu, h.gpu_count, h.pricing, h.usd_per_hour, h.usd_per_gpu_hour,
       h.last_seen AS observed_at, h.valid_from AS price_since,
       round(epoch(now() - h.last_seen) / 3600.0, 2) AS age_hours, h.source, h.offer_id,
       h.source_time, h.source_basis,
       round(epoch(now() - h.source_time) / 3600.0, 2) AS source_age_hours,
       h.effective_since, coalesce(r.data_origin, 'unknown') AS data_origin
FROM price_history h LEFT JOIN scrape_runs r ON r.run_id = h.last_run
WHERE h.valid_to IS NULL;

CREATE OR REPLACE VIEW market_current AS
SELECT o.provider, o.region, o.instance_type, o.gpu, o.gpu_count, m.pricing, m.observed_at,
       m.offer_count, m.min_usd, m.p10_usd, m.median_usd, m.max_usd, m.listings
FROM market_stats m JOIN offers o USING (offer_id)
WHERE m.run_id = (SELECT max(run_id) FROM market_stats m2 WHERE m2.offer_id = m.offer_id);
""",
    )
)

MIGRATIONS.append(
    (
        5,
        "imported price archives",
        """
-- Where each imported price came from: the archive (a git repository), the commit that first showed
-- this price, and the file in it. NULL on prices a scrape observed.
ALTER TABLE prices ADD COLUMN archive_repository VARCHAR;
ALTER TABLE prices ADD COLUMN archive_commit VARCHAR;
ALTER TABLE prices ADD COLUMN archive_path VARCHAR;

-- Prices of a GPU alone, without the machine it must be attached to (SkyPilot's GCP rows for GPUs
-- such as T4 or V100 that attach to any N1 machine). Kept apart from ``prices`` so that no view, and
-- so neither ``plan`` nor ``history``, can take one for the price of a machine.
CREATE TABLE gpu_part_prices (
    provider VARCHAR NOT NULL,
    region VARCHAR NOT NULL,
    gpu VARCHAR NOT NULL,                -- canonical GPU name
    gpu_count DOUBLE NOT NULL,
    pricing VARCHAR NOT NULL,
    usd_per_hour DOUBLE NOT NULL,        -- for gpu_count GPUs, without any machine
    valid_from TIMESTAMPTZ NOT NULL,
    valid_to TIMESTAMPTZ NOT NULL,
    last_seen TIMESTAMPTZ NOT NULL,
    first_run BIGINT NOT NULL,
    last_run BIGINT NOT NULL,
    source VARCHAR,
    archive_repository VARCHAR,
    archive_commit VARCHAR,
    archive_path VARCHAR
);

-- How far each file of each archive has been imported, so the next import reads only new commits.
CREATE TABLE archive_imports (
    repository VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    format VARCHAR NOT NULL,             -- skypilot | cyclenerd
    provider VARCHAR NOT NULL,
    first_commit VARCHAR,
    first_observed TIMESTAMPTZ,
    last_commit VARCHAR NOT NULL,        -- the tip the last import reached
    last_observed TIMESTAMPTZ NOT NULL,  -- that tip's commit time: where imported intervals end
    observations INTEGER NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repository, path)
);
""",
    )
)

MIGRATIONS.append(
    (
        6,
        "fp16 tensor rate apart from bf16",
        """
-- The dense FP16 tensor rate, apart from BF16: Volta (V100) and Turing (T4) have FP16 tensor cores and
-- no BF16, yet bf16_tflops held their FP16 rate. From here bf16_tflops is NULL on those GPUs and a bf16
-- job runs there in fp16 mixed precision; every other GPU has one rate for both.
ALTER TABLE gpus ADD COLUMN fp16_tflops DOUBLE;
UPDATE gpus SET fp16_tflops = bf16_tflops;
UPDATE gpus SET bf16_tflops = NULL WHERE architecture IN ('Volta', 'Turing');
""",
    )
)

MIGRATIONS.append(
    (
        7,
        "gpu_hourly counts offers, and sees a price observed at midnight",
        """
-- offers: distinct offers, not price intervals (an offer repriced that day counted twice, and its two prices
-- both entered the median); the median and the minimum are over each offer's cheapest price of the day. An open
-- price whose last sighting is exactly midnight (observed once, at 00:00 UTC) covered no time and was missing.
CREATE OR REPLACE VIEW gpu_hourly AS
WITH days AS (
    SELECT unnest(generate_series(date_trunc('day', (SELECT min(valid_from) FROM prices)),
                                  date_trunc('day', (SELECT max(last_seen) FROM prices)),
                                  INTERVAL 1 DAY)) AS day
),
per_offer AS (
    SELECT h.gpu, h.provider, h.pricing, d.day::DATE AS day, h.offer_id,
           min(h.usd_per_gpu_hour) AS cheapest, max(h.usd_per_gpu_hour) AS dearest
    FROM price_history h
    JOIN days d ON h.valid_from < d.day + INTERVAL 1 DAY
               AND (h.valid_to > d.day OR (h.valid_to IS NULL AND h.last_seen >= d.day))
    GROUP BY ALL
)
SELECT gpu, provider, pricing, day,
       min(cheapest) AS min_usd_per_gpu_hour,
       median(cheapest) AS median_usd_per_gpu_hour,
       max(dearest) AS max_usd_per_gpu_hour,
       count(*) AS offers
FROM per_offer
GROUP BY ALL;
""",
    )
)

LATEST = MIGRATIONS[-1][0]
