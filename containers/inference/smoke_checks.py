"""The image smoke test's models and its calls to a running image (smoke_test.sh runs these).

    smoke_checks.py example PORT RECORDS      /ping, /execution-parameters, /invocations of the
                                              example model
    smoke_checks.py pipeline-model DIR REQUEST
                                              a scikit-learn Pipeline fitted on a DataFrame, with
                                              a code/inference.py reading CSV with pandas and a
                                              code/requirements.txt met by a wheel in code/lib/;
                                              REQUEST its request body, REQUEST.expected the
                                              pipeline's predictions made here
    smoke_checks.py pipeline PORT REQUEST     the image's predictions equal those
    smoke_checks.py network-model DIR FRAMEWORK RECORDS
                                              the example network as FRAMEWORK's file alone
                                              (pytorch: model.pt, onnx: model.onnx), and its
                                              in-process predictions for RECORDS beside them
    smoke_checks.py network PORT RECORDS      the image's default handler predicts those

Run from the repository root's venv with the root on PYTHONPATH (tests.support.wheels).
"""

import json
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

COLUMNS = ["colour", "size", "weight"]
PIPELINE_MODULE = '''\
"""Reads the headerless CSV body into a DataFrame with the pipeline's columns."""

import io

import pandas as pd
import smoke_lines  # code/requirements.txt: installed at model load from code/lib/

COLUMNS = {columns!r}


def input_fn(body, content_type):
    return pd.read_csv(io.StringIO(body), header=None, names=COLUMNS)


def output_fn(prediction, accept):
    return smoke_lines.lines(prediction)
'''
LINES_PACKAGE = 'def lines(values):\n    return "\\n".join(str(v) for v in values)\n'


def wait_healthy(url: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{url}/ping", timeout=2) as reply:
                if reply.status == 200:
                    print("/ping: 200")
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            sys.exit(f"/ping did not answer 200 within {timeout:g} s")
        time.sleep(0.5)


def invoke(url: str, body: bytes, **headers: str) -> tuple[bytes, str]:
    request = urllib.request.Request(f"{url}/invocations", data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as reply:
        return reply.read(), reply.headers["Content-Type"]


def check_example(url: str, records: bytes) -> None:
    wait_healthy(url)
    with urllib.request.urlopen(f"{url}/execution-parameters", timeout=10) as reply:
        parameters = json.load(reply)
    print("/execution-parameters:", parameters)
    expected = {"MaxConcurrentTransforms": 2, "BatchStrategy": "MULTI_RECORD", "MaxPayloadInMB": 6}
    assert parameters == expected, f"expected {expected}"
    body, content_type = invoke(url, records, **{"Content-Type": "text/csv", "Accept": "text/csv"})
    lines, expected_lines = body.decode().splitlines(), records.count(b"\n")
    assert content_type == "text/csv", content_type
    assert len(lines) == expected_lines, f"{len(lines)} lines for {expected_lines} records"
    assert set(lines) <= {"0", "1"}, f"unexpected predictions {sorted(set(lines))[:5]}"
    print(f"/invocations: {len(lines)} predictions for {len(lines)} records")
    try:
        invoke(url, b"1,2\n", **{"Content-Type": "text/csv"})
        sys.exit("a record with 2 of 10 features was accepted")
    except urllib.error.HTTPError as error:
        assert error.code == 400, error.code
        print("/invocations with a bad record: 400", error.read().decode())


def write_pipeline_model(model_dir: Path, request: Path) -> None:
    import joblib
    import numpy as np
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from tests.support.wheels import write_wheel

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], 400),
            "size": rng.normal(10, 3, 400).round(3),
            "weight": rng.normal(50, 10, 400).round(2),
        },
        columns=COLUMNS,
    )
    labels = ((frame["colour"] == "red") ^ (frame["size"] > 10)).astype(int)
    columns = ColumnTransformer(
        [
            ("colour", OneHotEncoder(handle_unknown="ignore"), ["colour"]),
            ("numbers", StandardScaler(), ["size", "weight"]),
        ]
    )
    pipeline = Pipeline([("columns", columns), ("classify", LogisticRegression())])
    pipeline.fit(frame.iloc[:300], labels.iloc[:300])
    code = model_dir / "code"
    code.mkdir(parents=True)
    joblib.dump(pipeline, model_dir / "model.joblib")
    (code / "inference.py").write_text(PIPELINE_MODULE.format(columns=COLUMNS))
    (code / "requirements.txt").write_text("smoke-lines==1.0\n")
    write_wheel(code / "lib", "smoke-lines", "1.0", LINES_PACKAGE)
    held_out = frame.iloc[300:]
    request.write_text(held_out.to_csv(header=False, index=False))
    expected = pipeline.predict(pd.read_csv(request, header=None, names=COLUMNS))
    Path(f"{request}.expected").write_text("\n".join(str(v) for v in expected))


def check_pipeline(url: str, request: Path) -> None:
    wait_healthy(url)
    body, _ = invoke(url, request.read_bytes(), **{"Content-Type": "text/csv"})
    expected = Path(f"{request}.expected").read_text()
    assert body.decode() == expected, f"the image predicted {body[:80]!r}, not {expected[:80]!r}"
    print(f"/invocations: {len(expected.splitlines())} pipeline predictions as made outside")


def write_network_model(model_dir: Path, framework: str, records: Path) -> None:
    import numpy as np

    from batchinfer.examples import train_framework_model
    from batchinfer.serving.models import load_model

    train_framework_model(model_dir, framework)
    features = np.loadtxt(records, delimiter=",", ndmin=2)
    predictions = load_model(model_dir).predict(features)
    np.save(f"{records}.{framework}.npy", np.asarray(predictions, dtype=np.float64).ravel())


def check_network(url: str, records: Path, framework: str) -> None:
    import numpy as np

    wait_healthy(url)
    body, content_type = invoke(
        url, records.read_bytes(), **{"Content-Type": "text/csv", "Accept": "text/csv"}
    )
    assert content_type == "text/csv", content_type
    predicted = np.loadtxt(body.decode().splitlines(), ndmin=1)
    expected = np.load(f"{records}.{framework}.npy")
    # The image's float32 forward pass against the one made here: same weights and inputs.
    assert predicted.shape == expected.shape, f"{predicted.shape} predictions, not {expected.shape}"
    assert np.allclose(predicted, expected, rtol=1e-5, atol=1e-6), "predictions differ"
    print(f"/invocations: {len(expected)} {framework} predictions as made outside, no inference.py")


def main(command: str, *args: str) -> None:
    if command == "example":
        check_example(f"http://127.0.0.1:{args[0]}", Path(args[1]).read_bytes())
    elif command == "pipeline-model":
        write_pipeline_model(Path(args[0]), Path(args[1]))
    elif command == "pipeline":
        check_pipeline(f"http://127.0.0.1:{args[0]}", Path(args[1]))
    elif command == "network-model":
        write_network_model(Path(args[0]), args[1], Path(args[2]))
    elif command == "network":
        check_network(f"http://127.0.0.1:{args[0]}", Path(args[1]), args[2])
    else:
        sys.exit(textwrap.dedent(__doc__ or ""))


if __name__ == "__main__":
    main(*sys.argv[1:])
