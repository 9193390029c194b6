"""Where to publish: an Iceberg catalog (SQL: SQLite or PostgreSQL; or REST) and a warehouse location.

Both come from flags or the environment; credentials only ever from the environment (a password in
``--catalog-uri`` is refused, and nothing printed ever contains one). Without any configuration the
tables go to a local SQLite catalog beside costopt's data, which is enough to try it on one machine.

Environment:
    COSTOPT_ICEBERG_CATALOG_URI   sqlite:///path/catalog.db | postgresql://user@host/db | https://rest.example
    COSTOPT_ICEBERG_WAREHOUSE     a local directory or s3://bucket/prefix
    COSTOPT_ICEBERG_NAMESPACE     default ``costopt``
    COSTOPT_ICEBERG_TOKEN         REST bearer token;  COSTOPT_ICEBERG_CREDENTIAL  REST client_id:secret
    PGPASSWORD (or a password inside COSTOPT_ICEBERG_CATALOG_URI)     PostgreSQL
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL(_S3)   S3
    PYICEBERG_CATALOG__COSTOPT__<PROPERTY>   any other pyiceberg catalog property
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from warehouse.errors import CostoptError, UsageError

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

CATALOG_NAME = "costopt"
DEFAULT_NAMESPACE = "costopt"
ENV_URI = "COSTOPT_ICEBERG_CATALOG_URI"
ENV_WAREHOUSE = "COSTOPT_ICEBERG_WAREHOUSE"
ENV_NAMESPACE = "COSTOPT_ICEBERG_NAMESPACE"


class PublishError(CostoptError):
    """Publishing to the Iceberg catalog failed; the DuckDB warehouse is never affected."""


@dataclass(frozen=True, slots=True)
class IcebergTarget:
    """A resolved catalog + warehouse + namespace. ``describe()`` is safe to print."""

    kind: str  # sql | rest
    uri: str
    warehouse: str | None
    namespace: str

    def describe(self) -> str:
        where = f", warehouse {self.warehouse}" if self.warehouse else ""
        return f"{self.kind} catalog {redact(self.uri)}{where}, namespace {self.namespace}"


def redact(uri: str) -> str:
    """``scheme://user:secret@host`` -> ``scheme://user:***@host``."""
    return re.sub(r"(://[^:/@]+:)[^@/]*@", r"\1***@", uri)


def _has_password(uri: str) -> bool:
    return bool(re.search(r"://[^:/@]+:[^@/]*@", uri))


def default_location(data_dir: Path) -> tuple[str, str]:
    root = data_dir / "iceberg"
    return f"sqlite:///{root / 'catalog.db'}", str(root / "warehouse")


def resolve_target(
    catalog_uri: str | None,
    warehouse: str | None,
    namespace: str | None,
    *,
    env: Mapping[str, str] | None = None,
    data_dir: Path | None = None,
) -> IcebergTarget:
    """Flags win over the environment; with neither, a local SQLite catalog under the data dir."""
    env = os.environ if env is None else env
    if catalog_uri and _has_password(catalog_uri):
        raise UsageError(
            "--catalog-uri must not contain a password (it would show in the process list and shell history)",
            hint=f"set {ENV_URI} or PGPASSWORD in the environment instead",
        )
    uri = catalog_uri or env.get(ENV_URI) or None
    location = warehouse or env.get(ENV_WAREHOUSE) or None
    ns = namespace or env.get(ENV_NAMESPACE) or DEFAULT_NAMESPACE
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", ns):
        raise UsageError(f"namespace {ns!r}: use letters, digits and underscores (dots for nesting)")
    if uri is None:
        if data_dir is None:
            from warehouse.paths import data_dir as default_dir

            data_dir = default_dir()
        uri, default_wh = default_location(data_dir)
        location = location or default_wh
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    if scheme in ("http", "https"):
        kind = "rest"
    elif scheme == "sqlite" or scheme.startswith("postgresql") or scheme.startswith("postgres"):
        kind = "sql"
        if scheme.startswith("postgres") and not scheme.startswith("postgresql"):
            uri = "postgresql" + uri[len(scheme) :]
        if uri.startswith("postgresql://"):
            uri = "postgresql+psycopg2://" + uri[len("postgresql://") :]
        if not location:
            raise UsageError("a SQL catalog needs a warehouse location: --warehouse DIR or s3://bucket/prefix")
    else:
        raise UsageError(
            f"catalog URI {redact(uri)!r} not understood: use sqlite:///PATH, postgresql://USER@HOST/DB "
            "or an http(s) REST catalog URL"
        )
    return IcebergTarget(kind, uri, _location(location) if location else None, ns)


def _location(text: str) -> str:
    """A local path becomes an absolute ``file://`` URI; object-store URIs pass through."""
    if re.match(r"^[a-z][a-z0-9+.-]*://", text):
        return text.rstrip("/")
    return Path(text).expanduser().resolve().as_uri()


def catalog_properties(target: IcebergTarget, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """pyiceberg properties for ``target``; secrets are read from ``env`` here and never returned to print."""
    env = os.environ if env is None else env
    props: dict[str, str] = {"type": target.kind, "uri": target.uri}
    if target.warehouse:
        props["warehouse"] = target.warehouse
    if target.kind == "rest":
        if env.get("COSTOPT_ICEBERG_TOKEN"):
            props["token"] = env["COSTOPT_ICEBERG_TOKEN"]
        if env.get("COSTOPT_ICEBERG_CREDENTIAL"):
            props["credential"] = env["COSTOPT_ICEBERG_CREDENTIAL"]
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        props["s3.endpoint"] = endpoint
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        props["s3.region"] = region
    for key, prop in (
        ("AWS_ACCESS_KEY_ID", "s3.access-key-id"),
        ("AWS_SECRET_ACCESS_KEY", "s3.secret-access-key"),
        ("AWS_SESSION_TOKEN", "s3.session-token"),
    ):
        if env.get(key):
            props[prop] = env[key]
    return props


def open_catalog(target: IcebergTarget) -> Catalog:
    """Connect to the catalog (creating a SQL catalog's tables on first use)."""
    load_catalog = require_pyiceberg()
    props = catalog_properties(target)
    if target.kind == "sql" and target.uri.startswith("sqlite:///"):
        Path(target.uri[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
    if target.warehouse and target.warehouse.startswith("file://"):
        from urllib.parse import unquote, urlparse

        Path(unquote(urlparse(target.warehouse).path)).mkdir(parents=True, exist_ok=True)
    try:
        return load_catalog(CATALOG_NAME, **props)
    except Exception as exc:
        raise PublishError(f"cannot open the Iceberg catalog ({target.describe()}): {one_line(exc)}") from None


def require_pyiceberg():  # type: ignore[no-untyped-def]
    try:
        from pyiceberg.catalog import load_catalog
    except ImportError:
        raise PublishError(
            "publishing to Iceberg needs pyiceberg, which is not installed", hint="pip install 'costopt[iceberg]'"
        ) from None
    return load_catalog


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message, with any URI password masked."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return redact(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:300]
