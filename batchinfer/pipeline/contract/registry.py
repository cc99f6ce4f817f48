"""The registry of the pipeline's Lambda steps: one entry per step, the only place that says
what a step is called, what it is given and where its answer goes, how much memory and
time it has, and what it may touch. ``stacks/functions.py`` builds each function and its
grants from it and ``stacks/workflow.py`` builds each step's state from it.

A step ``name`` is the module ``lambda/<name>.py`` (its ``handler``: parse the event into
:mod:`batchinfer.pipeline.contract.state`, call the library, answer) over the library module
``batchinfer/pipeline/<name>.py``.
"""

from dataclasses import dataclass, replace

from batchinfer.pipeline.contract.layout import (
    INPUT_PREFIX,
    OUTPUT_PREFIX,
    RUNS_PREFIX,
    SHARDS_PREFIX,
)

# Payload values: a path into the state (``$`` or ``$.<part>``) or into the execution's
# context object (``$$.Execution...``).
EXECUTION = {"execution": "$$.Execution.Id"}
EXECUTION_NAME = {"execution_name": "$$.Execution.Name"}
# A result_path that drops the answer: the state passes its input on unchanged.
DISCARD = "DISCARD"


@dataclass(frozen=True)
class Step:
    name: str
    state: str  # the state's name in the definition
    description: str
    memory_mb: int
    timeout_seconds: int
    # The event: key -> path. None: the state's input as it is (the split Map's item).
    payload: dict[str, str] | None
    result_path: str | None  # where the answer goes (None: replaces the state; DISCARD)
    result_selector: dict[str, str] | None = None  # reshapes the answer before that
    reads: tuple[str, ...] = ()  # data-bucket prefixes it reads
    writes: tuple[str, ...] = ()  # data-bucket prefixes it writes
    lists: tuple[str, ...] = ()  # data-bucket prefixes it lists
    pins_versions: bool = False  # reads (copies) objects by the version it measured
    multipart: bool = False  # writes by multipart upload (which it aborts on failure)
    table: tuple[str, ...] = ()  # the status-table actions it calls (GetItem, Query, ...)
    announces: bool = False  # publishes the run-finished event and SNS message
    creates_run_models: bool = False  # checks model packages, creates a run's own model
    deletes_run_models: bool = False  # deletes a run's own model
    describes_endpoints: bool = False  # DescribeEndpoint on the configured endpoints
    invokes_endpoints: bool = False  # InvokeEndpoint on the configured endpoints

    @property
    def handler(self) -> str:
        return f"{self.name}.handler"

    @property
    def construct_id(self) -> str:
        return "".join(part.title() for part in self.name.split("_"))


