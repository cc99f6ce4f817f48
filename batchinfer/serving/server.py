"""Running the model server under gunicorn (spec C1: the image is run with the argument serve; C3:
the container serves HTTP on port 8080; C6: the platform sets SAGEMAKER_BATCH and the job's batch
values; C8: a batch request may take 3600 s, a real-time one 60 s and 6 MB; C10: the container gets
SIGTERM, then SIGKILL 30 s later).

gunicorn's master binds the port and forks ``workers`` sync workers; each worker loads the
model itself before it accepts a connection, and ``/ping`` answers 200 only once every
worker holds a loaded model (503 before: :mod:`batchinfer.serving.loaded_workers`). The
model's code/requirements.txt is installed (or checked) by the master before it forks.
A model that fails to load stops the server with exit code 4 after
logging why (it never reports healthy). SIGTERM stops the server gracefully: requests in
flight finish within ``GRACEFUL_TIMEOUT`` seconds, under the platform's 30 s before SIGKILL.
SIGINT and SIGQUIT stop it quickly: its workers get ``QUICK_STOP_SECONDS``, then SIGKILL.
A server the local engine started gets SIGQUIT (its requests' answers have no reader any
more) once that engine is gone, and each worker SIGTERM once its master is, even after
``kill -9`` (:mod:`batchinfer.parent_death`).

Environment read here: SAGEMAKER_MAX_PAYLOAD_IN_MB (default 6; 0 = no limit) and
SAGEMAKER_MODEL_SERVER_TIMEOUT (seconds one request may take, default 3600, spec C8).
On a machine with GPUs the default is one worker per GPU, each seeing only its own
(CUDA_VISIBLE_DEVICES, so a model loads on ``cuda`` and lands on that worker's GPU).
With several workers each gets an equal share of the cores for its native thread pools
(OpenMP in scikit-learn, XGBoost and LightGBM, Arrow's CSV reader, PyTorch's and ONNX
Runtime's intra-op threads); a user's OMP_NUM_THREADS sets them all instead, and a pool's own
variable (MKL_NUM_THREADS, OPENBLAS_NUM_THREADS) wins for that pool.
"""

import atexit
import contextlib
import functools
import itertools
import logging
import os
import queue
import signal
import sys
import time
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from batchinfer.errors import ValidationError
from batchinfer.heap_reuse import reuse_freed_memory
from batchinfer.parent_death import die_with_parent, die_with_starter
from batchinfer.serving.fork_imports import import_libraries, shared_libraries
from batchinfer.serving.loaded_workers import LoadedWorkers
from batchinfer.serving.model_requirements import ensure_requirements
from batchinfer.serving.server_errors import MODEL_LOAD_FAILED, ModelLoadError
from batchinfer.transform.server_limits import DEFAULT_TIMEOUT, max_payload_mb, request_timeout
from batchinfer.transform.settings import DEFAULT_MAX_PAYLOAD_MB

LOG = logging.getLogger(__name__)
DEFAULT_PORT = 8080
DEFAULT_MODEL_DIR = Path("/opt/ml/model")
GRACEFUL_TIMEOUT = 25
# How long a quick stop (SIGINT, SIGQUIT) waits for its workers before it kills them.
QUICK_STOP_SECONDS = 2.0
# What gunicorn (and a container's runtime) sends a worker to stop it.
WORKER_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)
LOG_FORMAT = "[%(asctime)s] [%(process)d] [%(levelname)s] %(message)s"
_REAP_INTERVAL = 0.005  # seconds between a stopping master's looks for its workers' exits
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class ServeSettings:
    """Everything one model server needs to start."""

    model_dir: Path
    host: str
    port: int
    workers: int
    max_payload_mb: int = DEFAULT_MAX_PAYLOAD_MB
    timeout: int = DEFAULT_TIMEOUT


def cpu_count() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


def settings_from_env(
    model_dir: Path, host: str, port: int, workers: int, env: Mapping[str, str]
) -> ServeSettings:
    """Validate the command line values and add the limits the environment sets."""
    if not 1 <= workers <= 1024:
        raise ValidationError(f"--workers {workers}: must be between 1 and 1024")
    if not 0 <= port <= 65535:
        raise ValidationError(f"--port {port}: must be between 0 and 65535")
    if not model_dir.is_dir():
        raise ValidationError(f"--model-dir {model_dir}: no such directory")
    return ServeSettings(
        model_dir=model_dir,
        host=host,
        port=port,
        workers=workers,
        max_payload_mb=max_payload_mb(env),
        timeout=request_timeout(env),
    )


