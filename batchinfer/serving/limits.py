"""Limits a model server takes from its environment (spec C6, C8), read without heavy imports."""

from collections.abc import Mapping

from batchinfer.errors import ValidationError

# The BatchStrategy the server answers on /execution-parameters (spec C5).
BATCH_STRATEGY = "MULTI_RECORD"
DEFAULT_MAX_PAYLOAD_MB = 6
DEFAULT_TIMEOUT = 3600
PAYLOAD_VAR = "SAGEMAKER_MAX_PAYLOAD_IN_MB"
TIMEOUT_VAR = "SAGEMAKER_MODEL_SERVER_TIMEOUT"


def int_from_env(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """The whole number ``env[name]`` in ``low..high``, or ``default`` when unset or empty."""
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValidationError(f"{name}={text!r} is not a whole number") from None
    if not low <= value <= high:
        raise ValidationError(f"{name}={value} is outside {low}..{high}")
    return value


def max_payload_mb(env: Mapping[str, str]) -> int:
    """MaxPayloadInMB: SAGEMAKER_MAX_PAYLOAD_IN_MB (0..100, 0 = no limit) or 6."""
    return int_from_env(env, PAYLOAD_VAR, DEFAULT_MAX_PAYLOAD_MB, 0, 100)


def request_timeout(env: Mapping[str, str]) -> int:
    """Seconds one request may take: SAGEMAKER_MODEL_SERVER_TIMEOUT or 3600 (spec C8)."""
    return int_from_env(env, TIMEOUT_VAR, DEFAULT_TIMEOUT, 1, 86400)
