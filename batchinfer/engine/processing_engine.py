"""The processing engine: ``instance_count`` Processing-job containers, run as local processes.

Files are spread over instances as ShardedByS3Key does (P4: disjoint and complete, each
instance gets ~1/n of the objects, some none when there are fewer objects than instances).
Each instance runs ``batchinfer process`` (the image's own entrypoint; the command alone,
``python -m batchinfer.commands.process``, which starts sooner) on its files with
its share of the cores; it writes the ``.out`` files and a per-file report.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict
from pathlib import Path
from typing import IO

from batchinfer.engine.inputs import InputFile, save_ranges
from batchinfer.engine.key_split import shard_by_key
from batchinfer.engine.local_instances import local_instances
from batchinfer.engine.outcomes import EngineInterrupted, EngineReport, FileOutcome, Progress
from batchinfer.errors import BatchInferError
from batchinfer.parent_death import child_of_this_process
from batchinfer.transform.assemble import output_name
from batchinfer.transform.file_transform import FileStats
from batchinfer.transform.server_limits import execution_parameters
from batchinfer.transform.settings import TransformSettings


def run_processing(
    files: list[InputFile],
    output_dir: Path,
    *,
    model_dir: Path,
    settings: TransformSettings,
    progress: Progress | None = None,
    skip_blank_lines: bool = False,
    marks_in_output: bool = False,
) -> EngineReport:
    """Run every file through ``settings.instance_count`` processing instances, each telling
    its progress as JSON lines on its stdout. Ctrl-C stops them all and raises
    EngineInterrupted (their reports come only at the end, so no file counts as done).
    ``skip_blank_lines`` drops empty lines (``batchinfer process --skip-blank-lines``);
    ``marks_in_output`` leaves records set aside marked in the outputs
    (``--marks-in-output``)."""
    progress = progress or Progress()
    instances, model_env = local_instances(settings)
    # Each instance, in a process group of its own, stops once this process is gone.
    env = child_of_this_process({**os.environ, **model_env})
    with tempfile.TemporaryDirectory(prefix="batchinfer-processing-") as scratch:
        running = []
        assignments = shard_by_key(files, settings.instance_count)
        for instance, (assigned, local) in enumerate(zip(assignments, instances, strict=True)):
            if not assigned:
                continue
            host = Path(scratch) / f"algo-{instance + 1}"
            ranges = _stage_inputs(assigned, host / "input")
            command = [
                sys.executable,
                "-m",
                "batchinfer.commands.process",  # `batchinfer process` alone, without the others
                f"--settings-json={json.dumps(asdict(settings))}",
                f"--input-dir={host / 'input'}",
                *([f"--input-ranges={ranges}"] if ranges else []),
                f"--model-dir={model_dir}",
                f"--output-dir={output_dir}",
                f"--workers={local.workers}",
                f"--report={host / 'report.json'}",
                f"--message-file={host / 'message'}",
                "--progress",
                *(["--skip-blank-lines"] if skip_blank_lines else []),
                *(["--marks-in-output"] if marks_in_output else []),
            ]
            log = (host / "log").open("wb")
            proc = subprocess.Popen(
                command,
                env=env | local.environment,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
            assert proc.stdout is not None
            reader = threading.Thread(
                target=_relay_progress,
                args=(proc.stdout, instance, assigned, progress),
                name=f"algo-{instance + 1}-progress",
                daemon=True,
            )
            reader.start()
            running.append((instance, assigned, host, proc, reader))
        progress.instances_ready(len(running))
        outcomes: dict[str, FileOutcome] = {}
        try:
            for instance, assigned, host, proc, reader in running:
                proc.wait()
                reader.join()
                for outcome in _read_report(instance, assigned, host, output_dir, proc.returncode):
                    outcomes[outcome.file.name] = outcome
                    progress.file_finished(outcome)
        except KeyboardInterrupt:
            for *_, proc, _reader in running:
                proc.terminate()  # SIGTERM, as SageMaker stops a job: files in work are removed
            for *_, proc, _reader in running:
                proc.wait()
            raise EngineInterrupted([]) from None
    effective = settings.resolve(execution_parameters(instances[0].workers))
    return EngineReport(effective, [outcomes[f.name] for f in files])


def _relay_progress(
    stream: IO[bytes], instance: int, files: list[InputFile], progress: Progress
) -> None:
    """Pass an instance's progress lines (``batchinfer process --progress``) to ``progress``."""
    by_name = {file.name: file for file in files}
    for line in stream:
        try:
            event = json.loads(line)
            file = by_name[event["file"]]
        except (ValueError, KeyError, TypeError):
            continue  # not a progress line: the log has whatever else the instance said
        if "done" in event:
            progress.file_progress(instance, file, int(event["done"]))
        else:
            progress.file_started(instance, file)


def _stage_inputs(files: list[InputFile], input_dir: Path) -> Path | None:
    """Put each assigned file at its key below the instance's input directory (a link, no
    copy), fetched first when it must be; the shards of a file, byte ranges of it, are
    listed in a file beside that directory instead, whose path is returned (None: none)."""
    input_dir.mkdir(parents=True)
    ranged = []
    for file in files:
        if file.fetch is None and (file.start or file.end is not None):
            ranged.append(file)  # a shard of a local file
            continue
        if file.fetch is not None:
            file.fetch()
        target = input_dir / file.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(file.path.resolve())
    if not ranged:
        return None
    listing = input_dir.parent / "ranges.json"
    save_ranges(ranged, listing)
    return listing


def _read_report(
    instance: int, files: list[InputFile], host: Path, output_dir: Path, returncode: int
) -> list[FileOutcome]:
    try:
        report = {r["name"]: r for r in json.loads((host / "report.json").read_text())}
    except (OSError, ValueError) as exc:
        message = host / "message"
        if message.is_file() and message.stat().st_size:  # P8: the reason it gave
            said = message.read_text(errors="replace").strip()
            raise BatchInferError(f"processing instance algo-{instance + 1}: {said}") from exc
        log = (host / "log").read_text(errors="replace")[-2000:]
        raise BatchInferError(
            f"processing instance algo-{instance + 1} exited {returncode} without a report "
            f"({exc}); its log ends:\n{log}"
        ) from exc
    outcomes = []
    for file in files:
        entry = report.get(file.name)
        output = output_dir / output_name(file.name)
        if entry is None:
            error = f"algo-{instance + 1} did not report on {file.name}"
            outcomes.append(FileOutcome(file, instance, output, error=error))
        elif entry["error"]:
            outcomes.append(FileOutcome(file, instance, output, error=entry["error"]))
        else:
            outcomes.append(FileOutcome(file, instance, output, stats=FileStats(**entry["stats"])))
    return outcomes
