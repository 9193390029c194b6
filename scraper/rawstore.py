"""Raw payloads kept content-addressed beside the warehouse, so a parser fix can re-read history.

Small bodies are gzip-compressed; bulk files (AWS offer CSVs) are moved in as they are, to avoid
re-compressing gigabytes every night. Identical content is stored once.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import threading
from pathlib import Path

from scraper.base import RawPayload
from warehouse.load import RawRow
from warehouse.paths import raw_relative

COMPRESS_BELOW = 64 * 1024 * 1024


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _part(target: Path) -> Path:
    """The temporary name a file is written under before its rename: this process's own, so that two refreshes
    storing the same content at once (a manual one during the nightly run) do not write into, and rename away,
    one another's file (a fixed ``<sha>.part`` failed one of them: "cannot keep the raw payloads")."""
    return target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.part")


def store(root: Path, payload: RawPayload) -> RawRow:
    """Write ``payload`` under ``root`` (atomically: ``.part`` then rename) and describe it.

    The path recorded is relative to ``root`` (``warehouse.paths.raw_relative``), so it follows the warehouse.
    """
    if payload.not_modified:
        return RawRow(payload.url, payload.fetched_at, payload.status, None, 0, None, True, payload.scope)
    if payload.path is not None:
        sha = _sha256_file(payload.path)
        target = root / sha[:2] / f"{sha}.raw"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            part = _part(target)
            shutil.copyfile(payload.path, part)
            os.replace(part, target)
        return RawRow(
            payload.url,
            payload.fetched_at,
            payload.status,
            sha,
            payload.size,
            raw_relative(root, target),
            False,
            payload.scope,
        )
    sha = hashlib.sha256(payload.body).hexdigest()
    target = root / sha[:2] / (f"{sha}.gz" if len(payload.body) < COMPRESS_BELOW else f"{sha}.raw")
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        part = _part(target)
        if target.suffix == ".gz":
            with gzip.open(part, "wb", compresslevel=6) as handle:
                handle.write(payload.body)
        else:
            part.write_bytes(payload.body)
        os.replace(part, target)
    return RawRow(
        payload.url,
        payload.fetched_at,
        payload.status,
        sha,
        len(payload.body),
        raw_relative(root, target),
        False,
        payload.scope,
    )


def read(path: Path) -> bytes:
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as handle:
            return handle.read()
    return path.read_bytes()
