"""CountShard's taking out of records set aside, in S3: the errors file first, then the
output without its marker lines, whose metadata says how many; run again it counts them
once, an errors file another run left is never counted, and an output rewritten while it
is read (the step run twice at once) is read again from the start."""

import json
from typing import Any

from batchinfer.pipeline.storage.set_aside import take_out_set_aside
from batchinfer.transform.bad_records import marker_line
from batchinfer.uris import S3Location
from tests.support.run_state import BUCKET

OUTPUT = S3Location(BUCKET, "runs/r/parts/a.csv.out")
ERRORS = S3Location(BUCKET, "runs/r/parts/a.csv.out.errors.jsonl")
MARKED = b"2\n" + marker_line("no", b"x\n") + b"6\n" + marker_line("no", b"y\n")


def take_out(s3: Any) -> tuple[int, int]:
    return take_out_set_aside(
        s3, OUTPUT, ERRORS, name="a.csv", allowance=10, content_type="text/csv"
    )


def test_the_marks_go_to_the_errors_file_and_are_counted_once(account):
    account.put(OUTPUT.key, MARKED)
    assert take_out(account.s3) == (2, 2)
    assert account.get(OUTPUT.uri) == b"2\n6\n"
    named = [json.loads(line) for line in account.get(ERRORS.uri).splitlines()]
    assert [(e["record"], e["input"]) for e in named] == [(2, "x"), (4, "y")]
    assert take_out(account.s3) == (2, 2), "run again: the output's metadata counts them"


def test_an_errors_file_another_run_left_is_not_counted(account):
    account.put(ERRORS.key, b'{"file": "a.csv", "record": 1}\n')
    account.put(OUTPUT.key, b"2\n6\n")  # written by this run's job: nothing set aside
    assert take_out(account.s3) == (2, 0)


class RewrittenOnce:
    """An S3 client whose output is rewritten, clean, by another taking out just before
    the second read of it: as when the step runs twice at once."""

    def __init__(self, s3: Any) -> None:
        self.s3, self.reads = s3, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.s3, name)

    def get_object(self, **kwargs: Any) -> Any:
        if kwargs["Key"] == OUTPUT.key:
            self.reads += 1
            if self.reads == 2:
                take_out(self.s3)
        return self.s3.get_object(**kwargs)


def test_an_output_rewritten_while_it_is_read_is_read_again(account):
    account.put(OUTPUT.key, MARKED)
    racing = RewrittenOnce(account.s3)
    assert take_out(racing) == (2, 2)
    assert racing.reads > 2, "read again from the start"
    assert account.get(OUTPUT.uri) == b"2\n6\n"
    assert len(account.get(ERRORS.uri).splitlines()) == 2
