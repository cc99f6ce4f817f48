"""The meter of one step's run in the scale harness: the calls made, the modelled seconds they
cost per thread, and the step's peak of Python allocations."""

import threading
import time
import tracemalloc
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.scale.costs import cpu_scale

MIB = 1024 * 1024


@dataclass(frozen=True)
class StepFigures:
    """What one step cost: modelled seconds (its calls' AWS time plus its CPU time scaled to
    the function's share of a vCPU), ``overlapped_seconds`` the same with its main thread's
    calls and each pool's taken as overlapping (the least it could take), its peak of Python
    allocations, and its calls."""

    seconds: float
    overlapped_seconds: float
    aws_seconds: float
    cpu_seconds: float
    peak_mib: float | None
    calls: dict[str, int]


class Meter:
    """Charges each AWS call to the thread that made it. A step's AWS time is its main
    thread's charges plus, for each pool of worker threads (threads named alike), the pool's
    calls spread over its threads (a pool that keeps its workers busy); and never less than
    the longest a rate limit allows (:meth:`consume`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[tuple[str, int], float] = defaultdict(float)
        self._floors: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self._main = threading.get_ident()
        self._cpu = time.process_time()
        self._client_cpu = 0.0

    def charge(self, operation: str, seconds: float, client_cpu: float = 0.0) -> None:
        """One call of ``seconds`` of AWS time; ``client_cpu``: the CPU seconds boto3 would
        have spent on it where a fake took its place (costs.py)."""
        thread = threading.current_thread()
        pool = "" if thread.ident == self._main else thread.name.rsplit("_", 1)[0]
        with self._lock:
            self._seconds[pool, thread.ident or 0] += seconds
            self._client_cpu += client_cpu
            self.calls[operation] += 1

    def client_cpu(self, seconds: float) -> None:
        """CPU seconds boto3 would have spent where a fake took its place, beyond a call's."""
        with self._lock:
            self._client_cpu += seconds

    def consume(self, limit: str, units: float, per_second: float) -> None:
        """Count ``units`` against a rate limit of ``per_second``: the step takes at least
        all its units of each limit over that rate, however its calls overlap."""
        with self._lock:
            self._floors[limit] += units / per_second

    def attach(self, client: Any, seconds: Callable[[str], float]) -> None:
        """Charge each call of a boto3 ``client`` (one moto answers) ``seconds(operation)``."""
        service = client.meta.service_model.service_name

        def charge(model: Any, **_: Any) -> None:
            self.charge(f"{service}:{model.name}", seconds(model.name))

        client.meta.events.register("before-call.*", charge)

    def elapsed(self, memory_mb: int) -> float:
        """The modelled seconds so far of the step running: what a Lambda context's
        remaining time counts down from."""
        cpu = time.process_time() - self._cpu + self._client_cpu
        return self.aws_seconds() + cpu * cpu_scale(memory_mb)

    def aws_seconds(self, *, overlapped: bool = False) -> float:
        with self._lock:
            pools: dict[str, list[float]] = defaultdict(list)
            for (pool, _), seconds in self._seconds.items():
                pools[pool].append(seconds)
            floor = max(self._floors.values(), default=0.0)
        main = sum(pools.pop("", []))
        spread = [sum(threads) / len(threads) for threads in pools.values()]
        spent = max([main, *spread]) if overlapped else main + sum(spread)
        return max(spent, floor)

    def floors(self) -> dict[str, float]:
        """The least seconds each rate limit allowed the step."""
        with self._lock:
            return dict(self._floors)

    def run(
        self, step: Callable[[], Any], memory_mb: int, *, trace: bool = True
    ) -> tuple[Any, StepFigures]:
        """Run ``step`` on this thread, counting only its own calls, under tracemalloc when
        ``trace`` (which slows Python several times: the seconds of a traced run are not the
        step's); its result and figures."""
        self._main = threading.get_ident()
        with self._lock:  # what seeding the case cost is not the step's
            self._seconds.clear()
            self._floors.clear()
            self.calls.clear()
            self._client_cpu = 0.0
        if trace:
            tracemalloc.start()
        cpu = self._cpu = time.process_time()
        peak = None
        try:
            result = step()
        finally:
            cpu = time.process_time() - cpu
            if trace:
                peak = tracemalloc.get_traced_memory()[1] / MIB
                tracemalloc.stop()
        aws = self.aws_seconds()
        cpu_seconds = (cpu + self._client_cpu) * cpu_scale(memory_mb)
        return result, StepFigures(
            seconds=aws + cpu_seconds,
            overlapped_seconds=self.aws_seconds(overlapped=True) + cpu_seconds,
            aws_seconds=aws,
            cpu_seconds=cpu_seconds,
            peak_mib=peak,
            calls=dict(self.calls),
        )
