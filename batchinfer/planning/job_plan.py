"""``batchinfer plan``: what a job over some inputs would do and cost, before it runs.

The inputs are surveyed (objects, bytes, records, the largest record, shards), the common
mistakes are named, and with a model the job's throughput is calibrated on a sample and
turned into a duration per instance and a cost; for the endpoint engine, into the requests
sent and their time at the stack's concurrency.
"""

import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from batchinfer.endpoints.targets import DEFAULT_ENDPOINT_CONCURRENCY
from batchinfer.engine.inputs import InputFile, collect_inputs, header_settings
from batchinfer.engine.s3_inputs import fetch_model, in_s3, s3_inputs
from batchinfer.engine.s3_requests import s3_client
from batchinfer.engines import Engine, PipelineEngine
from batchinfer.errors import InputError, ValidationError
from batchinfer.instances.prices import Price, hourly_price
from batchinfer.instances.specs import InstanceSpec, instance_spec
from batchinfer.instances.supported import check_instance_type
from batchinfer.planning import advice
from batchinfer.planning.advice import Advice
from batchinfer.planning.calibrate import Calibration, CalibrationFailed, calibrate
from batchinfer.planning.endpoint_estimate import EndpointEstimate, endpoint_estimate
from batchinfer.planning.estimate import Estimate, JobEstimate, Throughput, Unit, job_estimate
from batchinfer.planning.scan import Reservoir
from batchinfer.planning.survey import InputSurvey, Sharding, survey_local, survey_s3_object
from batchinfer.planning.tune import (
    PAYLOADS_MB,
    TunePoint,
    indistinct,
    most_in_flight,
    sweep,
    sweep_objects,
    tune_json,
)
from batchinfer.sharding.selection import EVERY_INPUT, InputSelection
from batchinfer.transform.csv_dialect import check_header_type
from batchinfer.transform.records import check_skip_blank_lines
from batchinfer.transform.settings import TransformSettings
from batchinfer.units import MIB

DEFAULT_REGION = "us-east-1"
DEFAULT_SAMPLE_RECORDS = 4000
SAMPLE_OBJECTS = 8  # SplitType None: whole objects sent for calibration, at most


@dataclass(frozen=True)
class PlanRequest:
    inputs: list[str]
    settings: TransformSettings
    engine: PipelineEngine = "transform"
    sharding: Sharding = field(default_factory=Sharding)
    merge: bool = False
    selection: InputSelection = EVERY_INPUT
    skip_blank_lines: bool = False
    model: Path | str | None = None  # a local path, or an s3:// URI of a model.tar.gz
    region: str = DEFAULT_REGION
    prices: dict[str, float] = field(default_factory=dict)
    sample_records: int = DEFAULT_SAMPLE_RECORDS
    tune: bool = False
    endpoint_concurrency: int = DEFAULT_ENDPOINT_CONCURRENCY
    # The inputs start with a header row: it is no record; its names reach the model.
    header: bool = False
    # Rows a second of one instance of the job's type, measured on it (--throughput).
    throughput: float | None = None

    @property
    def job_engine(self) -> Engine:
        """The engine whose instances the sample is measured on: an endpoint's container
        speaks the transform contract."""
        return "transform" if self.engine == "endpoint" else self.engine


