"""The scale harness: the pipeline's real step code against fake AWS clients that charge each
call the latency and transfer time AWS documents, under tracemalloc (docs/scaling.md)."""
