"""Plan: validate and normalise a run request, list its inputs, claim the run id.

A request needs only ``input``; every other key is optional (defaults come from the stack)
and checked here, so a bad request fails before any work with a message naming the key.
A request may name its objects (``names``: paths relative to ``input``, as a ManifestFile
does, R4: a key prefix or a ManifestFile selects the input objects) instead of taking every object
under ``input``; the S3 trigger does, so that a later batch of arrivals in the same folder is not
scored again. Under ``input``, hidden and ``_``-prefixed keys are no inputs (``_SUCCESS``,
``_temporary/``), and ``include`` and ``exclude`` globs select among the others
(:mod:`batchinfer.sharding.selection`). The per-object split tasks go to
``runs/<run>/inputs.jsonl`` (JSON Lines, read by the split Map), not into the state. The input
is listed page by page and the tasks wait in a spooled file, so Plan's memory does not grow
with the number of objects; no object count is refused (docs/scaling.md).
"""

import posixpath
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, replace
from typing import Any

from batchinfer.endpoints.scoring import endpoint_settings
from batchinfer.endpoints.targets import (
    EndpointTarget,
    check_in_service,
)
from batchinfer.errors import ValidationError
from batchinfer.instances.supported import check_instance_type
from batchinfer.pipeline.contract.data_places import place_of
from batchinfer.pipeline.contract.environment import PipelineEnvironment
from batchinfer.pipeline.contract.job_names import job_base
from batchinfer.pipeline.contract.layout import RunLayout, check_key_bytes
from batchinfer.pipeline.contract.state import RunPlan, SplitTask
from batchinfer.pipeline.jobs.job_requests import (
    check_payload_times_concurrency,
    processing_arguments,
)
from batchinfer.pipeline.jobs.run_estimate import ShardTally, run_estimate
from batchinfer.pipeline.jobs.run_image import run_image
from batchinfer.pipeline.jobs.run_model import (
    MODEL_KEYS,
    OwnModel,
    create_run_model,
    model_on_image,
    own_model,
    run_model_name,
)
from batchinfer.pipeline.jobs.run_request import RunRequest, check_endpoint_keys, engine_of
from batchinfer.pipeline.jobs.split_job import JOB, choose_splitter, is_gzip, with_splitter
from batchinfer.pipeline.storage.ordered import ordered_map
from batchinfer.pipeline.storage.s3io import SpooledJson, parquet_rows, write_json
from batchinfer.pipeline.storage.status_table import StatusTable
from batchinfer.sharding.auto import parquet_shard_size
from batchinfer.sharding.compatibility import check_sharding
from batchinfer.sharding.header import header_digest, read_header_line
from batchinfer.sharding.listing import input_objects
from batchinfer.sharding.s3 import S3Source
from batchinfer.transform.csv_dialect import (
    check_header_type,
    custom_attributes,
    header_names,
    with_header,
)
from batchinfer.transform.settings import TransformSettings
from batchinfer.units import parse_size
from batchinfer.uris import S3Location, parse_s3_uri

# Parquet footers read at once: each is one small ranged GET of 0.2 s (as the scale harness
# charges it) and about 1.4 ms of botocore's CPU; at 128 at a time and one vCPU (Plan's
# 1,769 MB) the modelled run of 100,000 objects takes 320-341 s of its 900 (docs/scaling.md).
# The S3 client's pool holds as many connections (clients.S3_CONNECTIONS).
FOOTER_READS = 128