def native_thread_limits(processes: int, env: Mapping[str, str]) -> dict[str, str]:
    """OpenMP/BLAS thread counts for each of ``processes`` model processes, for the pools
    ``env`` leaves unset: the OMP_NUM_THREADS ``env`` sets, else an equal share of the cores
    (none when one process has them all). A count ``env`` sets itself always wins."""
    given = env.get("OMP_NUM_THREADS")
    if given is None and processes <= 1:
        return {}
    threads = given if given is not None else str(max(1, cpu_count() // processes))
    return {name: threads for name in _THREAD_VARS if name not in env}


def share_cores(workers: int, env: MutableMapping[str, str]) -> None:
    """Give each of ``workers`` workers its threads for native pools (see above)."""
    env.update(native_thread_limits(workers, env))


def visible_gpus(env: Mapping[str, str]) -> list[str]:
    """The GPUs this process may use: the ids CUDA_VISIBLE_DEVICES lists where it is set,
    else every NVIDIA GPU the driver lists."""
    listed = env.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        ids = [part.strip() for part in listed.split(",")]
        return list(itertools.takewhile(lambda id_: id_ and id_ != "-1", ids))
    driver = Path("/proc/driver/nvidia/gpus")
    return [str(n) for n in range(len(list(driver.iterdir())))] if driver.is_dir() else []


def default_workers(env: Mapping[str, str]) -> int:
    """One worker per GPU where there are GPUs (each pinned to its own), else one per core."""
    return len(visible_gpus(env)) or cpu_count()


def least_used_gpu(gpus: list[str], held: list[str | None]) -> str:
    """The GPU of ``gpus`` that the fewest of the workers' ``held`` GPUs are, the first of
    equals."""
    return min(gpus, key=lambda gpu: (held.count(gpu), gpus.index(gpu)))


def _exit_on_signal(signum: int, _frame: object) -> NoReturn:
    raise SystemExit(128 + signum)


def _exit_without_teardown(code: object) -> NoReturn:
    """Leave this process as ``sys.exit(code)`` would, its exit handlers run (a user module's
    too; logging's own flushes the log) and stdout and stderr flushed, but without tearing
    down the interpreter: that takes about 0.3 s in a worker once scikit-learn or PyTorch is
    loaded (about 0.05 s in the master) and delays every stop (C10). Threads a user module
    started are not waited for: its exit handlers are where to finish them."""
    atexit._run_exitfuncs()
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # as the interpreter shows a message it exits with
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


def _before_fork(loaded: LoadedWorkers, arbiter: Any, worker: Any) -> None:
    """gunicorn's pre_fork hook, in the master: the slot the worker about to start holds in
    ``loaded``, and the GPU it will use, the one fewest running workers use (a worker that
    replaces a dead one takes its slot and its GPU)."""
    running = arbiter.WORKERS.values()
    worker.slot = loaded.assign(getattr(w, "slot", None) for w in running)
    gpus = visible_gpus(os.environ)
    if gpus:
        worker.gpu = least_used_gpu(gpus, [getattr(w, "gpu", None) for w in running])


def _start_worker(loaded: LoadedWorkers, arbiter: Any, worker: Any) -> None:
    """gunicorn's post_fork hook, in the worker: it sees only its own GPU, marks its own slot
    once its model is loaded, and it stops (SIGTERM, a clean stop) once its master is gone,
    even one killed with SIGKILL, which leaves the master no chance to stop it."""
    gpu = getattr(worker, "gpu", None)
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    loaded.claim(worker.slot)
    worker.signals_before_init = arbiter.SIG_QUEUE
    die_with_parent(worker.ppid)


def _worker_exited(loaded: LoadedWorkers, arbiter: Any, worker: Any) -> None:
    """gunicorn's child_exit hook, in the master: the worker's slot is free, not loaded."""
    loaded.clear(getattr(worker, "slot", None))


def _workers_wanted(loaded: LoadedWorkers, arbiter: Any, new: int, old: int | None) -> None:
    """gunicorn's nworkers_changed hook, in the master (before its first fork, and on TTIN,
    TTOU and a reload): the workers ``/ping`` waits for."""
    loaded.wanted(new)


def _stop_if_told_before_init(worker: Any) -> None:
    """gunicorn's post_worker_init hook, in the worker. Until gunicorn gives a new worker its
    own signal handlers, the master's handler, inherited with the fork, puts a signal into
    this process's copy of the master's queue, where nobody reads it: a SIGTERM sent then
    (the master stopping as the worker starts, or :func:`die_with_parent`'s own) would be
    lost, and the master would wait its whole graceful timeout before killing the worker.
    The worker acts on it here instead, before it accepts a request. A stop the master had
    queued before the fork is its own stop, which stops this worker too."""
    queued = getattr(worker, "signals_before_init", None)
    if queued is None:
        return
    with contextlib.suppress(queue.Empty):
        while True:
            if queued.get_nowait() in WORKER_STOP_SIGNALS:
                worker.alive = False


def _gunicorn_application(settings: ServeSettings) -> Any:
    from gunicorn.app.base import BaseApplication
    from gunicorn.arbiter import Arbiter
    from gunicorn.errors import AppImportError, HaltServer

    class PromptArbiter(Arbiter):
        """gunicorn's master, whose stop ends as soon as its workers are gone: gunicorn's
        own checks every 0.1 s, so a stop took 0.2 s of workers that leave in 10 ms (C10).
        A quick stop (SIGINT, SIGQUIT) gives its workers ``QUICK_STOP_SECONDS``, as gunicorn
        gives them when a quick stop interrupts a graceful one, then kills those still busy
        in native code (where a signal's handler waits for the call to return), instead of
        the graceful timeout."""

        reaping = False

        def kill_workers(self, sig: int) -> None:
            super().kill_workers(sig)
            if self.LISTENERS or sig not in (signal.SIGTERM, signal.SIGQUIT) or self.reaping:
                return  # not the stop's first signal (the master closes its sockets first)
            self.reaping = True
            quick = sig == signal.SIGQUIT
            bound = QUICK_STOP_SECONDS if quick else self.cfg.graceful_timeout
            deadline = time.monotonic() + bound  # the stop's own bound
            while self.WORKERS and time.monotonic() < deadline and not self._quick_stop():
                with contextlib.suppress(HaltServer):  # another worker that could not load:
                    self.reap_workers()  # the master halts already, with the first's code
                time.sleep(_REAP_INTERVAL)
            if quick and self.WORKERS:
                super().kill_workers(signal.SIGKILL)  # gunicorn's stop then reaps them

        def _quick_stop(self) -> bool:
            """Whether SIGINT or SIGQUIT came meanwhile: left queued for gunicorn's stop,
            which then kills the workers at once. Other signals go, as that stop drops them."""
            while True:
                try:
                    sig = self.SIG_QUEUE.get_nowait()
                except queue.Empty:
                    return False
                if sig in (signal.SIGINT, signal.SIGQUIT):
                    self.SIG_QUEUE.put_nowait(sig)
                    return True

    loaded = LoadedWorkers(settings.workers)  # mapped before the workers fork: they share it

    class ModelServer(BaseApplication):
        def load_config(self) -> None:
            options = {
                "bind": [f"{settings.host}:{settings.port}"],
                "workers": settings.workers,
                "worker_class": "sync",
                "timeout": settings.timeout,
                "graceful_timeout": GRACEFUL_TIMEOUT,
                "errorlog": "-",
                "loglevel": "info",
                "proc_name": "batchinfer-serve",
                # One shared per-user control socket would collide between servers.
                "control_socket_disable": True,
                "pre_fork": functools.partial(_before_fork, loaded),
                "post_fork": functools.partial(_start_worker, loaded),
                "child_exit": functools.partial(_worker_exited, loaded),
                "nworkers_changed": functools.partial(_workers_wanted, loaded),
                "post_worker_init": _stop_if_told_before_init,
            }
            if os.access("/dev/shm", os.W_OK):
                options["worker_tmp_dir"] = "/dev/shm"
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            from batchinfer.serving.handlers import load_handler
            from batchinfer.serving.wsgi_app import InferenceApp
            from batchinfer.transform.server_limits import ServerLimits

            try:
                handler = load_handler(settings.model_dir)
            except ModelLoadError as exc:
                LOG.error("%s: %s", MODEL_LOAD_FAILED, exc, exc_info=exc.__cause__)
                raise AppImportError(f"{MODEL_LOAD_FAILED}: {exc}") from exc
            loaded.add()
            limits = ServerLimits(settings.workers, settings.max_payload_mb)
            return InferenceApp(handler, limits, loaded)

        def run(self) -> None:
            try:
                PromptArbiter(self).run()
            except RuntimeError as exc:  # what gunicorn's own run() says and does
                print(f"\nError: {exc}\n", file=sys.stderr)
                sys.exit(1)

    return ModelServer()


def run_server(settings: ServeSettings) -> NoReturn:
    """Serve until SIGTERM, SIGINT or SIGQUIT; exit 0 after a clean stop, 4 when the model
    cannot load."""
    # No server outlives the engine that started it: until gunicorn handles its SIGQUIT (a
    # quick stop), it ends the server as SIGTERM would.
    die_with_starter(os.environ, _exit_on_signal)
    share_cores(settings.workers, os.environ)
    reuse_freed_memory()  # in every worker forked from here
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, "%Y-%m-%d %H:%M:%S %z"))
    package_log = logging.getLogger("batchinfer")
    package_log.addHandler(handler)
    package_log.setLevel(logging.INFO)
    LOG.info(
        "serving %s on %s:%d with %d worker(s), MaxPayloadInMB=%d",
        settings.model_dir,
        settings.host,
        settings.port,
        settings.workers,
        settings.max_payload_mb,
    )
    from gunicorn.arbiter import Arbiter

    try:  # once, before the workers fork: they find it installed
        ensure_requirements(settings.model_dir, os.environ)
    except ModelLoadError as exc:
        LOG.error("%s: %s", MODEL_LOAD_FAILED, exc)
        sys.exit(Arbiter.APP_LOAD_ERROR)
    # Once, for every worker forked after it.
    import_libraries(shared_libraries(settings.model_dir, os.environ, settings.workers))
    try:  # the master's stop, and each worker's (forked in here): both leave through this
        _gunicorn_application(settings).run()
    except SystemExit as leaving:
        _exit_without_teardown(leaving.code)
    _exit_without_teardown(0)
