"""The local engines' instances: the GPUs of this machine each one gets, how many model
workers it runs, and the native thread counts those workers share the cores by."""

import os
from dataclasses import dataclass

from batchinfer.serving.server import native_thread_limits, visible_gpus
from batchinfer.transform.server_limits import configured_workers
from batchinfer.transform.settings import TransformSettings


@dataclass(frozen=True)
class LocalInstance:
    """One local instance: the GPUs its workers may use (none: CPUs alone) and its workers."""

    gpus: tuple[str, ...]
    workers: int

    @property
    def environment(self) -> dict[str, str]:
        """What pins the instance's processes to its GPUs."""
        return {"CUDA_VISIBLE_DEVICES": ",".join(self.gpus)} if self.gpus else {}


def default_workers_per_instance(instance_count: int) -> int:
    """Workers per instance so that all CPU instances together use every core."""
    return max(1, (os.cpu_count() or 1) // instance_count)


def instance_gpus(instance_count: int) -> list[list[str]]:
    """The GPUs of this machine dealt to ``instance_count`` local instances in turn (an
    instance of a machine with fewer GPUs shares one); all empty without GPUs."""
    gpus = visible_gpus(os.environ)
    if not gpus:
        return [[] for _ in range(instance_count)]
    dealt: list[list[str]] = [[] for _ in range(instance_count)]
    for n in range(max(len(gpus), instance_count)):
        dealt[n % instance_count].append(gpus[n % len(gpus)])
    return [sorted(set(share), key=gpus.index) for share in dealt]


def local_instances(
    settings: TransformSettings, workers_per_instance: int | None = None
) -> tuple[list[LocalInstance], dict[str, str]]:
    """Each instance's GPUs and workers (``workers_per_instance``, else the job environment's
    SAGEMAKER_MODEL_SERVER_WORKERS, else one per GPU it has, else a share of the cores), and
    the variables the model processes get: the job's environment, with native thread counts,
    shared among all those workers, for what neither it nor this process's environment sets."""
    container = settings.container_environment({})
    chosen = workers_per_instance or configured_workers(container)
    share = default_workers_per_instance(settings.instance_count)
    instances = [
        LocalInstance(tuple(gpus), chosen or len(gpus) or share)
        for gpus in instance_gpus(settings.instance_count)
    ]
    processes = sum(instance.workers for instance in instances)
    env = {**native_thread_limits(processes, {**os.environ, **container}), **container}
    return instances, env