PLAN = Step(
    name="plan",
    state="Plan",
    description="Validate a run request, list its inputs, claim the run id",
    # One vCPU: a Parquet run reads a footer an object, and botocore's CPU for 100,000 such
    # requests (about 1.4 ms each on one core) would take most of the 900 s at 512 MB's
    # share of a core (docs/scaling.md).
    memory_mb=1769,
    # Listing takes one request per 1,000 objects: minutes only for millions of objects.
    timeout_seconds=900,
    payload={
        "request": "$",
        "started_at": "$$.Execution.StartTime",
        **EXECUTION,
        **EXECUTION_NAME,
    },
    # The state becomes {"plan": ...}: the request, which may be large, is not carried on.
    result_selector={"plan.$": "$"},
    result_path="$",
    lists=(INPUT_PREFIX,),
    # A run with a header: its first object's header line (the first bytes only).
    reads=(INPUT_PREFIX,),
    writes=(RUNS_PREFIX,),
    table=("PutItem", "GetItem"),
    creates_run_models=True,
    describes_endpoints=True,
)
SPLIT_OBJECT = Step(
    name="split_object",
    state="SplitObject",
    description="Split one input object into shards with a ManifestFile",
    memory_mb=1024,
    timeout_seconds=900,
    payload=None,
    result_path=None,
    reads=(INPUT_PREFIX,),
    writes=(SHARDS_PREFIX,),
    pins_versions=True,
    multipart=True,
)
CHECK_SPLITS = Step(
    name="check_splits",
    state="CheckSplits",
    description="Name the inputs whose split failed, from the split Map's results",
    memory_mb=256,
    timeout_seconds=300,
    payload={"plan": "$.plan", "splits": "$.splits.manifest"},
    result_path=DISCARD,
    reads=(RUNS_PREFIX,),
)
# The same function after the MergeOutputs Map: the inputs whose merge failed.
CHECK_MERGES = replace(
    CHECK_SPLITS, state="CheckMerges", payload={"plan": "$.plan", "merges": "$.merges.manifest"}
)
COPY_UNSPLIT = Step(
    name="copy_unsplit",
    state="CopyUnsplit",
    description="After a split job: copy an object it left whole under the shard prefix",
    memory_mb=256,
    # One server-side copy: a multipart copy of parts side by side above 5 GB.
    timeout_seconds=900,
    payload={"input": "$.input", "output": "$.output"},
    result_path=DISCARD,
    reads=(INPUT_PREFIX, SHARDS_PREFIX),  # the object, its shard index
    writes=(SHARDS_PREFIX,),
    multipart=True,
)
COLLECT = Step(
    name="collect",
    state="Collect",
    description="Gather the shards of a run into the first job manifest",
    # One vCPU: boto3's CPU for a million SHARD items (0.17 ms an item) is most of its time
    # (docs/scaling.md).
    memory_mb=1769,
    timeout_seconds=900,
    payload={"plan": "$.plan", "splits": "$.splits.manifest", **EXECUTION},
    result_path="$.round",
    # the shard indexes of splits that listed no shards; the split tasks, the Map's results
    reads=(SHARDS_PREFIX, RUNS_PREFIX),
    writes=(RUNS_PREFIX,),
    table=("BatchWriteItem", "UpdateItem"),
)
PREPARE_JOB = Step(
    name="prepare_job",
    state="PrepareJob",
    description="Build the job request of one attempt with a new job name",
    memory_mb=256,
    timeout_seconds=60,
    payload={"plan": "$.plan", "round": "$.round"},
    result_path="$.job",
    reads=(RUNS_PREFIX,),  # the run's container environment
)
SCORE_SHARD = Step(
    name="score_shard",
    state="ScoreShard",
    description="Score one shard through the real-time endpoint, resumably",
    memory_mb=1024,
    timeout_seconds=900,
    payload=None,  # the endpoint Map's item: {"shard", "plan", "job"}
    result_path="$.scored",
    reads=(SHARDS_PREFIX, RUNS_PREFIX),
    writes=(RUNS_PREFIX, OUTPUT_PREFIX),  # progress and failures; the shard's output
    lists=(RUNS_PREFIX,),  # whether progress was saved
    multipart=True,
    invokes_endpoints=True,
)
SCORING_OUTCOME = Step(
    name="scoring_outcome",
    state="ScoringOutcome",
    description="End an endpoint round as a job outcome, naming refused shards",
    memory_mb=256,
    timeout_seconds=120,
    payload={"plan": "$.plan", "job": "$.job.name", "scores": "$.scores.manifest"},
    # The branch's answer, as a job task's: RunJob's ResultSelector takes name and status.
    result_path=None,
    reads=(RUNS_PREFIX,),
    lists=(RUNS_PREFIX,),
)
ACQUIRE_INSTANCES = Step(
    name="acquire_instances",
    state="AcquireInstances",
    description="Lease the next job's instances from the stack's budget, or wait",
    memory_mb=256,
    timeout_seconds=60,
    payload={"plan": "$.plan", "round": "$.round", **EXECUTION},
    result_path="$.admission",
    # The lease item (read, created, updated) and the RUN item (waiting or admitted).
    table=("GetItem", "PutItem", "UpdateItem"),
)
RELEASE_INSTANCES = Step(
    name="release_instances",
    state="ReleaseInstances",
    description="Return the ended job's instances to the stack's budget",
    memory_mb=256,
    timeout_seconds=60,
    payload={"plan": "$.plan"},
    result_path=DISCARD,
    table=("UpdateItem",),
)
ACQUIRE_SPLIT_INSTANCE = Step(
    name="acquire_split_instance",
    state="AcquireSplitInstance",
    description="Lease a split job's instance from the stack's budget, or wait",
    memory_mb=256,
    timeout_seconds=60,
    payload={"job": "$.job", "input": "$.input", **EXECUTION},
    result_path="$.admission",
    table=("GetItem", "PutItem", "UpdateItem"),  # the lease item
)
RELEASE_SPLIT_INSTANCE = Step(
    name="release_split_instance",
    state="ReleaseSplitInstance",
    description="Return an ended split job's instance to the stack's budget",
    memory_mb=256,
    timeout_seconds=60,
    payload={"job": "$.job", "input": "$.input"},
    result_path=DISCARD,
    table=("UpdateItem",),
)
COUNT_SHARD = Step(
    name="count_shard",
    state="CountShard",
    description="Check one shard's output and count its records against its input",
    memory_mb=512,
    # Two streamed reads of one shard: its input and its output (a merged run's parts
    # are under runs/); with quarantine, one more of the output to take out the records set
    # aside, rewriting it and writing its errors file (multipart uploads).
    timeout_seconds=900,
    payload=None,
    result_path=None,
    reads=(SHARDS_PREFIX, RUNS_PREFIX, OUTPUT_PREFIX),
    writes=(RUNS_PREFIX, OUTPUT_PREFIX),
    multipart=True,
)
VERIFY = Step(
    name="verify",
    state="Verify",
    description="Gather the round's shard checks; record them, resubmit missing shards",
    memory_mb=1769,  # one vCPU, as Collect: it writes a SHARD item a shard too
    timeout_seconds=900,
    payload={
        "plan": "$.plan",
        "round": "$.round",
        "job": "$.job",
        "counts": "$.counts.manifest",
        **EXECUTION,
    },
    result_path="$.round",
    reads=(RUNS_PREFIX,),  # the CountShards Map's results
    writes=(RUNS_PREFIX,),
    table=("BatchWriteItem", "UpdateItem"),
)
MERGE_OBJECT = Step(
    name="merge_object",
    state="MergeObject",
    description="Merge one input object's shard outputs in order into its output",
    memory_mb=1024,
    # One multipart upload: part copies run inside S3, small outputs are gathered in memory.
    timeout_seconds=900,
    payload=None,  # the MergeOutputs Map's item: {"input", "folder", "plan"}
    result_path=None,
    reads=(SHARDS_PREFIX, RUNS_PREFIX),  # the shard index; the shard outputs (parts)
    writes=(OUTPUT_PREFIX,),
    multipart=True,
)
FINALIZE = Step(
    name="finalize",
    state="Finalize",
    description="Write _manifest.json and _SUCCESS, record the run, announce",
    memory_mb=1024,
    timeout_seconds=900,
    payload={"plan": "$.plan", **EXECUTION},
    result_path="$.result",
    reads=(RUNS_PREFIX,),
    writes=(OUTPUT_PREFIX,),
    multipart=True,  # a merged object's errors file of records set aside
    table=("Query", "UpdateItem"),
    announces=True,
    deletes_run_models=True,
)
RECORD_FAILURE = Step(
    name="record_failure",
    state="RecordFailure",
    description="Record a failed run and announce it",
    memory_mb=256,
    timeout_seconds=120,
    payload={"state": "$", **EXECUTION, **EXECUTION_NAME},
    result_path="$.failure",
    table=("Query", "GetItem", "UpdateItem"),
    announces=True,
    deletes_run_models=True,
)

STEPS = (
    PLAN,
    SPLIT_OBJECT,
    CHECK_SPLITS,
    ACQUIRE_SPLIT_INSTANCE,
    RELEASE_SPLIT_INSTANCE,
    COPY_UNSPLIT,
    COLLECT,
    ACQUIRE_INSTANCES,
    PREPARE_JOB,
    RELEASE_INSTANCES,
    COUNT_SHARD,
    SCORE_SHARD,
    SCORING_OUTCOME,
    VERIFY,
    MERGE_OBJECT,
    FINALIZE,
    RECORD_FAILURE,
)
