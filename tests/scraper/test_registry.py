"""The provider registry is explicit, complete, and every provider's recordings pass the shared invariants."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import httpx
import pytest

import scraper.providers as package
from scraper.base import Provider
from scraper.replay import ReplayTransport, load_manifest
from scraper.validate import problems
from tests.scraper.support import FIXTURES, replay, replay_parse
from warehouse.gpus import catalog


def provider_classes_in_package() -> dict[str, type[Provider]]:
    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Provider) and cls is not Provider and cls.__module__ == module.__name__:
                found[f"{module.__name__}:{cls.__name__}"] = cls
    return found


def test_every_provider_class_is_registered_and_every_entry_resolves():
    defined = provider_classes_in_package()
    assert set(package.REGISTRY.values()) <= set(defined)
    assert set(defined) <= set(package.REGISTRY.values()) | set(package.PLANNED.values())
    for name in package.NAMES:
        cls = package.provider_class(name)
        assert cls.name == name
        assert cls.base_urls, f"{name} declares no overridable base URL"
        assert all(var.startswith("COSTOPT_") for var in cls.base_urls), cls.base_urls


def test_the_six_providers_of_the_brief():
    assert set(package.NAMES) == {"aws", "gcp", "azure", "lambda", "coreweave", "vastai"}


def test_registered_and_planned_providers_are_the_brief_s_six():
    assert set(package.NAMES) | set(package.PLANNED) == {"aws", "gcp", "azure", "lambda", "coreweave", "vastai"}


@pytest.mark.parametrize("name", package.NAMES)
def test_every_provider_has_recorded_fixtures(name):
    assert (FIXTURES / name / "replay.json").is_file()
    assert (FIXTURES / name / "README.md").is_file(), "fixtures must say where their figures come from"


@pytest.mark.parametrize("name", package.NAMES)
def test_shared_invariants_over_each_providers_recordings(name):
    _, result = replay_parse(name)
    assert result.prices, f"{name}: the recording yields no prices"
    gpus = catalog()
    keys = [r.key for r in result.prices]
    assert len(keys) == len(set(keys)), "duplicate keys"
    for record in result.prices:
        assert record.provider == name
        assert problems(record, gpus) == [], (record.key, problems(record, gpus))
        assert record.usd_per_gpu_hour == pytest.approx(record.usd_per_hour / record.gpu_count)
        assert record.source.startswith("https://"), record.source
        assert record.observed_at.tzinfo is not None


class _Flaky(httpx.AsyncBaseTransport):
    """Answers each URL's first request with a failure, then serves the recording."""

    def __init__(self, inner: httpx.AsyncBaseTransport, failure: str) -> None:
        self.inner, self.failure, self.seen = inner, failure, set()
        self.failures = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        key = str(request.url)
        if key not in self.seen:
            self.seen.add(key)
            self.failures += 1
            if self.failure == "timeout":
                raise httpx.ReadTimeout("timed out", request=request)
            return httpx.Response(int(self.failure))  # 429 without Retry-After (as Vast sends), or a 5xx
        return await self.inner.handle_async_request(request)


@pytest.mark.parametrize("failure", ["429", "503", "timeout"])
@pytest.mark.parametrize("name", package.NAMES)
def test_every_provider_retries_a_transient_failure_and_gets_the_same_prices(name, failure):
    provider = package.provider_class(name).from_env({}, replay=True)
    transport = _Flaky(ReplayTransport(load_manifest(FIXTURES / name)), failure)
    payloads = replay(name, transport=transport, attempts=2)
    assert transport.failures >= 1  # every first request failed, so every payload is a retry's
    assert {r.key: r.usd_per_hour for r in provider.parse(payloads).prices} == {
        r.key: r.usd_per_hour for r in replay_parse(name)[1].prices
    }
