"""The corrections the offline stack makes to moto's Step Functions interpreter (and to its
S3, where the steps meet it), where it departs from AWS in ways this project's definition
meets.

Each correction is a context manager that replaces one internal of moto's parser while it is
open; :func:`corrected` applies them all, as the offline stack does. Each is needed only as
long as moto diverges: ``tests/e2e/test_moto_fixes.py`` runs each on a state machine of its
own, with and without it, and fails once moto behaves as AWS without it.

They are internals of moto 5.2.5, pinned in requirements-dev.txt; importing this module with
another version fails at once rather than testing something else.
"""

import enum
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any
from unittest import mock
from urllib.parse import parse_qs, unquote, urlparse

from jsonpath_ng.ext import parse as parse_json_path
from moto.s3.exceptions import PreconditionFailed
from moto.s3.responses import S3Response
from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, HistoryEventType
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import (
    CustomErrorName,
)
from moto.stepfunctions.parser.asl.component.common.error_name.error_name import ErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEvent,
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
    StatesErrorName,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (
    StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.common.payload.payloadvalue.payloadbinding.payload_binding import (  # noqa: E501
    PayloadBindingStringExpressionSimple,
)
from moto.stepfunctions.parser.asl.component.common.payload.payloadvalue.payloadvaluelit.payload_value_str import (  # noqa: E501
    PayloadValueStr,
)
from moto.stepfunctions.parser.asl.component.common.string import string_expression
from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader import (
    item_reader_decl,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval.resource_output_transformer.transformer import (  # noqa: E501
    ResourceOutputTransformer,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval.resource_output_transformer.transformer_csv import (  # noqa: E501
    ResourceOutputTransformerCSV,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval.resource_output_transformer.transformer_json import (  # noqa: E501
    ResourceOutputTransformerJson,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.reader_config import (
    input_type,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E501
    DistributedIterationComponent,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.distributed_item_processor_worker import (  # noqa: E501
    DistributedItemProcessorWorker,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_map.result_writer.resource_eval.resource_eval_s3 import (  # noqa: E501
    ResourceEvalS3,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branches_decl
from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from moto.stepfunctions.parser.asl.eval.program_state import ProgramError
from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor
from moto.stepfunctions.parser.asl.utils.boto_client import boto_client_for
from moto.stepfunctions.parser.asl.utils.json_path import extract_json
from moto.stepfunctions.parser.utils import long_uid

from tests.support.map_results import Child, write_map_results
from tests.support.moto_version import require_moto

require_moto("tests/support/offline", "the Step Functions parser's internals")

# A path that can select more than one node: a wildcard, deep scan, filter, slice or union.
_INDEFINITE_PATH = re.compile(r"\*|\.\.|\?\(|\[[^\]]*[:,][^\]]*\]")


def definite_paths() -> AbstractContextManager[Any]:
    """A path that selects one node yields that node's value, below an index too.

    AWS: a definite JSONPath (no wildcard, deep scan, filter, slice or union) yields the value
    of the one node it selects. The ``RunJob`` Parallel's ResultSelector reads the job's
    ``name`` and ``status`` that way from the list of its branches' outputs: ``$[0].name``.
    moto yields a one-element list whenever the node lies below an index, so ``$.job.name``
    would be ``["<job name>"]``. Here a definite path with one match yields the match's value;
    every other path is moto's own ``extract_json``.
    """

    def aws_extract_json(path: str, data: Any) -> Any:
        if not _INDEFINITE_PATH.search(path):
            matches = parse_json_path(path).find(data)
            if len(matches) == 1:
                return matches[0].value
        return extract_json(path, data)

    return mock.patch.object(string_expression, "extract_json", aws_extract_json)


def keyword_path_bindings() -> AbstractContextManager[Any]:
    """A ``"<field>.$"`` binding binds the value at its path, whatever the field is named.

    AWS: in Parameters, ``"RoleArn.$": "$.job.request.RoleArn"`` binds ``RoleArn`` to the
    value at that path; the job tasks bind every Create*Job field that way, and
    CreateProcessingJob has a ``RoleArn``. moto's lexer takes ``"RoleArn.$"`` for a keyword of
    its grammar (the one of a Task's ``Credentials``) and parses the pair as a literal: the
    request gets a field ``RoleArn.$`` holding the path's text. Here a literal binding whose
    field ends in ``.$`` becomes the path binding it is on AWS (the definition binds only
    paths of the state's input under such fields).
    """
    moto_binding = Preprocessor.visitPayload_binding_value

    def binding(self: Preprocessor, ctx: Any) -> Any:
        parsed = moto_binding(self, ctx)
        value = parsed.payload_value
        if parsed.field.endswith(".$") and isinstance(value, PayloadValueStr):
            return PayloadBindingStringExpressionSimple(
                field=parsed.field[:-2],
                string_expression_simple=string_expression.StringJsonPath(value.val),
            )
        return parsed

    return mock.patch.object(Preprocessor, "visitPayload_binding_value", binding)


def parallel_states_errors() -> AbstractContextManager[Any]:
    """A Parallel whose branch fails with a ``States.*`` error fails with that error.

    AWS: a Parallel fails with its failed branch's error, ``States.*`` names included, and
    its Retry and Catch match that name. A job that ends Failed fails the ``RunJob`` branch
    with ``States.TaskFailed``, which the Parallel's Catch sends to Verify. moto re-raises
    the branch's error as a custom error name, which must not begin with ``States.``: the
    Parallel crashes and the execution fails with ``States.Runtime``. Here a ``States.*`` name
    stays a States error name, and any other stays a custom one.
    """

    def error_name(error_name: str) -> ErrorName:
        if error_name.startswith("States."):
            return StatesErrorName.from_name(error_name)
        return CustomErrorName(error_name=error_name)

    return mock.patch.object(branches_decl, "CustomErrorName", error_name)


class _InputType(enum.Enum):
    """The ItemReader InputTypes of files that AWS reads and moto's interpreter knows of."""

    CSV = "CSV"
    JSON = "JSON"
    JSONL = "JSONL"


class _JsonLinesTransformer(ResourceOutputTransformer):
    """The items of a JSON Lines file: one JSON value per non-blank line, in file order."""

    def _eval_body(self, env: Environment) -> None:
        reader_config = env.stack.pop()
        text: str = env.stack.pop()
        items = [json.loads(line) for line in text.splitlines() if line.strip()]
        env.stack.append(items[: reader_config["MaxItemsValue"]])


def _transformer_for(input_type: Any) -> ResourceOutputTransformer:
    transformers = {
        _InputType.CSV: ResourceOutputTransformerCSV,
        _InputType.JSON: ResourceOutputTransformerJson,
        _InputType.JSONL: _JsonLinesTransformer,
    }
    return transformers[input_type.input_type_value]()


@contextmanager
def json_lines_item_reader() -> Iterator[None]:
    """A Distributed Map's ItemReader reads a JSON Lines file (InputType ``JSONL``).

    AWS: with ``"ReaderConfig": {"InputType": "JSONL"}`` and ``s3:getObject``, each line of
    the object is one item. The split Map reads Plan's split tasks that way, one line per
    input object, so the item file never has to be parsed as one JSON document. moto knows
    only ``CSV`` and ``JSON`` and refuses the definition. Here ``JSONL`` is an InputType, read
    line by line; ``CSV`` and ``JSON`` stay moto's own readers.
    """
    with (
        mock.patch.object(input_type, "InputTypeValue", _InputType),
        mock.patch.object(item_reader_decl, "resource_output_transformer_for", _transformer_for),
    ):
        yield


# moto's own internals, which the corrections below call around.
_MOTO_EVAL_JOB = DistributedItemProcessorWorker._eval_job
_MOTO_EVAL_INPUT = DistributedItemProcessorWorker._eval_input
_MOTO_MAP_RUN = DistributedIterationComponent._map_run
_CHILDREN_LOCK = threading.Lock()


def _children_of(record: Any) -> dict[int, Child]:
    """The children a map run record has seen, by item index (kept on the record)."""
    with _CHILDREN_LOCK:
        if not hasattr(record, "children"):
            record.children = {}
        children: dict[int, Child] = record.children
        return children


def _eval_input(self: Any, env_frame: Environment) -> None:
    """moto's ``_eval_input`` that keeps the child's input (after the ItemSelector)."""
    _MOTO_EVAL_INPUT(self, env_frame)
    self.child_input = env_frame.states.get_input()


def _eval_job(self: Any, env: Environment, job: Any) -> None:
    """moto's ``_eval_job`` that keeps the child's input, and its output or its error and
    cause, on the map run record."""
    self.child_input = job.job_input
    _MOTO_EVAL_JOB(self, env, job)
    ended = env.program_state()
    if isinstance(ended, ProgramError):
        error = ended.error or {}
        child = Child(self.child_input, None, error.get("error") or "", error.get("cause") or "")
    else:
        child = Child(self.child_input, job.job_output)
    _children_of(self._map_run_record)[job.job_index] = child


@contextmanager
def _children_recorded() -> Iterator[None]:
    with (
        mock.patch.object(DistributedItemProcessorWorker, "_eval_input", _eval_input),
        mock.patch.object(DistributedItemProcessorWorker, "_eval_job", _eval_job),
    ):
        yield


def _every_state(states: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The states of ``states`` and of every Map and Parallel in them."""
    for state in states.values():
        yield state
        for processor in (state.get("ItemProcessor"), state.get("Iterator")):
            if processor:
                yield from _every_state(processor["States"])
        for branch in state.get("Branches") or []:
            yield from _every_state(branch["States"])


@contextmanager
def _definitions_rewritten(rewrite: Callable[[dict[str, Any]], None]) -> Iterator[None]:
    """moto parses each definition once ``rewrite`` has changed each of its states."""
    parse = AmazonStateLanguageParser.parse

    def parse_rewritten(definition: str) -> Any:
        parsed = json.loads(definition)
        for state in _every_state(parsed["States"]):
            rewrite(state)
        return parse(json.dumps(parsed))

    with mock.patch.object(AmazonStateLanguageParser, "parse", staticmethod(parse_rewritten)):
        yield


def _writer_config_in_parameters(state: dict[str, Any]) -> None:
    """A ResultWriter's WriterConfig moved into its Parameters (moto's grammar has none),
    where the writer finds it."""
    writer = state.get("ResultWriter") or {}
    if "WriterConfig" in writer:
        writer.setdefault("Parameters", {})["WriterConfig"] = writer.pop("WriterConfig")


def _put_results(env: Environment, resource_runtime_part: Any, state_credentials: Any) -> None:
    """moto's ``ResourceEvalS3._handle_put_object`` that writes the result files too."""
    parameters = env.stack.pop()
    env.stack.pop()  # the succeeded children's outputs: the record has every child
    s3 = boto_client_for(
        service="s3", region=resource_runtime_part.region, state_credentials=state_credentials
    )
    record = env.map_run_record_pool_manager.get_all().pop()
    children = _children_of(record)
    bucket = parameters["Bucket"]
    key = write_map_results(
        s3,
        bucket,
        parameters["Prefix"],
        record.map_run_arn,
        [children[index] for index in sorted(children)],
        parameters.get("WriterConfig"),
    )
    env.stack.append(
        {"MapRunArn": record.map_run_arn, "ResultWriterDetails": {"Bucket": bucket, "Key": key}}
    )


@contextmanager
def map_result_files() -> Iterator[None]:
    """A Distributed Map's ResultWriter writes the child executions' results as its
    ``WriterConfig`` says.

    AWS (https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html):
    the writer puts ``manifest.json`` under ``<Prefix>/<map run id>/``, listing the result
    files it wrote there by child status. Without a WriterConfig each child is written with
    its execution metadata and its ``Input`` and ``Output`` as JSON strings, in a JSON array;
    ``COMPACT`` writes a succeeded child's output alone, ``JSONL`` one result a line; a failed
    child is written whole (``Input``, ``Error``, ``Cause``) whatever the Transformation. The
    definition declares JSON Lines of compact results, which Verify and ScoringOutcome stream.
    moto's grammar refuses a WriterConfig, and moto writes the manifest alone, listing no
    result file. Here the WriterConfig is accepted and each child (its input after the
    ItemSelector, and its output or its error and cause) is written as AWS writes it
    (:func:`tests.support.map_results.write_map_results`).
    """
    with (
        _children_recorded(),
        _definitions_rewritten(_writer_config_in_parameters),
        mock.patch.object(ResourceEvalS3, "_handle_put_object", staticmethod(_put_results)),
    ):
        yield


def _tolerated(self: Any, env: Environment, eval_input: Any) -> None:
    """moto's ``_map_run`` with the Map's tolerated failure threshold applied."""
    record = eval_input.map_run_record
    try:
        _MOTO_MAP_RUN(self, env, eval_input)
        env.stack.pop()  # moto's outputs: a failed child's among them as null
    except FailureEventException:
        pass  # a child's own error, re-raised by moto: counted below like any failed child
    children = _children_of(record)
    failed = sum(1 for child in children.values() if child.error is not None)
    # moto records an unset threshold as 0: the Map fails past those set (any failure when
    # neither is), as on AWS, which fails it past either.
    count, percentage = record.tolerated_failure_count, record.tolerated_failure_percentage
    exceeded = [
        failed > count if count else None,
        100 * failed / max(len(children), 1) > percentage if percentage else None,
    ]
    if failed and (any(exceeded) or exceeded == [None, None]):
        error = StatesErrorNameType.StatesExceedToleratedFailureThreshold
        raise FailureEventException(
            failure_event=FailureEvent(
                env=env,
                error_name=StatesErrorName(typ=error),
                event_type=HistoryEventType.MapRunFailed,
                event_details=EventDetails(
                    executionFailedEventDetails=ExecutionFailedEventDetails(
                        error=error.to_name(),
                        cause="The specified tolerated failure threshold was exceeded",
                    )
                ),
            )
        )
    env.stack.append([children[i].output for i in sorted(children) if children[i].error is None])


def _percentage_as_decimal(state: dict[str, Any]) -> None:
    """An integer ToleratedFailurePercentage written as a decimal: moto's grammar takes
    only the latter (AWS takes any number from 0 to 100)."""
    if isinstance(state.get("ToleratedFailurePercentage"), int):
        state["ToleratedFailurePercentage"] = float(state["ToleratedFailurePercentage"])


@contextmanager
def tolerated_failures() -> Iterator[None]:
    """A Distributed Map fails only when its failed children exceed its tolerated failure
    threshold, and then with ``States.ExceedToleratedFailureThreshold``.

    AWS (https://docs.aws.amazon.com/step-functions/latest/dg/maprun-fail-threshold.html):
    ToleratedFailurePercentage (0 to 100, default 0) and ToleratedFailureCount bound the failed
    children; past either, the Map Run fails with ``States.ExceedToleratedFailureThreshold``,
    whose cause names no child; within them the Map succeeds and its result writer lists the
    failed children under ``FAILED``. moto ignores both fields: a failed child either fails
    the Map with the child's own error or is taken for a success with a null output, and its
    grammar refuses an integer percentage. Here the children's failures are counted against
    the thresholds; a Map within them outputs
    its succeeded children's outputs, one past them fails as AWS's does.
    """
    with (
        _children_recorded(),
        _definitions_rewritten(_percentage_as_decimal),
        mock.patch.object(DistributedIterationComponent, "_map_run", _tolerated),
    ):
        yield


def _honouring_copy_source_if_match(copy: Callable[[S3Response], Any]) -> Callable[..., Any]:
    """moto's ``copy`` (CopyObject or UploadPartCopy) that first checks the source's ETag."""

    def checked(response: S3Response) -> Any:
        expected = response.headers.get("x-amz-copy-source-if-match")
        if expected is not None:
            source = urlparse(response.headers["x-amz-copy-source"])
            bucket, key = unquote(source.path).lstrip("/").split("/", 1)
            version = parse_qs(source.query).get("versionId", [None])[0]
            found = response.backend.get_object(bucket, key, version_id=version)
            if found is not None and expected.strip('"') != found.etag.strip('"'):
                raise PreconditionFailed(failed_condition="x-amz-copy-source-If-Match")
        return copy(response)

    return checked


@contextmanager
def copy_source_if_match() -> Iterator[None]:
    """CopyObject and UploadPartCopy copy only the version ``CopySourceIfMatch`` names.

    AWS: a copy whose source's ETag is not the one in ``x-amz-copy-source-if-match`` fails
    with 412 PreconditionFailed
    (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html,
    https://docs.aws.amazon.com/AmazonS3/latest/API/API_UploadPartCopy.html). The split Map
    copies an object that needed no split by the ETag its split measured, so a newer version
    fails the run instead of being scored. moto ignores the header and copies whatever is
    there. Here both copies check it first.
    """
    with (
        mock.patch.object(
            S3Response, "copy_object", _honouring_copy_source_if_match(S3Response.copy_object)
        ),
        mock.patch.object(
            S3Response,
            "upload_part_copy",
            _honouring_copy_source_if_match(S3Response.upload_part_copy),
        ),
    ):
        yield


_HEAP_KEYS = threading.Lock()


def _heap_key(component: EvalComponent) -> str:
    """The component's key in a frame's heap, made once under a lock."""
    with _HEAP_KEYS:
        key: str | None = component._EvalComponent__heap_key
        if key is None:
            key = long_uid()
            component._EvalComponent__heap_key = key
    return key


def retries_counted_per_child() -> AbstractContextManager[Any]:
    """Each child of a Map counts its own retries of a state from the first, whatever its
    siblings do.

    AWS: a Retrier's MaxAttempts bounds the retries of one execution of its state
    (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html), so
    every child of a Map tries a failing state ``1 + MaxAttempts`` times. moto keeps each
    child's attempt count in the child's heap under a key its retrier makes lazily, and
    unguarded: two children failing at once can both make one, and the child whose key was
    overwritten starts counting again, one try more (a MergeObject tried 4 times, not 3).
    Here the key is made once, under a lock.
    """
    return mock.patch.object(EvalComponent, "heap_key", property(_heap_key))


CORRECTIONS: tuple[Callable[[], AbstractContextManager[Any]], ...] = (
    definite_paths,
    keyword_path_bindings,
    parallel_states_errors,
    json_lines_item_reader,
    map_result_files,
    tolerated_failures,
    copy_source_if_match,
    retries_counted_per_child,
)


@contextmanager
def corrected() -> Iterator[None]:
    """moto's interpreter with every correction, while the context is open."""
    with ExitStack() as stack:
        for correction in CORRECTIONS:
            stack.enter_context(correction())
        yield
