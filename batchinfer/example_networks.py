"""The example classifier as a PyTorch network, saved for the default handler with no
``inference.py``: ``model.pt`` (TorchScript) or ``model.onnx`` (ONNX, exported from the same
network).

The network is a multilayer perceptron, 10 -> 32 -> 32 -> 1, that standardises the raw
features itself (their means and spreads are buffers of the module) and answers the
probability of the positive class, trained full-batch with Adam on the example data set.
"""

from pathlib import Path
from typing import Any

import numpy as np

from batchinfer.extras import import_extra

NETWORK_FILES = {"pytorch": "model.pt", "onnx": "model.onnx"}
_HIDDEN = 32
_STEPS = 200


def _network(features: np.ndarray, labels: np.ndarray) -> Any:
    """The trained network, in evaluation mode."""
    torch = import_extra("torch")
    nn = torch.nn

    class Classifier(nn.Module):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("mean", torch.tensor(features.mean(axis=0), dtype=torch.float32))
            self.register_buffer("scale", torch.tensor(features.std(axis=0), dtype=torch.float32))
            width = features.shape[1]
            self.layers = nn.Sequential(
                nn.Linear(width, _HIDDEN),
                nn.ReLU(),
                nn.Linear(_HIDDEN, _HIDDEN),
                nn.ReLU(),
                nn.Linear(_HIDDEN, 1),
            )

        def forward(self, x: Any) -> Any:
            return torch.sigmoid(self.layers((x - self.mean) / self.scale)).squeeze(1)

    torch.manual_seed(0)
    network = Classifier()
    inputs = torch.tensor(features, dtype=torch.float32)
    targets = torch.tensor(labels, dtype=torch.float32)
    optimiser = torch.optim.Adam(network.parameters(), lr=0.005, weight_decay=0.01)
    loss = nn.BCELoss()
    for _ in range(_STEPS):
        optimiser.zero_grad()
        loss(network(inputs), targets).backward()
        optimiser.step()
    return network.eval()


def save_network(model_dir: Path, framework: str, features: np.ndarray, labels: np.ndarray) -> Path:
    """Train the network on ``features``/``labels`` and save it as ``framework``'s file in
    ``model_dir``; return its path."""
    torch = import_extra("torch")
    network = _network(features, labels)
    path = model_dir / NETWORK_FILES[framework]
    example = torch.zeros(2, features.shape[1])
    if framework == "pytorch":
        torch.jit.save(torch.jit.trace(network, example), str(path))
    else:
        import_extra("onnx")  # the exporter writes with it
        torch.onnx.export(
            network,
            (example,),
            str(path),
            dynamo=False,
            input_names=["features"],
            output_names=["probability"],
            dynamic_axes={"features": {0: "records"}, "probability": {0: "records"}},
        )
    return path
