"""Run the synthesized state machine offline, end to end.

``offline_stack(template, model_archive)`` opens ``mock_aws`` and yields an
:class:`OfflineStack`: the template's bucket, status table, topic and event bus created in
moto from the template's own properties, its state machine definition taken from the
template (no hand-written copy) and run by moto's Amazon States Language interpreter.
``stack.run(request, name)`` starts an execution and returns its :class:`Execution` once it
has ended (status, output, error, cause, history)::

    archive = model_archive(inference_py, tmp_path)  # a model.tar.gz with code/inference.py
    with offline_stack(template, archive) as stack:
        stack.put("input/a.csv", b"1,2")
        stack.jobs.faults.append(FailInputs(1))  # the first job loses its instance
        execution = stack.run({"input": f"s3://{stack.bucket}/input/"}, "run-1")

moto's interpreter cannot run Lambda code without Docker and has no SageMaker integration,
so while the stack is open:

- every Lambda task calls the real handler of ``lambda/`` that the function's ``Handler``
  names, with the function's environment (:mod:`.lambdas`); ``stack.lambdas.faults`` takes
  :class:`LambdaFault` to fail an invocation before or after its handler ran, and
  :class:`Dies` for a function that dies right after one of its AWS calls;
- sagemaker-runtime InvokeEndpoint goes to a real model server per endpoint
  (:mod:`.endpoints`: ``stack.endpoints.create(name, url)``); ``stack.endpoints.faults``
  takes :class:`Throttle`, and ``stack.lambdas.faults`` :class:`OutOfTime` (an invocation
  whose context reports its time running out);
- the ``sagemaker`` integration runs Create*Job ``.sync`` with the local engine over moto
  S3 and answers the Describe*Job response (:mod:`.sagemaker`); ``stack.jobs.faults`` takes
  :class:`ApiError` (a refused create), :class:`AnswerLost` (a create that went through
  with its answer lost: the job runs and is found by the AWS SDK integration's
  Describe*Job), :class:`FailInputs` (a lost instance),
  :class:`ThrottledWait` (a job that ran, then a throttled poll), :class:`StopJob`,
  :class:`StopExecution`, :class:`CapacityShortage` (no instances to be had) and
  :class:`RuntimeLimit` (a processing job stopped at its MaxRuntimeInSeconds); a split
  job runs the ``batchinfer split`` command;
- five divergences of moto's interpreter from AWS are corrected (:mod:`.moto_fixes`, each
  explained there);
- an ended execution's "Step Functions Execution Status Change" event is delivered to the
  targets of the template's rules that match it, as EventBridge would, and a Lambda target
  takes it as an asynchronous invocation: tried again as its EventInvokeConfig says, then
  its invocation record sent to the on-failure destination with the function's role
  (:mod:`.stack`, :meth:`.Lambdas.invoke_event`).

Relies on internals of moto 5.2.5, pinned in requirements-dev.txt: importing the package
with another version raises ImportError.
"""

from tests.support.offline.endpoints import Endpoints, Throttle
from tests.support.offline.lambdas import Dies, LambdaFault, OutOfTime
from tests.support.offline.sagemaker import (
    AnswerLost,
    ApiError,
    CapacityShortage,
    FailInputs,
    RuntimeLimit,
    SageMakerJobs,
    StopExecution,
    StopJob,
    ThrottledWait,
)
from tests.support.offline.stack import (
    MOTO_CONFIG,
    Execution,
    OfflineStack,
    model_archive,
    offline_stack,
)
from tests.support.offline.template import REGION

__all__ = [
    "MOTO_CONFIG",
    "REGION",
    "AnswerLost",
    "ApiError",
    "CapacityShortage",
    "Dies",
    "Endpoints",
    "Execution",
    "FailInputs",
    "LambdaFault",
    "OfflineStack",
    "OutOfTime",
    "RuntimeLimit",
    "SageMakerJobs",
    "StopExecution",
    "StopJob",
    "Throttle",
    "ThrottledWait",
    "model_archive",
    "offline_stack",
]
