"""The engine: the code that turns input files into ``.out`` files with Batch Transform's
semantics, on this machine (``batchinfer run``) and inside the inference image
(``batchinfer process``, a Processing job)."""
