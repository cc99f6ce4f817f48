"""Plan: validate and normalise a run request, list its inputs, claim the run id.

A request needs only ``input``; every other key is optional (defaults come from the stack)
and checked here, so a bad request fails before any work with a message naming the key.
A request may name its objects (``names``: paths relative to ``input``, as a ManifestFile
does, R4) instead of taking every object under ``input``; the S3 trigger does, so that a
later batch of arrivals in the same folder is not scored again. The per-object split tasks
go to ``runs/<run>/inputs.jsonl`` (JSON Lines, read by the
split Map), not into the state. The input is listed page by page and the tasks wait in a
spooled file, so Plan's memory does not grow with the number of objects; no object count
is refused (docs/scaling.md).
"""

import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import asdict, replace
from typing import Any

from batchinfer.engine.endpoint_scoring import endpoint_settings
from batchinfer.engines import PIPELINE_ENGINES
from batchinfer.errors import InputError, ValidationError
from batchinfer.pipeline.data_places import place_of
from batchinfer.pipeline.endpoints import (
    ENDPOINT_NAME,
    EndpointTarget,
    check_in_service,
    targets_from_json,
)
from batchinfer.pipeline.environment import PipelineEnvironment
from batchinfer.pipeline.instance_types import check_instance_type
from batchinfer.pipeline.job_names import job_base
from batchinfer.pipeline.layout import RunLayout
from batchinfer.pipeline.prepare_job import check_payload_times_concurrency, processing_arguments
from batchinfer.pipeline.run_estimate import (
    ESTIMATE_KEY,
    ShardTally,
    estimate_request,
    run_estimate,
)
from batchinfer.pipeline.run_model import MODEL_KEYS, create_run_model, own_model, run_model_name
from batchinfer.pipeline.s3io import SpooledJson, list_objects, named_objects, write_json
from batchinfer.pipeline.split_job import JOB, choose_splitter, is_gzip, with_splitter
from batchinfer.pipeline.state import RunPlan, SplitTask
from batchinfer.pipeline.status_table import StatusTable
from batchinfer.sharding.compatibility import check_sharding
from batchinfer.transform.settings import TransformSettings
from batchinfer.units import parse_size
from batchinfer.uris import S3Location, parse_s3_uri

ENDPOINT_KEYS = ("endpoint", "endpoint_variant", "inference_component")
RUN_KEYS = (
    frozenset(
        {"input", "names", "output", "run_id", "engine", "shards", "shard_size", "header", "merge"}
    )
    | frozenset({ESTIMATE_KEY, *MODEL_KEYS})
    | frozenset(ENDPOINT_KEYS)
)
REQUEST_KEYS = RUN_KEYS | TransformSettings.request_keys()
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


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
    _check_keys(request)
    run_id = run_id_of(request, execution_name)
    layout = RunLayout(env.data_bucket, run_id)
    source = _input(request.get("input"), env)
    names = names_of(request)
    output = _output(request.get("output"), layout, env)
    engine = _engine(request.get("engine", env.engine))
    settings = TransformSettings.from_request(_settings_of(request), defaults=env.defaults)
    target = _endpoint(request, engine, env)
    if target is not None:
        endpoint_settings(settings)  # a real-time request holds at most 6 MB (C8)
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
    model = own_model(request, env, sagemaker)
    if engine == "processing" and model is None and not env.model_data_url:
        raise ValidationError(
            "engine: processing jobs load the model's data, and the stack's model is an "
            "existing model whose data they may not read; name model_data or "
            "model_package_arn for the run, or use engine transform"
        )
    split = _split_options(request, settings, env)
    merge = _flag(request, "merge")
    check_sharding(settings, split=None, merge="merge" if merge else None)
    asked = estimate_request(request)
    tally = ShardTally(split["size"], keep=asked.throughput is not None)
    jobs_base = job_base(env.job_prefix, run_id)
    threshold = env.split_threshold
    with SpooledJson("lines") as tasks:
        total, split_jobs = _split_tasks(
            s3, source, names, layout, settings, split, tasks, tally,
            threshold=threshold, job_base=jobs_base,
        )  # fmt: skip
        objects = tasks.count
        job = run_estimate(
            tally,
            objects=objects,
            bytes=total,
            settings=settings,
            engine=engine,
            region=s3.meta.region_name,
            asked=asked,
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
        max_rounds=int(env.max_rounds),
        job_base=jobs_base,
        environment_uri=environment,
        model_name=model_name,
        model_data_url=model.model_data_url if model else None,
        endpoint=asdict(target) if target else None,
    )


