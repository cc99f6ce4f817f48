"""AWS's own framework inference images (scikit-learn, XGBoost, PyTorch), resolved per
region at synth, offline, by the SageMaker Python SDK's image URI lookup.

Those images serve a model archive's ``code/inference.py`` with the same handler protocol
(``model_fn``, ``input_fn``, ``predict_fn``, ``output_fn``) as batchinfer's image and
``batchinfer run``; the container finds the script through the two environment variables
of :data:`HANDLER_ENVIRONMENT`. They have no ``batchinfer process`` entry point, so only
transform jobs run on them.
"""

from batchinfer.errors import ValidationError

FRAMEWORKS = ("sklearn", "xgboost", "pytorch")
# Where the framework containers look for the model's handler script.
HANDLER_ENVIRONMENT = {
    "SAGEMAKER_PROGRAM": "inference.py",
    "SAGEMAKER_SUBMIT_DIRECTORY": "/opt/ml/model/code",
}


def framework_image_uri(
    framework: str,
    version: str,
    *,
    region: str,
    instance_type: str,
    py_version: str | None,
    where: str,
) -> str:
    """The inference image of ``framework`` ``version`` in ``region`` for ``instance_type``
    (CPU or GPU build); errors name ``where``."""
    from sagemaker.core import image_uris  # heavy: imported only when an image is asked for

    try:
        return image_uris.retrieve(
            framework,
            region=region,
            version=version,
            py_version=py_version,
            instance_type=instance_type,
            image_scope="inference",
        )
    except ValueError as exc:
        raise ValidationError(f"{where}: {exc}") from None
