"""Instances taking whole files (R3: one file, one instance): with SplitType None a file is
one request, so an instance keeps MaxConcurrentTransforms files in flight (R9: parallel
requests per instance); with Line, one file at a time, whose batches fill them."""

import threading
from pathlib import Path

from batchinfer.engine.file_queue import files_at_once, take_files
from batchinfer.engine.inputs import InputFile
from batchinfer.engine.outcomes import FileOutcome, Progress


def test_r9_whole_files_are_an_instances_requests_in_flight():
    assert files_at_once("None", 4) == 4
    assert files_at_once("None", 0) == 1
    assert files_at_once("Line", 4) == 1


def test_r3_r9_each_instance_works_on_its_files_at_once_and_outcomes_keep_the_input_order():
    files = [InputFile(Path(f"/in/{n}.parquet"), f"{n}.parquet") for n in range(8)]
    together = threading.Barrier(4, timeout=10)  # 2 instances x 2 files: all four at once
    busy: dict[int, set[str]] = {0: set(), 1: set()}
    lock = threading.Lock()

    def work(instance: int, file: InputFile) -> FileOutcome:
        with lock:
            busy[instance].add(file.name)
        if len(busy[0] | busy[1]) <= 4:
            together.wait()  # the first four files are worked on at the same time
        return FileOutcome(file, instance, Path("/out") / file.name)

    outcomes = take_files(files, 2, work, Progress(), at_once=2)
    assert [o.file.name for o in outcomes] == [f.name for f in files]
    assert {o.instance for o in outcomes} == {0, 1}
