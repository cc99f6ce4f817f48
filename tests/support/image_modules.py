"""``batchinfer/serving/image_modules.txt``, generated from requirements.txt.

``python -m tests.support.image_modules`` (from the repository root, in the venv that
requirements.txt pins) rewrites it; tests/unit/serving/test_image_imports.py fails while it is
stale.
"""

from pathlib import Path

from packaging.requirements import Requirement

from batchinfer.serving.image_imports import IMAGE_MODULES, distribution_modules
from batchinfer.serving.model_requirements import read_requirements

ROOT = Path(__file__).resolve().parents[2]
HEADER = """\
# The top-level modules batchinfer's image installs, and the distribution of each: those of
# requirements.txt, batchinfer itself and everything they depend on. Generated from
# requirements.txt by `python -m tests.support.image_modules`; a unit test fails while stale.
"""


def image_modules_text() -> str:
    """What ``image_modules.txt`` holds for the current requirements.txt."""
    roots = [*read_requirements(ROOT / "requirements.txt"), Requirement("batchinfer")]
    modules = distribution_modules(roots)
    return HEADER + "".join(f"{module} {modules[module]}\n" for module in sorted(modules))


if __name__ == "__main__":
    IMAGE_MODULES.write_text(image_modules_text())
    print(f"wrote {IMAGE_MODULES.relative_to(ROOT)}")
