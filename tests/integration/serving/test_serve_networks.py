"""Deep-learning models: TorchScript (model.pt) and ONNX (model.onnx) served by the default
handler with no inference.py, the PyTorch toolkit's handler signatures (``context``), tensors
answered by a user predict_fn, and forward passes of at most BATCHINFER_MAX_BATCH_RECORDS
(numeric CSV decoded a run of whole forward batches at a time, predicted a batch at a time).

Tolerance: a served float32 prediction is written in its shortest round-trip form, so it
reads back as the very float32 the model computed; served and in-process outputs of one
runtime are compared exactly, ONNX Runtime against PyTorch within 1e-5."""

import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from batchinfer.examples import train_framework_model
from batchinfer.serving import codecs, handlers
from batchinfer.serving.handlers import load_handler
from batchinfer.serving.server_errors import ModelLoadError, RequestError
from tests.integration.serving.helpers import csv_body


@pytest.fixture(scope="module")
def networks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example network as trained by `batchinfer example`: model.pt and model.onnx."""
    where = tmp_path_factory.mktemp("networks")
    for framework in ("pytorch", "onnx"):
        train_framework_model(where / framework, framework)
    return where


def _floats(reply) -> np.ndarray:
    assert reply.status == 200, reply.text
    return np.array([float(line) for line in reply.text.splitlines()], dtype=np.float32)


def _values(answer: bytes) -> np.ndarray:
    """The numbers of a CSV or JSON Lines answer of one value a record."""
    return np.array([float(line.strip(b"[]")) for line in answer.splitlines()])


def _torch_outputs(model_file: Path, rows: np.ndarray) -> np.ndarray:
    module = torch.jit.load(str(model_file))
    with torch.inference_mode():
        return module(torch.tensor(rows, dtype=torch.float32)).numpy()


def test_torchscript_model_pt_is_served_with_no_inference_py(serve, networks, example_rows):
    model_dir = networks / "pytorch"
    assert sorted(p.name for p in model_dir.iterdir()) == ["model.pt"]
    reply = serve(model_dir, workers=2).invoke(csv_body(example_rows), accept="text/csv")
    expected = _torch_outputs(model_dir / "model.pt", example_rows)
    np.testing.assert_array_equal(_floats(reply), expected)
    assert expected.min() > 0 and expected.max() < 1  # probabilities of the positive class


def test_onnx_model_is_served_with_no_inference_py(serve, networks, example_rows):
    import onnxruntime

    model_dir = networks / "onnx"
    reply = serve(model_dir).invoke(csv_body(example_rows), accept="text/csv")
    session = onnxruntime.InferenceSession(str(model_dir / "model.onnx"))
    (expected,) = session.run(None, {"features": example_rows.astype(np.float32)})
    np.testing.assert_array_equal(_floats(reply), expected)
    torch_said = _torch_outputs(networks / "pytorch" / "model.pt", example_rows)
    np.testing.assert_allclose(expected, torch_said, atol=1e-5)


def test_a_wrong_width_is_refused_naming_the_onnx_input_width(serve, networks, example_rows):
    reply = serve(networks / "onnx").invoke(csv_body(example_rows[:, :4]))
    assert reply.status == 400
    assert reply.text == "records have 4 values each but the model expects 10 features"


def test_a_corrupt_model_pt_names_the_file_and_the_cause(tmp_path):
    (tmp_path / "model.pt").write_bytes(b"not a TorchScript archive")
    with pytest.raises(ModelLoadError, match=r"model\.pt: cannot be loaded: RuntimeError: "):
        load_handler(tmp_path, env={})


def test_an_onnx_model_with_two_inputs_is_refused_naming_them(tmp_path):
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [None, 2]) for n in "ab"]
    output = helper.make_tensor_value_info("sum", TensorProto.FLOAT, [None, 2])
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["sum"])], "g", inputs, [output])
    onnx.save(helper.make_model(graph), tmp_path / "model.onnx")
    with pytest.raises(ModelLoadError, match=r"it has 2 inputs \(a, b\); the default handler"):
        load_handler(tmp_path, env={})


def test_a_module_with_several_outputs_is_told_to_choose_in_predict_fn(tmp_path, example_rows):
    class Both(torch.nn.Module):
        def forward(self, x):
            return x.sum(dim=1), x.mean(dim=1)

    torch.jit.save(torch.jit.script(Both()), str(tmp_path / "model.pt"))
    handler = load_handler(tmp_path, env={})
    with pytest.raises(TypeError, match=r"model\.pt returned 2 outputs; define predict_fn"):
        handler.invoke(csv_body(example_rows), "text/csv", "text/csv")


def test_a_tensor_with_grad_from_predict_fn_is_answered_not_a_500(serve, tmp_path, user_module):
    """A predict_fn that runs the module without inference_mode returns a tensor that
    requires grad: it is encoded as the array it holds (AWS's toolkit users do this)."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(10, 2)
    torch.save(layer.state_dict(), tmp_path / "weights.pth")
    user_module(
        tmp_path,
        """
        import torch

        def model_fn(model_dir):
            layer = torch.nn.Linear(10, 2)
            layer.load_state_dict(torch.load(f"{model_dir}/weights.pth"))
            return layer

        def predict_fn(data, model):
            return model(torch.tensor(data, dtype=torch.float32))
        """,
    )
    rows = np.arange(30, dtype=np.float64).reshape(3, 10)
    reply = serve(tmp_path).invoke(csv_body(rows), accept="text/csv")
    assert reply.status == 200, reply.text
    answered = np.array([[float(v) for v in line.split(",")] for line in reply.text.splitlines()])
    with torch.no_grad():
        expected = layer(torch.tensor(rows, dtype=torch.float32)).numpy()
    np.testing.assert_array_equal(answered.astype(np.float32), expected)


def test_functions_taking_context_get_it_as_the_pytorch_toolkit_passes_it(tmp_path, user_module):
    user_module(
        tmp_path,
        """
        def model_fn(model_dir, context):
            assert context.system_properties["model_dir"] == model_dir
            return {"gpu": context.system_properties["gpu_id"]}

        def input_fn(body, content_type, context):
            return [len(line) for line in body.splitlines()]

        def predict_fn(data, model, context):
            return [[n, model["gpu"] is None] for n in data]

        def output_fn(prediction, accept, context):
            return "".join(f"{n},{cpu}\\n" for n, cpu in prediction), accept
        """,
    )
    handler = load_handler(tmp_path, env={})
    body, content_type = handler.invoke(b"1,2\n10,20\n", "text/csv", "text/csv")
    assert (body, content_type) == (b"3,True\n5,True\n", "text/csv")  # no GPU here


ROW_WISE = """
import numpy as np

PREDICT_FN_ROW_WISE = {row_wise}
SIZES = []

def predict_fn(data, model):
    SIZES.append(len(data))
    return model.predict(data)
"""


@pytest.mark.parametrize("row_wise", [True, False])
def test_a_row_wise_predict_fn_gets_forward_passes_of_the_set_size(
    tmp_path, user_module, example_model_dir, example_rows, row_wise
):
    shutil.copy(example_model_dir / "model.joblib", tmp_path)
    path = user_module(tmp_path, ROW_WISE.format(row_wise=row_wise))
    body = csv_body(example_rows[:10])
    one_pass, _ = load_handler(tmp_path, env={}).invoke(body, "text/csv", "text/csv")
    handler = load_handler(tmp_path, env={"BATCHINFER_MAX_BATCH_RECORDS": "3"})
    split, _ = handler.invoke(body, "text/csv", "text/csv")
    assert split == one_pass
    sizes = sys.modules[path.stem].SIZES
    assert sizes == ([3, 3, 3, 1] if row_wise else [10])


@pytest.mark.parametrize(("batch", "sizes"), [(None, [65_536, 65_536, 5]), ("0", [131_077])])
def test_forward_passes_are_of_65536_records_unless_set_and_0_is_a_whole_request(
    tmp_path, user_module, example_model_dir, example_rows, batch, sizes
):
    """A large request is not predicted in one pass unless asked: a Pipeline builds arrays
    of the pass's size at every step, and a pass of a million records took twice as long
    as passes of 65,536."""
    shutil.copy(example_model_dir / "model.joblib", tmp_path)
    path = user_module(tmp_path, ROW_WISE.format(row_wise=True))
    rows = np.resize(example_rows, (131_077, example_rows.shape[1]))
    env = {} if batch is None else {"BATCHINFER_MAX_BATCH_RECORDS": batch}
    answer, _ = load_handler(tmp_path, env=env).invoke(csv_body(rows), "text/csv", "text/csv")
    assert answer.count(b"\n") == 131_077
    assert sizes == sys.modules[path.stem].SIZES


TUPLE_MODEL = """
import numpy as np

class Model:
    passes = []

    def predict(self, data):
        Model.passes.append(len(data))
        return np.asarray(data)[:, 0], np.asarray(data)[:, 1]  # two outputs, not records

def model_fn(model_dir):
    return Model()

def output_fn(prediction, accept):
    return b"".join(b"%g,%g\\n" % pair for pair in zip(*prediction))
"""


@pytest.mark.parametrize(("batch", "passes"), [(None, [65_536, 70_000]), ("1000", [1000])])
def test_predictions_that_are_not_one_a_record_are_made_in_one_pass_or_refused_if_set(
    tmp_path, user_module, batch, passes
):
    """A model whose predict answers a tuple of outputs: passes of the default size cannot be
    joined, so the request is predicted whole; passes the job asked for are a 500 naming the
    setting (joined, they would have stacked the outputs as records)."""
    path = user_module(tmp_path, TUPLE_MODEL)
    rows = np.arange(140_000, dtype=np.float64).reshape(70_000, 2)
    env = {} if batch is None else {"BATCHINFER_MAX_BATCH_RECORDS": batch}
    handler = load_handler(tmp_path, env=env)
    if batch is None:
        answer, _ = handler.invoke(csv_body(rows), "text/csv", "text/csv")
        assert answer.splitlines()[69_999] == b"139998,139999"
    else:
        with pytest.raises(RuntimeError, match="BATCHINFER_MAX_BATCH_RECORDS=1000 cannot be"):
            handler.invoke(csv_body(rows), "text/csv", "text/csv")
    assert sys.modules[path.stem].Model.passes == passes


@pytest.mark.parametrize("framework", ["pytorch", "onnx"])
def test_forward_passes_give_the_predictions_of_one_pass(networks, framework):
    rows = np.random.default_rng(0).normal(50, 30, size=(1000, 10))
    body = csv_body(rows)
    model_dir = networks / framework
    whole = load_handler(model_dir, env={"BATCHINFER_MAX_BATCH_RECORDS": "0"})
    one_pass, _ = whole.invoke(body, "text/csv", "text/csv")
    handler = load_handler(model_dir, env={"BATCHINFER_MAX_BATCH_RECORDS": "64"})
    calls: list[int] = []
    predict = handler.model.predict
    object.__setattr__(handler.model, "predict", lambda x: calls.append(len(x)) or predict(x))
    split, _ = handler.invoke(body, "text/csv", "text/csv")
    assert calls == [64] * 15 + [40]
    # The bytes of these passes made in-process; a single pass differs by at most the last
    # digit here and there (the runtime's kernels block a batch of 64 and of 1,000 apart).
    parts = [predict(rows[i : i + 64]) for i in range(0, 1000, 64)]
    assert split == codecs.encode(np.concatenate(parts), "text/csv")
    assert np.allclose(_values(split), _values(one_pass), rtol=1e-6, atol=1e-12)


def test_a_passs_predictions_hold_their_own_memory_not_the_tensors(networks):
    """A forward pass's predictions are copied off the tensor, so PyTorch frees it while
    the request's later passes run (arrays sharing its memory slowed them; see
    codecs.host_values)."""
    tensor = torch.arange(6.0).reshape(3, 2)
    values = codecs.host_values(tensor)
    tensor.add_(100.0)
    assert values.flags.owndata and values.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    model = load_handler(networks / "pytorch").model
    assert model.predict(np.ones((5, 10), dtype=np.float32)).flags.owndata


@pytest.mark.parametrize("value", ["-5", "many"])
def test_a_max_batch_records_that_is_not_a_whole_number_from_0_is_refused(networks, value):
    with pytest.raises(ModelLoadError, match=f"BATCHINFER_MAX_BATCH_RECORDS='?{value}'? is"):
        load_handler(networks / "pytorch", env={"BATCHINFER_MAX_BATCH_RECORDS": value})


@pytest.mark.parametrize("accept", ["text/csv", "application/jsonlines"])
def test_numeric_csv_is_decoded_in_runs_of_whole_batches_with_the_bytes_of_one_pass(
    networks, accept, monkeypatch
):
    rows = np.random.default_rng(1).normal(50, 30, size=(1000, 10))
    body = csv_body(rows)
    lines = body.splitlines(keepends=True)
    model_dir = networks / "pytorch"
    whole = load_handler(model_dir, env={"BATCHINFER_MAX_BATCH_RECORDS": "0"})
    one_pass, _ = whole.invoke(body, "text/csv", accept)
    handler = load_handler(model_dir, env={"BATCHINFER_MAX_BATCH_RECORDS": "150"})
    # Runs of as many whole batches as fit the bytes of 400 first lines: 2 (300 records).
    monkeypatch.setattr(handlers, "_DECODE_BYTES", 400 * len(lines[0]))
    decoded: list[int] = []
    decode = codecs.decode_csv
    monkeypatch.setattr(
        codecs, "decode_csv", lambda b, *a, **k: decoded.append(len(b)) or decode(b, *a, **k)
    )
    streamed, content_type = handler.invoke(body, "text/csv", accept)
    assert decoded == [sum(map(len, lines[i : i + 300])) for i in range(0, 1000, 300)]
    monkeypatch.setattr(handler, "_streams", lambda *_: False)  # decoded whole, then passes
    in_passes, _ = handler.invoke(body, "text/csv", accept)
    assert (streamed, content_type) == (in_passes, accept)
    assert np.allclose(_values(streamed), _values(one_pass), rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize(
    ("line", "batch", "records"),
    [(100, 512, 512 * 20), (100, 3000, 3000 * 3), (4000, 512, 512), (1, 1, 1 << 20)],
)
def test_a_run_is_the_whole_batches_that_fit_a_mib_one_at_the_least(line, batch, records):
    body = (b"1" * (line - 1) + b"\n") * 3
    assert handlers._records_per_decode(body, batch) == records


@pytest.mark.parametrize(
    "bad", [",".join(["1.5"] * 9 + ["x"]), ",".join(["1.5"] * 9)], ids=["text", "short"]
)
def test_a_bad_record_of_a_later_run_is_named_by_its_place_in_the_request(
    networks, bad, monkeypatch
):
    """Text where a number belongs (record 150), or every record from 129 on, the third
    batch of 64, one field short: a run (a batch here) that decodes well alone, not with
    those before."""
    monkeypatch.setattr(handlers, "_DECODE_BYTES", 1)
    rows = [",".join(["1.5"] * 10)] * 200
    first = 149 if "x" in bad else 128
    rows[first:] = [bad] * (1 if "x" in bad else 200 - first)
    handler = load_handler(networks / "pytorch", env={"BATCHINFER_MAX_BATCH_RECORDS": "64"})
    with pytest.raises(RequestError) as refused:
        handler.invoke("\n".join(rows).encode() + b"\n", "text/csv", "text/csv")
    whole = load_handler(networks / "pytorch", env={"BATCHINFER_MAX_BATCH_RECORDS": "0"})
    with pytest.raises(RequestError) as at_once:
        whole.invoke("\n".join(rows).encode() + b"\n", "text/csv", "text/csv")
    assert refused.value.status == 400
    assert f"record {first + 1}" in str(refused.value)
    assert str(refused.value) == str(at_once.value)


def test_a_streamed_request_holds_a_run_of_decoded_records_not_the_request(networks):
    """Allocations, traced: the decoded float64 records (80 bytes a record here) of 60,000
    records (9 MB of CSV) at once, against runs of about a MiB of them."""
    import tracemalloc

    body = csv_body(np.random.default_rng(2).normal(50, 30, size=(60_000, 10)))
    peaks = {}
    for batch in ("0", "256"):
        handler = load_handler(networks / "onnx", env={"BATCHINFER_MAX_BATCH_RECORDS": batch})
        first = b"".join(body.splitlines(keepends=True)[:10])
        handler.invoke(first, "text/csv", "text/csv")  # warm: first-call allocations
        tracemalloc.start()
        handler.invoke(body, "text/csv", "text/csv")
        peaks[batch] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peaks["0"] > 60_000 * 80  # the whole request decoded
    assert peaks["256"] < peaks["0"] / 4, peaks