@dataclass
class Plan:
    request: PlanRequest
    inputs: list[InputSurvey]
    spec: InstanceSpec | None
    price: Price | None
    calibration: Calibration | None = None
    job: JobEstimate | None = None
    warnings: list[Advice] = field(default_factory=list)
    tuning: list[TunePoint] | None = None
    endpoint: EndpointEstimate | None = None

    @property
    def units(self) -> int:
        """What the job's instances share out: inputs and shards (R3: each input object goes whole
        to one instance)."""
        return sum(i.shards for i in self.inputs)

    @property
    def estimate(self) -> Estimate | None:
        return None if self.job is None else self.job.duration

    @property
    def records(self) -> int | None:
        counts = [i.records for i in self.inputs]
        return None if None in counts else sum(c or 0 for c in counts)

    def to_json(self) -> dict[str, Any]:
        request, job = self.request, self.job
        assert job is not None, "make_plan estimates every plan it returns"
        return {
            "inputs": request.inputs,
            "engine": request.engine,
            "header": request.header,
            "region": request.region,
            "settings": request.settings.to_state(),
            "objects": job.objects,
            "bytes": job.bytes,
            "records": self.records,
            "shards": job.shards,
            "instances": job.instances,
            "busy_instances": job.busy_instances,
            "jobs": job.jobs,
            "files": [asdict(i) for i in self.inputs],
            "largest_record": largest_record(self),
            "instance": {"type": request.settings.instance_type}
            | ({} if self.spec is None else asdict(self.spec)),
            "price": None if self.price is None else asdict(self.price),
            "calibration": None if self.calibration is None else self.calibration.to_json(),
            "estimate": None if self.estimate is None else self.estimate.to_json(),
            "warnings": [asdict(w) for w in self.warnings],
            "tune": None if self.tuning is None else tune_json(self.tuning),
            "endpoint": None if self.endpoint is None else self.endpoint.to_json(),
        }


def largest_record(plan: Plan) -> dict[str, Any] | None:
    """The largest record of all inputs, and the payload limit it must fit (R8: a record larger than
    MaxPayloadInMB fails its file)."""
    found = [(i.largest.size, i.name, i.largest.number) for i in plan.inputs if i.largest]
    if not found:
        return None
    size, name, number = max(found, key=lambda f: f[0])
    limit = plan.request.settings.resolve().max_payload_bytes
    return {
        "file": name,
        "record": number,
        "bytes": size,
        "max_payload_bytes": limit,
        "fits": limit is None or size <= limit,
    }


def default_region() -> str:
    return os.environ.get("AWS_REGION") or DEFAULT_REGION


def make_plan(
    request: PlanRequest,
    on_stage: Callable[[str], None] = lambda _s: None,
    on_point: Callable[[TunePoint], None] = lambda _p: None,
) -> Plan:
    """Survey, check, calibrate (with a model), estimate and with ``tune`` sweep the batch
    settings (each point measured goes to ``on_point``); invalid requests raise
    ValidationError naming the option."""
    settings = request.settings
    scoring = request.engine == "endpoint"
    if scoring:
        if request.endpoint_concurrency < 1:
            raise ValidationError(
                f"--endpoint-concurrency: {request.endpoint_concurrency} must be at least 1"
            )
    else:
        check_instance_type(settings.instance_type, request.engine)
    if request.sample_records < 1:
        raise ValidationError(f"--sample-records: {request.sample_records} must be at least 1")
    if request.throughput is not None:
        _check_throughput(request)
    if request.skip_blank_lines:
        check_skip_blank_lines(settings.split_type)
    remote = in_s3(request.inputs)
    if request.header:
        check_header_type(settings)
    if isinstance(request.model, str):  # in S3: measured from a copy, gone afterwards
        with tempfile.TemporaryDirectory(prefix="batchinfer-plan-") as folder:
            model = fetch_model(s3_client(), request.model, Path(folder))
            return make_plan(replace(request, model=model), on_stage=on_stage, on_point=on_point)
    if request.model is not None and not request.model.exists():
        raise InputError(f"--model {request.model}: no such file or directory")
    if request.tune:
        _check_tune(request, remote)
    warnings = advice.sharding(request.settings, request.sharding, request.merge)
    calibrating = request.model is not None and not remote
    reservoir = Reservoir(request.sample_records if calibrating else 0)
    on_stage("scan")
    files: list[InputFile] = []
    measured = settings  # what the model server is told: with the header's names
    if remote:
        surveys = _survey_s3(request)
        if request.model is not None:
            warnings.append(advice.s3_not_calibrated())
    else:
        files = collect_inputs([Path(i) for i in request.inputs], request.selection)
        if request.header:  # refuses an input whose header differs, as run does
            measured = header_settings(files, settings)
        surveys = [
            survey_local(
                f,
                settings,
                request.sharding,
                reservoir,
                header=request.header,
                skip_blank_lines=request.skip_blank_lines,
            )
            for f in files
        ]
    price = (
        None if scoring else hourly_price(settings.instance_type, request.region, request.prices)
    )
    plan = Plan(request, surveys, None, price)
    plan.warnings = warnings + advice.inputs(plan.inputs, settings, plan.units)
    try:
        plan.spec = None if scoring else instance_spec(settings.instance_type)
    except ValidationError as exc:
        plan.warnings.append(advice.no_spec(str(exc)))
    if plan.price is None and not scoring:
        plan.warnings.append(advice.no_price(settings.instance_type, request.region))
    if calibrating:
        on_stage("calibrate")
        plan.calibration = _calibrate(request, measured, files, reservoir, plan)
    if request.tune and plan.calibration is not None:
        on_stage("tune")
        plan.tuning = _tune(request, measured, reservoir.sample(), files, plan, on_point)
    throughput = _throughput(request, plan)
    units = _units(plan.inputs)
    plan.job = job_estimate(
        units,
        objects=len(plan.inputs),
        bytes=sum(i.bytes for i in plan.inputs),
        shards=plan.units,
        settings=settings,
        engine=request.job_engine,
        price=plan.price,
        spec=plan.spec,
        throughput=None if scoring else throughput,
    )
    if scoring:
        plan.endpoint = endpoint_estimate(
            units, settings, concurrency=request.endpoint_concurrency, throughput=throughput
        )
    return plan


