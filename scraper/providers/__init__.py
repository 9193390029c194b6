"""The explicit provider registry.

A literal table, not import side effects: ``tests/scraper/test_registry.py`` walks this package and
fails when a module is missing here or has no recorded fixtures. Classes are named by import path
so that ``costopt --help`` does not import six providers.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scraper.base import Provider

REGISTRY: dict[str, str] = {
    "aws": "scraper.providers.aws:AwsProvider",
    "azure": "scraper.providers.azure:AzureProvider",
    "coreweave": "scraper.providers.coreweave:CoreWeaveProvider",
    "gcp": "scraper.providers.gcp:GcpProvider",
    "lambda": "scraper.providers.lambda_cloud:LambdaProvider",
    "vastai": "scraper.providers.vastai:VastProvider",
}
# Sources named but not written yet; a module listed here may exist before it is registered.
PLANNED: dict[str, str] = {}
NAMES: tuple[str, ...] = tuple(REGISTRY)


def provider_class(name: str) -> type[Provider]:
    from warehouse.errors import UsageError

    if name in PLANNED:
        raise UsageError(f"provider {name!r} is planned but not implemented yet; available: {', '.join(NAMES)}")
    if name not in REGISTRY:
        raise UsageError(f"unknown provider {name!r}; known providers: {', '.join(NAMES)}")
    module, _, cls = REGISTRY[name].partition(":")
    return getattr(import_module(module), cls)  # type: ignore[no-any-return]
