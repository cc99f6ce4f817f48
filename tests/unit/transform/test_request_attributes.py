"""What an endpoint request's CustomAttributes tell the model server in place of a job's
environment: the CSV columns and delimiter, and the Parquet join; read back as written,
and a malformed value refused naming the header."""

import pytest

from batchinfer.errors import ValidationError
from batchinfer.transform.csv_dialect import (
    CUSTOM_ATTRIBUTES_HEADER,
    RequestAttributes,
    attributes_of,
    custom_attributes,
    dialect_environment,
)
from batchinfer.transform.settings import JOIN_SOURCE_VAR, TransformSettings


@pytest.mark.parametrize(
    ("env", "told"),
    [
        ({}, None),
        (dialect_environment(["a", "b"], ";"), RequestAttributes(["a", "b"], ";")),
        ({JOIN_SOURCE_VAR: "Input"}, RequestAttributes(None, ",", join_input=True)),
        (
            {**dialect_environment(["é"], ","), JOIN_SOURCE_VAR: "Input"},
            RequestAttributes(["é"], ",", join_input=True),
        ),
    ],
    ids=["nothing", "columns", "join", "both"],
)
def test_what_a_jobs_environment_tells_is_told_by_custom_attributes(env, told):
    value = custom_attributes(env)
    assert attributes_of(value) == told
    assert value is None or value.isascii()


def test_a_parquet_join_is_in_the_job_environment_an_endpoint_request_carries():
    settings = TransformSettings(
        content_type="application/x-parquet", accept="application/x-parquet", join_source="Input"
    )
    assert attributes_of(custom_attributes(settings.job_environment)) == RequestAttributes(
        None, ",", join_input=True
    )


@pytest.mark.parametrize(
    "value",
    [
        'batchinfer-csv={"columns":null,"delimiter":",","join_source":"Output"}',
        'batchinfer-csv={"columns":"a","delimiter":","}',
        "batchinfer-csv=[1]",
    ],
)
def test_malformed_attributes_are_refused_naming_the_header(value):
    with pytest.raises(ValidationError, match=CUSTOM_ATTRIBUTES_HEADER):
        attributes_of(value)