def plan_run(
    request: Any,
    *,
    execution: str,
    execution_name: str,
    started_at: str,
    env: PipelineEnvironment,
    s3: Any,
    sagemaker: Any,
    table: StatusTable,
) -> RunPlan:
    """Check ``request``, write the input list and the RUN item, create the run's own
    model if it has one; return the plan."""
    run_request = RunRequest.parse(request)
    run_id = run_request.run_id_or(execution_name)
    layout = RunLayout(env.data_bucket, run_id)
    source = _input(run_request.input, env)
    output = _output(run_request.output, layout, env)
    engine = run_request.engine or engine_of(env.engine)
    settings = TransformSettings.from_request(run_request.settings, defaults=env.transform_defaults)
    target = _endpoint(run_request, engine, env)
    if target is not None:
        endpoint_settings(settings)  # C8: a real-time request holds at most 6 MB
        check_in_service(sagemaker, target.name)
    else:
        check_instance_type(settings.instance_type, engine)
    if engine == "processing":
        processing_arguments(settings)  # fails early when the settings do not fit
    elif engine == "transform":
        check_payload_times_concurrency(settings, env)
    if engine == "processing" and env.framework_image:
        raise ValidationError(
            f"engine: processing jobs run batchinfer's image; this stack's model image is "
            f"AWS's {env.framework_image} image, which serves transform jobs only"
        )
    model = own_model(run_request.given, env, sagemaker)
    if target is None:
        image = run_image(settings.instance_type, env)  # refuses a type no build serves
        if engine == "transform":  # processing jobs name their image themselves
            model = model_on_image(model, image, settings.instance_type, env)
            _check_quarantine(settings, model, env)
    if engine == "processing" and model is None and not env.model_data_url:
        raise ValidationError(
            "engine: processing jobs load the model's data, and the stack's model is an "
            "existing model whose data they may not read; name model_data or "
            "model_package_arn for the run, or use engine transform"
        )
    if run_request.header:
        check_header_type(settings, option="header")
    split = _split_options(run_request, settings, env)
    merge = run_request.merge
    check_sharding(settings, split=None, merge="merge" if merge else None)
    tally = ShardTally(split["size"], keep=run_request.estimate.throughput is not None)
    jobs_base = job_base(env.job_prefix, run_id)
    threshold = env.split_job_threshold
    with SpooledJson("lines") as tasks:
        total, rows, split_jobs, header_line = _split_tasks(
            s3, source, run_request, layout, settings, split, tasks, tally,
            threshold=threshold, job_base=jobs_base,
            object_keys=lambda relative: layout.object_keys(
                relative, output, merge=run_request.merge, endpoint=target is not None
            ),
        )  # fmt: skip
        if header_line is not None:
            names = header_names(header_line, settings, source=source.uri)
            settings = with_header(settings, names)
            if target is not None:  # an endpoint is told the names with each request
                custom_attributes(settings.job_environment)
        objects = tasks.count
        job = run_estimate(
            tally,
            objects=objects,
            bytes=total,
            settings=settings,
            engine=engine,
            region=s3.meta.region_name,
            asked=run_request.estimate,
        )
        model_name = run_model_name(jobs_base) if model else None
        table.create_run(
            run_id,
            execution,
            execution_started_at=started_at,
            input=source.uri,
            output=output.uri,
            engine=engine,
            objects=objects,
            bytes=total,
            **({"rows": rows} if rows is not None else {}),
            settings={k: v for k, v in settings.to_state().items() if v is not None and v != {}},
            estimate=job.to_item(),
            split_jobs=split_jobs,
            **({"split_job_threshold": threshold} if threshold is not None else {}),
            **({"run_model": model_name, "model_data": model.model_data_url} if model else {}),
        )
        # Only the execution that claimed the run id writes the run's objects.
        inputs = layout.inputs
        tasks.upload(s3, inputs)
    environment = (
        write_json(s3, layout.environment, settings.environment) if settings.environment else None
    )
    if model is not None and model_name is not None:
        create_run_model(model, model_name, run_id=run_id, env=env, sagemaker=sagemaker)
    return RunPlan(
        run_id=run_id,
        engine=engine,
        input=source.uri,
        output=output.uri,
        job_output=(layout.parts if merge else output).uri,
        artefacts=layout.artefacts.uri,
        shards_prefix=layout.shards.uri,
        inputs_key=inputs.key,
        objects=objects,
        bytes=total,
        settings=replace(settings, environment={}),
        merge=merge,
        max_rounds=env.max_rounds,
        job_base=jobs_base,
        environment_uri=environment,
        model_name=model_name,
        model_data_url=model.model_data_url if model else None,
        endpoint=asdict(target) if target else None,
    )


