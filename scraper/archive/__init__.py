"""Public price archives kept in git, read commit by commit into price history.

The same split as the scrapers: ``git`` is the "fetch" (reading git objects, the only code that runs
git), ``skypilot`` and ``cyclenerd`` are pure parsers (bytes in, records out), ``intervals`` turns a
series of snapshots into price intervals, and ``importer`` ties them together and hands the result to
``warehouse.archive`` to load.
"""