def _check_throughput(request: PlanRequest) -> None:
    if request.throughput is None or request.throughput <= 0:
        raise ValidationError(f"--throughput: {request.throughput} must be above 0 rows/s")
    if request.settings.split_type != "Line":
        raise ValidationError("--throughput: needs --split-type Line (rows to count)")
    if request.engine == "endpoint":
        raise ValidationError("--throughput: not with --engine endpoint (the endpoint's speed)")


def _throughput(request: PlanRequest, plan: Plan) -> Throughput | None:
    """The speed to estimate with: ``--throughput`` (one instance of the job's type, rows a
    second, in bytes by the inputs' mean record), else the calibration's; a warning where
    neither tells a GPU instance's speed."""
    calibrated = None if plan.calibration is None else plan.calibration.throughput
    if request.throughput is None:
        spec = plan.spec
        if spec is not None and spec.gpus and request.engine != "endpoint":
            plan.warnings.append(
                advice.gpu_not_measured(request.settings.instance_type, spec.gpus, spec.gpu_model)
            )
        return calibrated
    counted = [i for i in plan.inputs if i.records and i.data_bytes is not None]
    if len(counted) < len(plan.inputs) or not counted:
        plan.warnings.append(advice.throughput_without_records())
        return None
    mean = sum(i.data_bytes or 0 for i in counted) / sum(i.records or 0 for i in counted)
    instance = request.settings.instance_type
    return Throughput(
        request.throughput,
        request.throughput * mean,
        1,
        f"--throughput {request.throughput:,g} rows/s, measured on {instance}",
        per_instance=True,
    )


def _check_tune(request: PlanRequest, remote: bool) -> None:
    needs = [
        (request.model is None, "--model (the model whose server is measured)"),
        (remote, "local inputs (the sample is drawn from them)"),
        (request.engine != "transform", "--engine transform (a processing job has no batches)"),
        (
            request.settings.split_type not in ("Line", "None"),
            "--split-type Line (records to batch) or None (whole objects)",
        ),
    ]
    for missing, what in needs:
        if missing:
            raise ValidationError(f"--tune: needs {what}")


