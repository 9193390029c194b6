"""Beautiful Soup for the two HTML pages costopt reads (CoreWeave, Lambda), without its CSS selector engine.

``import bs4`` imports soupsieve (CSS selectors) eagerly, which compiles ~100 regular expressions:
about half of bs4's import time, paid on every refresh. costopt finds elements with ``find``/``find_all``
and never calls ``select``, so soupsieve is kept out while bs4 is imported (bs4 then simply has no CSS
support). Should something else in the process have imported soupsieve already, nothing changes.
"""

from __future__ import annotations

import sys
import warnings


def _import_bs4() -> None:
    if "bs4" in sys.modules or "soupsieve" in sys.modules:
        return
    sys.modules["soupsieve"] = None  # type: ignore[assignment]  # `import soupsieve` raises ImportError
    try:
        with warnings.catch_warnings():  # bs4 says at import that CSS selectors are unavailable: known
            warnings.filterwarnings("ignore", message="The soupsieve package is not installed")
            import bs4  # noqa: F401
    finally:
        del sys.modules["soupsieve"]


_import_bs4()

from bs4 import BeautifulSoup, NavigableString, Tag  # noqa: E402

__all__ = ["BeautifulSoup", "NavigableString", "Tag"]