def check_request(request: Any) -> None:
    """The checks of :func:`plan_run` that need neither the stack's configuration nor AWS:
    the keys, the run id, input and output as S3 URIs, the engine, the flags and each
    transform setting given. Which places and models the stack allows, settings that must
    agree with each other, and the sharding depend on the stack: the Plan checks those."""
    _check_keys(request)
    if "run_id" in request:
        run_id_of(request, "")
    for key in ("input", "output"):
        if key == "input" or request.get(key) is not None:
            _s3_uri(request.get(key), key)
    names_of(request)
    if "engine" in request:
        _engine(request["engine"])
    _endpoint_keys(request, request.get("engine"))
    for key in ("header", "merge"):
        _flag(request, key)
    TransformSettings.check_given(_settings_of(request))
    estimate_request(request)


def _s3_uri(uri: Any, field: str) -> None:
    if not isinstance(uri, str):
        raise ValidationError(f"{field}: required, an s3:// URI")
    parse_s3_uri(uri, field=field)


def _check_keys(request: Any) -> None:
    if not isinstance(request, Mapping):
        raise ValidationError(
            f'request: expected an object such as {{"input": "s3://..."}}, got {request!r}'
        )
    unknown = sorted(set(request) - REQUEST_KEYS)
    if unknown:
        raise ValidationError(
            f"request: unknown key {unknown[0]!r}; known keys: {', '.join(sorted(REQUEST_KEYS))}"
        )


def _engine(engine: Any) -> str:
    if engine not in PIPELINE_ENGINES:
        raise ValidationError(
            f"engine: {engine!r} is not allowed; allowed: {', '.join(PIPELINE_ENGINES)}"
        )
    return engine


def _endpoint_keys(request: Mapping[str, Any], engine: Any) -> dict[str, Any]:
    """The request's endpoint keys, which only the endpoint engine takes."""
    given = {key: request[key] for key in ENDPOINT_KEYS if key in request}
    if given and engine not in (None, "endpoint"):
        raise ValidationError(
            f"{next(iter(given))}: only with engine endpoint, not engine {engine!r}"
        )
    for key, value in given.items():
        if not isinstance(value, str) or not ENDPOINT_NAME.fullmatch(value):
            raise ValidationError(
                f"{key}: {value!r} is not allowed; allowed: 1-63 letters, digits and hyphens, "
                "starting with a letter or digit"
            )
    return given


def _endpoint(
    request: Mapping[str, Any], engine: str, env: PipelineEnvironment
) -> EndpointTarget | None:
    """The endpoint a run of the endpoint engine scores through: the request's
    ``endpoint`` (default: the stack's first), one the stack may invoke, with the
    request's variant or inference component over the configured ones."""
    given = _endpoint_keys(request, engine)
    if engine != "endpoint":
        return None
    for key in MODEL_KEYS:
        if key in request:
            raise ValidationError(
                f"{key}: engine endpoint scores through an endpoint that already serves a "
                "model; leave it out"
            )
    allowed = targets_from_json(env.endpoints)
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


def _settings_of(request: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in request.items() if key not in RUN_KEYS}


def run_id_of(request: Mapping[str, Any], execution_name: str) -> str:
    """The request's ``run_id``, else the execution's name."""
    run_id = request.get("run_id", execution_name)
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        raise ValidationError(
            f"run_id: {run_id!r} is not allowed; allowed: 1-80 letters, digits, '.', '_' or "
            "'-', starting with a letter or digit"
        )
    return run_id