def _check_quarantine(
    settings: TransformSettings, model: OwnModel | None, env: PipelineEnvironment
) -> None:
    """``bad_records`` quarantine in a transform job needs batchinfer's model server: the
    platform's agent fails the job on a refused record, and only that server sets one
    aside. ValidationError where the job's model runs another image."""
    if settings.bad_record_allowance is None:
        return
    if env.framework_image:
        image = f"AWS's {env.framework_image} image"
    elif model is not None and model.package_arn:
        image = f"the image of model package {model.package_arn}"
    else:
        return
    raise ValidationError(
        "bad_records (BadRecords): 'quarantine' in a transform job needs batchinfer's model "
        f"server, which sets refused records aside; this run's model runs {image}, which "
        "fails the job on the first one. Use engine endpoint (which sets them aside "
        "itself), or bad_records 'fail'"
    )


def _endpoint(
    run_request: RunRequest, engine: str, env: PipelineEnvironment
) -> EndpointTarget | None:
    """The endpoint a run of the endpoint engine scores through: the request's
    ``endpoint`` (default: the stack's first), one the stack may invoke, with the
    request's variant or inference component over the configured ones."""
    given = run_request.endpoint
    check_endpoint_keys(given, engine)
    if engine != "endpoint":
        return None
    for key in MODEL_KEYS:
        if key in run_request.given:
            raise ValidationError(
                f"{key}: engine endpoint scores through an endpoint that already serves a "
                "model; leave it out"
            )
    allowed = env.endpoints
    if not allowed:
        raise ValidationError(
            "engine: endpoint needs an endpoint this stack may invoke; none is configured "
            "(endpoints in cdk.json)"
        )
    name = given.get("endpoint", allowed[0].name)
    configured = next((t for t in allowed if t.name == name), None)
    if configured is None:
        raise ValidationError(
            f"endpoint: {name!r} is not one this stack may invoke; allowed: "
            + ", ".join(t.name for t in allowed)
        )
    return EndpointTarget(
        name,
        given.get("endpoint_variant", configured.variant),
        given.get("inference_component", configured.inference_component),
    )


def _input(uri: Any, env: PipelineEnvironment) -> S3Location:
    place_of(uri, "input", env.input_places)
    return parse_s3_uri(uri, field="input")


def _output(uri: Any, layout: RunLayout, env: PipelineEnvironment) -> S3Location:
    if uri is None:
        return layout.default_output
    place_of(uri, "output", env.output_places)
    location = parse_s3_uri(uri, field="output")
    return location if location.key.endswith("/") else location.child("")


def _split_options(
    run_request: RunRequest, settings: TransformSettings, env: PipelineEnvironment
) -> dict[str, Any]:
    """How each object is split: ``shards`` per object or a ``shard_size``; SplitType None
    keeps every object whole (each is one request, R6: what a record is under each SplitType),
    but Parquet, which is cut into whole row groups."""
    shards, size = run_request.given.get("shards"), run_request.given.get("shard_size")
    header = run_request.header
    if shards is not None and size is not None:
        raise ValidationError("shards, shard_size: give one of them, not both")
    if settings.parquet_in:
        return {"header": False, "size": _parquet_size(shards, size, settings, env)}
    if settings.split_type != "Line":
        given = {
            "shards": shards not in (None, 1),
            "shard_size": size is not None,
            "header": header,
        }
        asked = [key for key, value in given.items() if value]
        check_sharding(settings, split=asked[0] if asked else None, merge=None)
        return {"header": False, "size": {"shards": 1}}
    if shards is not None:
        return {"header": header, "size": {"shards": _shard_count(shards)}}
    return {
        "header": header,
        "size": {"shard_size": _shard_bytes(env.shard_size if size is None else size)},
    }


def _parquet_size(
    shards: Any, size: Any, settings: TransformSettings, env: PipelineEnvironment
) -> dict[str, int]:
    """How a Parquet object is split into shards of whole row groups: ``shards`` of them,
    or packed into the shard size, which, as each shard is one request, is at most
    MaxPayloadInMB."""
    if shards is not None:
        return {"shards": _shard_count(shards)}
    target = _shard_bytes(env.shard_size if size is None else size)
    return {"shard_size": parquet_shard_size(target, settings.resolve().max_payload_bytes)}