def _tune(
    request: PlanRequest,
    settings: TransformSettings,
    sample: list[bytes],
    files: list[InputFile],
    plan: Plan,
    on_point: Callable[[TunePoint], None],
) -> list[TunePoint] | None:
    """The sweep over ``settings`` (the model server's) on the Line records ``sample``, or
    with SplitType None on whole objects of ``files`` as calibration sends them; None with a
    warning when the model fails."""
    assert isinstance(request.model, Path)  # an S3 model was fetched by make_plan
    calibration = plan.calibration
    assert calibration is not None
    try:
        if settings.split_type == "None":
            wanted = 2 * calibration.local_cpus  # two requests a core at most
            objects = _sample_objects(files, plan, max(SAMPLE_OBJECTS, wanted))
            points = sweep_objects(
                request.model,
                settings,
                objects,
                calibration.local_cpus,
                on_point,
                header=request.header,
            )
            count = f"{len(objects)} whole object{'s' if len(objects) != 1 else ''}"
            told = (count, "objects of more records tell them apart")
            fewer = most_in_flight(len(objects), calibration.local_cpus)
            most = most_in_flight(wanted, calibration.local_cpus)
            if fewer < most:
                plan.warnings.append(advice.few_tune_objects(len(objects), fewer, most))
        else:
            told = (f"{len(sample):,} records", "raise --sample-records")
            largest = largest_record(plan)
            if calibration.bytes <= PAYLOADS_MB[0] * MIB:
                plan.warnings.append(advice.small_tune_sample(calibration.bytes, PAYLOADS_MB[0]))
            points = sweep(
                request.model,
                settings,
                sample,
                0 if largest is None else largest["bytes"],
                calibration.local_cpus,
                on_point,
            )
    except CalibrationFailed as exc:
        plan.warnings.append(advice.calibration_failed(str(exc)))
        return None
    if indistinct(points):
        plan.warnings.append(advice.indistinct_tune_points(*told))
    return points


def _survey_s3(request: PlanRequest) -> list[InputSurvey]:
    """The S3 objects a run of the request would take, as ``batchinfer run`` lists them."""
    import boto3

    s3 = boto3.client("s3", region_name=request.region)
    return [
        survey_s3_object(
            obj.name,
            obj.uri,
            obj.size,
            request.settings,
            request.sharding,
            s3,
            header=request.header,
        )
        for obj in s3_inputs(s3, request.inputs, request.selection)
    ]


def _calibrate(
    request: PlanRequest,
    settings: TransformSettings,
    files: list[InputFile],
    reservoir: Reservoir,
    plan: Plan,
) -> Calibration | None:
    """The sample measured with ``settings`` (the model server's), or None with a warning."""
    assert isinstance(request.model, Path)  # an S3 model was fetched by make_plan
    try:
        if settings.split_type == "Line":
            sample = reservoir.sample()
            if not sample:
                plan.warnings.append(advice.nothing_to_calibrate("the inputs hold no records"))
                return None
            return calibrate(request.model, request.job_engine, settings, records=sample)
        objects = _sample_objects(files, plan)
        if not objects:
            plan.warnings.append(advice.nothing_to_calibrate("no input object fits MaxPayloadInMB"))
            return None
        return calibrate(
            request.model, request.job_engine, settings, objects=objects, header=request.header
        )
    except CalibrationFailed as exc:
        plan.warnings.append(advice.calibration_failed(str(exc)))
        return None


def _sample_objects(
    files: list[InputFile], plan: Plan, count: int = SAMPLE_OBJECTS
) -> list[InputFile]:
    """Up to ``count`` whole objects spread across the inputs, each within the payload limit
    (SplitType None sends each object as one request)."""
    limit = plan.request.settings.resolve().max_payload_bytes
    fitting = [
        f
        for f, s in zip(files, plan.inputs, strict=True)
        if s.largest is not None
        and s.largest.size > 0
        and (limit is None or s.largest.size <= limit)
    ]
    step = max(1, len(fitting) // count)
    return fitting[::step][:count]


def _units(inputs: list[InputSurvey]) -> list[Unit]:
    """Each input, or each of its shards (an equal part of its records and bytes)."""
    units = []
    for survey in inputs:
        records, data = survey.records, survey.data_bytes or survey.bytes
        for shard in range(survey.shards):
            name = survey.name if survey.shards == 1 else f"{survey.name}#{shard:05d}"
            part = None if records is None else records / survey.shards
            units.append(Unit(name, part, data / survey.shards))
    return units