def names_of(request: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The request's ``names`` (object paths relative to ``input``), or None: every object
    under ``input``."""
    names = request.get("names")
    if names is None:
        return None
    if not isinstance(names, list) or not names:
        raise ValidationError(
            f"names: {names!r} is not allowed; allowed: a non-empty list of object paths "
            "relative to input"
        )
    seen = set()
    for number, name in enumerate(names):
        if not isinstance(name, str) or not name or name.endswith("/"):
            raise ValidationError(
                f"names[{number}]: {name!r} is not an object path relative to input"
            )
        if name in seen:
            raise ValidationError(f"names[{number}]: {name!r} is named twice")
        seen.add(name)
    return tuple(names)


def _input(uri: Any, env: PipelineEnvironment) -> S3Location:
    place_of(uri, "input", env.input_places)
    return parse_s3_uri(uri, field="input")


def _output(uri: Any, layout: RunLayout, env: PipelineEnvironment) -> S3Location:
    if uri is None:
        return layout.default_output
    place_of(uri, "output", env.output_places)
    location = parse_s3_uri(uri, field="output")
    return location if location.key.endswith("/") else location.child("")


def _flag(request: Mapping[str, Any], key: str) -> bool:
    value = request.get(key, False)
    if not isinstance(value, bool):
        raise ValidationError(f"{key}: {value!r} is not allowed; allowed: true or false")
    return value


def _split_options(
    request: Mapping[str, Any], settings: TransformSettings, env: PipelineEnvironment
) -> dict[str, Any]:
    """How each object is split: ``shards`` per object or a ``shard_size``; SplitType None
    keeps every object whole (each is one request, R6)."""
    shards, size = request.get("shards"), request.get("shard_size")
    header = _flag(request, "header")
    if shards is not None and size is not None:
        raise ValidationError("shards, shard_size: give one of them, not both")
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
        if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
            raise ValidationError(f"shards: {shards!r} is not allowed; allowed: an integer >= 1")
        return {"header": header, "size": {"shards": shards}}
    if size is None:
        size = env.shard_size
    if isinstance(size, bool) or not isinstance(size, int | str):
        raise ValidationError(f"shard_size: {size!r} is not a size such as 64MiB")
    nbytes = parse_size(size, field="shard_size") if isinstance(size, str) else size
    if nbytes < 1:
        raise ValidationError(f"shard_size: {size!r} must be at least 1 byte")
    return {"header": header, "size": {"shard_size": nbytes}}


def _split_tasks(
    s3: Any,
    source: S3Location,
    names: tuple[str, ...] | None,
    layout: RunLayout,
    settings: TransformSettings,
    split: dict[str, Any],
    tasks: SpooledJson,
    tally: ShardTally,
    *,
    threshold: int | None,
    job_base: str,
) -> tuple[int, int]:
    """Add one :class:`SplitTask` per input object to ``tasks``, each with the splitter
    that takes it (split_job.py), and its shards to ``tally`` (for the estimate); the bytes
    of all objects and how many go to split jobs."""
    base = source.key[: source.key.rfind("/") + 1]
    total = jobs = 0
    for obj in input_objects(s3, source, names):
        folder = posixpath.dirname(obj["Key"][len(base) :])
        task = SplitTask(
            input=S3Location(source.bucket, obj["Key"]).uri,
            output=layout.shards.child(folder + "/" if folder else "").uri,
            compression_type=settings.compression_type,
            header=split["header"],
            **split["size"],
        )
        tally.add(obj["Key"], obj["Size"])
        gzip = is_gzip(obj["Key"], settings.compression_type)
        splitter = choose_splitter(obj["Size"], gzip=gzip, threshold=threshold)
        tasks.add(with_splitter(task, splitter, run_id=layout.run_id, job_base=job_base).to_state())
        total += obj["Size"]
        jobs += splitter == JOB
    return total, jobs


def input_objects(
    s3: Any, source: S3Location, names: tuple[str, ...] | None = None
) -> Iterator[dict[str, Any]]:
    """The objects a run of ``source`` takes (folder markers left out), listed page by page,
    or only those ``names`` gives (each must exist); once the listing ends, InputError when
    there were none or only empty ones."""
    count = nonempty = 0
    listed = list_objects(s3, source) if names is None else named_objects(s3, source, names)
    for obj in listed:
        if obj["Key"].endswith("/"):  # folder markers made by consoles
            continue
        count += 1
        nonempty += obj["Size"] > 0
        yield obj
    if not count:
        raise InputError(f"input: no objects under {source.uri}")
    if not nonempty:
        raise InputError(f"input: every object under {source.uri} is empty")
