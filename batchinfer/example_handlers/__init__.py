"""SageMaker handler scripts (``code/inference.py``) of the example models, one per framework.

Each is a complete module as a user writes one: ``model_fn``, ``input_fn``, ``predict_fn``
and ``output_fn`` of SageMaker's handler protocol, readable in AWS's framework inference
images as in batchinfer's. They share :mod:`.records` (how bodies are read and answers
written), which is copied beside them as ``code/example_records.py``.
"""

from pathlib import Path

HERE = Path(__file__).parent
FRAMEWORKS = ("sklearn", "xgboost", "lightgbm")
SHARED = "example_records.py"


def write_handler(framework: str, code_dir: Path) -> Path:
    """Write ``framework``'s handler as ``code_dir/inference.py`` (with its shared module);
    return its path."""
    code_dir.mkdir(parents=True, exist_ok=True)
    (code_dir / SHARED).write_text((HERE / "records.py").read_text())
    target = code_dir / "inference.py"
    target.write_text((HERE / f"{framework}_inference.py").read_text())
    return target
