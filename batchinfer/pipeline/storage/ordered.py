"""A function over a stream of items on a thread pool: results in input order, a bounded
number of items in flight, so memory does not grow with the stream."""

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(
    function: Callable[[T], R], items: Iterable[T], *, workers: int, ahead: int = 0
) -> Iterator[R]:
    """``function(item)`` for each item, in the order of ``items``, run by ``workers`` threads
    with at most ``ahead`` (default ``4 * workers``) items submitted and not yet yielded. The
    first error is raised where its item's result would be; later items are cancelled."""
    ahead = ahead or 4 * workers
    pending: deque[Future[R]] = deque()
    with ThreadPoolExecutor(workers) as pool:
        try:
            for item in items:
                pending.append(pool.submit(function, item))
                if len(pending) >= ahead:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
