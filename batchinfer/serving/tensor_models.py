"""Deep-learning models the default ``model_fn`` loads: TorchScript (``*.pt``, ``*.pth``) with
PyTorch and ONNX (``*.onnx``) with ONNX Runtime, each behind the estimator interface the
default ``predict_fn`` calls (``predict``).

Both take the decoded records as float32 and answer a NumPy array on the host. A TorchScript
model is loaded onto the worker's device (the first GPU it sees, else the CPU) and run under
``torch.inference_mode()``; an ONNX model runs on CUDA where ONNX Runtime offers it, else on
the CPU, and answers its first output. Both take their CPU threads from OMP_NUM_THREADS
(the worker's share of the cores, :mod:`batchinfer.serving.server`): PyTorch reads it
itself, ONNX Runtime is told. Neither knows its number of features beyond what the
file declares: an ONNX input of fixed width is checked as a scikit-learn model's is.
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from batchinfer.extras import import_extra
from batchinfer.serving.codecs import host_values
from batchinfer.serving.server_errors import RequestError


def _float32(features: Any) -> np.ndarray:
    """The records as a float32 matrix (a DataFrame by its columns' values)."""
    values = features.to_numpy() if hasattr(features, "to_numpy") else features
    try:
        return np.ascontiguousarray(values, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise RequestError(400, f"records are not numbers the model can take: {exc}") from None


def _one_output(output: Any, source: str) -> np.ndarray:
    """A module's one output tensor as a NumPy array on the host."""
    if isinstance(output, tuple | list | dict):
        raise TypeError(
            f"{source} returned {len(output)} outputs; define predict_fn in inference.py "
            "to choose what to answer"
        )
    return np.asarray(host_values(output))


@dataclass(frozen=True)
class TorchScriptModel:
    """A TorchScript module on a device: ``predict`` runs one forward pass."""

    module: Any
    device: Any
    path: Path

    def predict(self, features: Any) -> np.ndarray:
        torch = import_extra("torch")
        batch = torch.from_numpy(_float32(features)).to(self.device)
        with torch.inference_mode():
            return _one_output(self.module(batch), self.path.name)


def worker_device() -> Any:
    """The device a worker's model runs on: the first GPU it sees, else the CPU."""
    torch = import_extra("torch")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_torchscript(path: Path) -> TorchScriptModel:
    torch = import_extra("torch")
    device = worker_device()
    module = torch.jit.load(str(path), map_location=device)
    module.eval()
    return TorchScriptModel(module, device, path)


@dataclass(frozen=True)
class OnnxModel:
    """An ONNX Runtime session: ``predict`` feeds its one input and answers its first output."""

    session: Any
    input_name: str
    n_features_in_: int | None  # the input's fixed width, None when the file leaves it open

    def predict(self, features: Any) -> np.ndarray:
        outputs = self.session.run(None, {self.input_name: _float32(features)})
        return np.asarray(outputs[0])


def load_onnx(path: Path) -> OnnxModel:
    ort = import_extra("onnxruntime")
    preferred = ("CUDAExecutionProvider", "CPUExecutionProvider")
    providers = [p for p in preferred if p in ort.get_available_providers()]
    options = ort.SessionOptions()
    # ONNX Runtime sizes its pool by the cores alone: it gets the worker's share, as OpenMP does.
    options.intra_op_num_threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0)
    session = ort.InferenceSession(str(path), options, providers=providers)
    inputs = session.get_inputs()
    if len(inputs) != 1:
        names = ", ".join(i.name for i in inputs)
        raise ValueError(
            f"it has {len(inputs)} inputs ({names}); the default handler feeds one: "
            "define model_fn and predict_fn in inference.py"
        )
    shape = inputs[0].shape
    width = shape[1] if len(shape) == 2 and isinstance(shape[1], int) else None
    return OnnxModel(session, inputs[0].name, width)