def _shard_count(shards: Any) -> int:
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise ValidationError(f"shards: {shards!r} is not allowed; allowed: an integer >= 1")
    return shards


def _shard_bytes(size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, int | str):
        raise ValidationError(f"shard_size: {size!r} is not a size such as 64MiB")
    nbytes = parse_size(size, field="shard_size") if isinstance(size, str) else size
    if nbytes < 1:
        raise ValidationError(f"shard_size: {size!r} must be at least 1 byte")
    return nbytes


def _split_tasks(
    s3: Any,
    source: S3Location,
    run_request: RunRequest,
    layout: RunLayout,
    settings: TransformSettings,
    split: dict[str, Any],
    tasks: SpooledJson,
    tally: ShardTally,
    *,
    threshold: int | None,
    job_base: str,
    object_keys: Callable[[str], dict[str, str]],
) -> tuple[int, int | None, int, bytes | None]:
    """Add one :class:`SplitTask` per input object the request selects to ``tasks``, each
    with the splitter that takes it (split_job.py), and its shards to ``tally`` (for the
    estimate); the bytes of all objects, their rows (Parquet, from the footers; else None),
    how many go to split jobs, and the first object's header line (read when the inputs
    have one; each split checks its object's against it). An object whose keys the run
    would write (``object_keys`` of its path under the input's folder) pass what S3 takes,
    or a Parquet object that is not a whole Parquet file, is refused before anything is
    written."""
    base = source.key[: source.key.rfind("/") + 1]
    total = jobs = 0
    parquet = settings.parquet_in and settings.compression_type == "None"
    rows: int | None = 0 if parquet else None  # None once an object's rows are not read
    header_line = None
    listed = input_objects(s3, source, run_request.names, run_request.selection)
    for obj, object_rows in _with_rows(s3, source.bucket, listed, parquet):
        folder = posixpath.dirname(obj["Key"][len(base) :])
        location = S3Location(source.bucket, obj["Key"])
        check_key_bytes(object_keys(obj["Key"][len(base) :]), location.uri)
        gzip = is_gzip(obj["Key"], settings.compression_type)
        if split["header"] and header_line is None:
            header_line = read_header_line(S3Source(s3, location), compressed=gzip)
        task = SplitTask(
            input=location.uri,
            output=layout.shards.child(folder + "/" if folder else "").uri,
            compression_type=settings.compression_type,
            header=split["header"],
            header_sha256=header_digest(header_line) if header_line is not None else None,
            **split["size"],
            rows=object_rows,
        )
        tally.add(obj["Key"], obj["Size"], object_rows)
        rows = None if rows is None or object_rows is None else rows + object_rows
        splitter = choose_splitter(obj["Size"], gzip=gzip, threshold=threshold)
        tasks.add(with_splitter(task, splitter, run_id=layout.run_id, job_base=job_base).to_state())
        total += obj["Size"]
        jobs += splitter == JOB
    return total, rows, jobs, header_line


def _with_rows(
    s3: Any, bucket: str, objects: Iterable[dict[str, Any]], parquet: bool
) -> Iterator[tuple[dict[str, Any], int | None]]:
    """Each listed object with, when the run reads Parquet, its rows (None for a ``.gz``
    object, whose end is not its footer's): from the head of its footer, by ranged reads of
    its end (no download) of the version listed,
    :data:`FOOTER_READS` objects at a time. InputError naming an object that is not a whole
    Parquet file, as far as its end shows."""
    if not parquet:
        return ((obj, None) for obj in objects)

    def read(obj: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        if is_gzip(obj["Key"], "None"):
            return obj, None
        location = S3Location(bucket, obj["Key"])
        return obj, parquet_rows(s3, location, obj["Size"], obj.get("ETag"))

    return ordered_map(read, objects, workers=FOOTER_READS)
