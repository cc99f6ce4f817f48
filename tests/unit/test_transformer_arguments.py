"""``batchinfer.Transformer`` takes the SageMaker SDK's arguments: its signature keeps the
SDK's order, and what a local run cannot do as asked is refused before any work, naming the
argument."""

import inspect
from pathlib import Path

import pytest
from sagemaker.core.transformer import Transformer as SdkTransformer

from batchinfer import Transformer, ValidationError


def _transformer(tmp_path: Path, **arguments: object) -> Transformer:
    given = {"model_name": str(tmp_path / "model"), "output_path": tmp_path / "out", **arguments}
    return Transformer(**given)  # type: ignore[arg-type]


def test_the_sdks_arguments_in_the_sdks_order():
    ours = list(inspect.signature(Transformer.__init__).parameters)
    sdk = list(inspect.signature(SdkTransformer.__init__).parameters)
    assert ours[: len(sdk)] == sdk
    ours = list(inspect.signature(Transformer.transform).parameters)
    assert ours == list(inspect.signature(SdkTransformer.transform).parameters)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"batch_data_capture_config": object()}, "batch_data_capture_config: a local run"),
        ({"data_type": "AugmentedManifestFile"}, "data_type: 'AugmentedManifestFile' is not"),
        ({"data_type": "ManifestFile"}, "data_type 'ManifestFile': "),
        ({"model_client_config": {"Timeout": 5}}, "model_client_config: unknown key 'Timeout'"),
        ({"job_name": "a_b"}, "job_name (TransformJobName): 'a_b' is not a valid job name"),
        ({"split_type": "Lines"}, "split_type (SplitType): 'Lines' is not allowed"),
        (
            {"model_client_config": {"InvocationsMaxRetries": 9}},
            "invocations_max_retries (InvocationsMaxRetries): 9 is out of range",
        ),
    ],
)
def test_transform_refuses_what_a_local_run_cannot_do(tmp_path, arguments, message):
    with pytest.raises(ValidationError) as raised:
        _transformer(tmp_path).transform(tmp_path / "data.csv", **arguments)
    assert str(raised.value).startswith(message)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"strategy": "Multi"}, "batch_strategy (BatchStrategy): 'Multi' is not allowed"),
        ({"max_payload": 101}, "max_payload_mb (MaxPayloadInMB): 101 is out of range"),
        ({"instance_type": "local"}, "instance_type (InstanceType): 'local' is not a SageMaker"),
        ({"output_path": None}, "output_path: a local run needs the directory"),
    ],
)
def test_transform_refuses_the_constructors_bad_settings(tmp_path, arguments, message):
    with pytest.raises(ValidationError) as raised:
        _transformer(tmp_path, **arguments).transform(tmp_path / "data.csv")
    assert str(raised.value).startswith(message)


def test_a_manifest_file_needs_its_data_type_r4(tmp_path):
    manifest = tmp_path / "inputs.manifest"
    with pytest.raises(ValidationError, match="pass data_type='ManifestFile'"):
        _transformer(tmp_path).transform(manifest)


def test_the_model_is_named_once(tmp_path):
    with pytest.raises(ValidationError, match="model_name or model_data"):
        Transformer(output_path=tmp_path)
    with pytest.raises(ValidationError, match="model_name or model_data"):
        Transformer(model_name="a", model_data="b")


def test_wait_without_a_job_is_refused(tmp_path):
    with pytest.raises(ValidationError, match="no transform job was started"):
        _transformer(tmp_path).wait()
