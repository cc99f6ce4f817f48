# The name the example handlers import batchinfer/example_handlers/records.py by: it is
# copied beside them as code/example_records.py (batchinfer.example_handlers.write_handler).
from batchinfer.example_handlers.records import input_fn as input_fn
from batchinfer.example_handlers.records import output_fn as output_fn
