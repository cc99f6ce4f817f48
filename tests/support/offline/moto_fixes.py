"""The corrections the offline stack makes to moto's Step Functions interpreter, where it
departs from AWS in ways this project's definition meets. Each correction replaces one
function of moto's parser while the stack is open (:func:`corrected`); each is needed only
as long as moto diverges (``tests/e2e/test_moto_fixes.py`` shows each divergence).

1. Definite paths below an index (:func:`aws_extract_json`). AWS: a JSONPath that selects
   one node (``$[0].name``, which the ``RunJob`` ResultSelector reads from a Parallel's
   output) yields that node's value. moto yields a one-element list, so ``$.job.name``
   would become ``["..."]``.
2. ``"<key>.$"`` bindings whose key moto lexes as a keyword (:func:`bind_keyword_paths`).
   AWS: in Parameters, ``"RoleArn.$": "$.job.request.RoleArn"`` binds the value at that
   path. moto's lexer reads ``RoleArn`` as the keyword of Task ``Credentials`` and binds
   the path text itself, so CreateProcessingJob would get a RoleArn of ``$.job...``.
3. A Parallel whose branch fails with a ``States.*`` error (:func:`parallel_error_name`).
   AWS: the Parallel fails with that error (a Failed job's ``States.TaskFailed`` reaches
   the Parallel's Catch). moto builds a custom error name from it and crashes.

These are internals of moto 5.2.5, pinned in requirements-dev.txt; importing this module
with another version fails at once rather than testing something else.
"""

import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

import moto
from jsonpath_ng.ext import parse as parse_json_path
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
    CustomErrorName,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
    StatesErrorName,
)
from moto.stepfunctions.parser.asl.component.common.payload.payloadvalue.payloadbinding.payload_binding import (  # noqa: E501
    PayloadBindingStringExpressionSimple,
)
from moto.stepfunctions.parser.asl.component.common.payload.payloadvalue.payloadvaluelit.payload_value_str import (  # noqa: E501
    PayloadValueStr,
)
from moto.stepfunctions.parser.asl.component.common.string import string_expression
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branches_decl
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

MOTO_VERSION = "5.2.5"
if moto.__version__ != MOTO_VERSION:
    raise ImportError(
        f"tests/support/offline corrects internals of moto {MOTO_VERSION}'s Step Functions "
        f"parser; moto {moto.__version__} is installed (see requirements-dev.txt)"
    )

# A path that can select more than one node: a wildcard, deep scan, filter, slice or union.
_INDEFINITE_PATH = re.compile(r"\*|\.\.|\?\(|\[[^\]]*[:,][^\]]*\]")


def aws_extract_json(path: str, data: Any) -> Any:
    """moto's ``extract_json``, except that a definite path yields its one node's value."""
    if not _INDEFINITE_PATH.search(path):
        matches = parse_json_path(path).find(data)
        if len(matches) == 1:
            return matches[0].value
    return _moto_extract_json(path, data)


_moto_extract_json = string_expression.extract_json
_moto_payload_binding_value = Preprocessor.visitPayload_binding_value


def parallel_error_name(error_name: str) -> Any:
    """The error a Parallel fails with: its branch's, ``States.*`` names included."""
    if error_name.startswith("States."):
        return StatesErrorName.from_name(error_name)
    return CustomErrorName(error_name=error_name)


def bind_keyword_paths(self: Preprocessor, ctx: Any) -> Any:
    """A ``"<key>.$": "$..."`` binding whose key moto lexes as a keyword is a path too."""
    binding = _moto_payload_binding_value(self, ctx)
    value = binding.payload_value
    if binding.field.endswith(".$") and isinstance(value, PayloadValueStr):
        return PayloadBindingStringExpressionSimple(
            field=binding.field[:-2],
            string_expression_simple=string_expression.StringJsonPath(value.val),
        )
    return binding


@contextmanager
def corrected() -> Iterator[None]:
    """moto's interpreter with the three corrections, while the context is open."""
    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(string_expression, "extract_json", aws_extract_json))
        stack.enter_context(
            mock.patch.object(Preprocessor, "visitPayload_binding_value", bind_keyword_paths)
        )
        stack.enter_context(
            mock.patch.object(branches_decl, "CustomErrorName", parallel_error_name)
        )
        yield
