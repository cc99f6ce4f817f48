"""The project's tests. A regular package, so that ``tests.support`` is this folder's even
where a dependency installs a ``tests`` package of its own (smdebug-rulesconfig does)."""
