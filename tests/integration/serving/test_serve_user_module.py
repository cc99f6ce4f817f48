"""The user-module protocol of SageMaker's framework containers (spec section 2, ecosystem
convention): model_fn, input_fn, predict_fn, output_fn each alone, all together, and
transform_fn; located in code/ or the model directory, or named by SAGEMAKER_PROGRAM."""

import json

import pytest

ROWS = "59,2,32.1,101,157,93.2,38,4,4.8598,87\n48,1,21.6,87,183,103.2,70,3,3.8918,69\n"
SEMICOLONS = ROWS.replace(",", ";")

MODEL_FN = """
import joblib

def model_fn(model_dir):
    return joblib.load(f"{model_dir}/weights.bin")
"""
INPUT_FN = """
import numpy as np

def input_fn(body, content_type):
    assert isinstance(body, str), type(body)  # text types arrive as str
    assert content_type == "text/csv", content_type
    return np.array([[float(v) for v in line.split(";")] for line in body.splitlines()])
"""
PREDICT_FN = """
def predict_fn(data, model):
    return model.predict_proba(data)[:, 1]
"""
OUTPUT_FN = """
def output_fn(prediction, accept):
    body = "".join(f"label={value}\\n" for value in prediction)
    return body.encode(), "text/x-labels"
"""
TRANSFORM_FN = """
import json

def transform_fn(model, body, content_type, accept):
    rows = [[float(v) for v in line.split(",")] for line in body.splitlines()]
    return json.dumps({"n": len(rows), "labels": model.predict(rows).tolist()}), accept
"""


def _rows():
    return [[float(v) for v in line.split(",")] for line in ROWS.splitlines()]


def test_model_fn_alone(serve, model_dir, user_module, example_model):
    (model_dir / "model.joblib").rename(model_dir / "weights.bin")
    user_module(model_dir, MODEL_FN)
    reply = serve(model_dir).invoke(ROWS.encode())
    assert reply.status == 200
    assert reply.text == "".join(f"{v}\n" for v in example_model.predict(_rows()))


def test_input_fn_alone_gets_str(serve, model_dir, user_module, example_model):
    user_module(model_dir, INPUT_FN)
    reply = serve(model_dir).invoke(SEMICOLONS.encode(), "text/csv; charset=utf-8")
    assert reply.status == 200 and reply.content_type == "text/csv"
    assert reply.text == "".join(f"{v}\n" for v in example_model.predict(_rows()))


def test_predict_fn_alone(serve, model_dir, user_module, example_model):
    user_module(model_dir, PREDICT_FN, folder="")  # inference.py beside the model
    reply = serve(model_dir).invoke(ROWS.encode(), accept="application/jsonlines")
    assert reply.status == 200
    expected = example_model.predict_proba(_rows())[:, 1].tolist()
    assert [json.loads(line) for line in reply.text.splitlines()] == expected


def test_output_fn_alone_sets_the_content_type(serve, model_dir, user_module, example_model):
    user_module(model_dir, OUTPUT_FN)
    reply = serve(model_dir).invoke(ROWS.encode(), accept="text/x-labels")
    assert reply.status == 200 and reply.content_type == "text/x-labels"
    assert reply.text == "".join(f"label={v}\n" for v in example_model.predict(_rows()))


def test_all_four_together(serve, model_dir, user_module, example_model):
    (model_dir / "model.joblib").rename(model_dir / "weights.bin")
    user_module(model_dir, MODEL_FN + INPUT_FN + PREDICT_FN + OUTPUT_FN)
    reply = serve(model_dir).invoke(SEMICOLONS.encode())
    assert reply.status == 200 and reply.content_type == "text/x-labels"
    expected = example_model.predict_proba(_rows())[:, 1]
    assert reply.text == "".join(f"label={v}\n" for v in expected)


def test_transform_fn(serve, model_dir, user_module, example_model):
    user_module(model_dir, TRANSFORM_FN)
    reply = serve(model_dir).invoke(ROWS.encode(), accept="application/json")
    assert reply.status == 200 and reply.content_type == "application/json"
    assert json.loads(reply.body) == {"n": 2, "labels": example_model.predict(_rows()).tolist()}


def test_sagemaker_program_names_the_module_and_value_errors_are_400(serve, model_dir, user_module):
    path = user_module(
        model_dir,
        """
        def input_fn(body, content_type):
            raise ValueError(f"cannot read {content_type}")
        """,
    )
    path.rename(path.with_name("predictor.py"))
    client = serve(model_dir, env={"SAGEMAKER_PROGRAM": "predictor.py"})
    reply = client.invoke(b"anything", "application/x-custom")
    assert reply.status == 400
    assert reply.text == "input_fn rejected the request: cannot read application/x-custom"


def test_transform_fn_with_input_fn_is_refused_at_load(model_dir, user_module):
    from batchinfer.serving.handlers import load_handler
    from batchinfer.serving.server_errors import ModelLoadError

    user_module(model_dir, TRANSFORM_FN + INPUT_FN)
    with pytest.raises(ModelLoadError, match="defines transform_fn and input_fn"):
        load_handler(model_dir, env={})
