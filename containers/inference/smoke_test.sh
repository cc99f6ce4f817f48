#!/usr/bin/env bash
# Image smoke test: build containers/inference/Dockerfile and run it as SageMaker would
# (`<image> serve`, the model at /opt/ml/model), then call /ping, /execution-parameters and
# /invocations with the example model, then score a scikit-learn Pipeline whose model
# directory brings code/requirements.txt and its wheel in code/lib/ (smoke_checks.py holds the
# models and the calls). No Docker daemon and no registry pulls: Debian's
# buildah + podman + runc, and a base image made with debootstrap from the Debian mirror
# apt uses, tagged as the Dockerfile's FROM. Needs root (or passwordless sudo) for apt-get,
# debootstrap and podman. Any failure exits non-zero with the reason.
#
# Usage: containers/inference/smoke_test.sh        (from anywhere; PYTHON defaults to .venv,
#        IMAGE to localhost/batchinfer-inference:smoke)
set -Eeuo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
BASE_TAG="docker.io/library/debian:bookworm-slim"
IMAGE="${IMAGE:-localhost/batchinfer-inference:smoke}"
TORCH_IMAGE="$IMAGE-cpu"
# torch's CPU build: from a folder of wheels on this machine when it has one, else from
# torch's CPU index.
TORCH_WHEELS="${TORCH_WHEELS:-/opt/wheels}"
CONTAINER="batchinfer-smoke-$$"
WORK="$(mktemp -d /tmp/batchinfer-smoke.XXXXXX)"
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs --events-backend file)

fail() {
    echo "IMAGE SMOKE TEST FAILED: $*" >&2
    exit 1
}
on_error() {
    local status=$? line=$1
    echo "IMAGE SMOKE TEST FAILED (line $line, exit $status)" >&2
    if "${PODMAN[@]}" container exists "$CONTAINER" 2>/dev/null; then
        echo "--- container log ---" >&2
        "${PODMAN[@]}" logs "$CONTAINER" >&2 || true
    fi
    exit "$status"
}
cleanup() {
    "${PODMAN[@]}" rm -f -t 0 "$CONTAINER" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap 'on_error $LINENO' ERR
trap cleanup EXIT

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    sudo -n true 2>/dev/null || fail "needs root or passwordless sudo (apt-get, debootstrap, podman)"
    SUDO=(sudo -n)
    PODMAN=("${SUDO[@]}" "${PODMAN[@]}")
fi
[ -x "$PYTHON" ] || fail "no Python at $PYTHON (run 'make' to create .venv, or set PYTHON)"

step() { echo "== $* ($(date +%T))"; }
# smoke_checks.py imports tests.support from the repository root.
checks() { PYTHONPATH="$ROOT" "$PYTHON" "$@"; }

step "installing buildah, podman, runc, slirp4netns, debootstrap"
missing=()
for tool in buildah podman runc slirp4netns debootstrap fuse-overlayfs; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
    "${SUDO[@]}" apt-get update -q
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        buildah podman runc slirp4netns debootstrap fuse-overlayfs uidmap ca-certificates
fi

# The Debian mirror apt uses (deb822 "URIs:" or one-line "deb" entries).
mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | awk '/^URIs:/ {print $2} /^deb / {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; break}}' \
    | grep -E '/debian/?$' | head -n 1 || true)"
mirror="${mirror:-http://deb.debian.org/debian}"

if "${PODMAN[@]}" image exists "$BASE_TAG"; then
    step "base image $BASE_TAG already present (made by an earlier run)"
else
    step "making the base image with debootstrap from $mirror"
    rootfs="$WORK/rootfs"
    "${SUDO[@]}" debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" "$mirror" \
        > "$WORK/debootstrap.log" 2>&1 || { tail -n 30 "$WORK/debootstrap.log" >&2; fail "debootstrap"; }
    # Trust the CAs this host trusts (e.g. an HTTPS proxy's), so pip in the build does too.
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
        "${SUDO[@]}" cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
        "${SUDO[@]}" chroot "$rootfs" update-ca-certificates >/dev/null
    fi
    "${SUDO[@]}" rm -rf "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/var/lib/apt/lists/"*
    "${SUDO[@]}" tar -C "$rootfs" -c . | "${PODMAN[@]}" import - "$BASE_TAG" >/dev/null
    "${SUDO[@]}" rm -rf "$rootfs"
fi

step "building $IMAGE"
(cd "$ROOT" && "${SUDO[@]}" buildah bud --isolation chroot --pull-never --layers \
    -f containers/inference/Dockerfile -t "$IMAGE" .)

step "training the example model"
model="$WORK/model"
"$PYTHON" -c "import sys; from pathlib import Path; from batchinfer.examples import train_example_model, write_example_csv; train_example_model(Path(sys.argv[1])); write_example_csv(Path(sys.argv[2]), 1000)" \
    "$model" "$WORK/records.csv"
chmod -R a+rX "$model"

port="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
hard="$(ulimit -Hn)"
step "running the image with 'serve' on 127.0.0.1:$port"
"${PODMAN[@]}" run -d --name "$CONTAINER" \
    --ulimit "nofile=$hard:$hard" --ulimit nproc=32768:32768 \
    --network slirp4netns -p "127.0.0.1:$port:8080" \
    -e SAGEMAKER_BATCH=true -e SAGEMAKER_MODEL_SERVER_WORKERS=2 \
    -v "$model:/opt/ml/model:ro" "$IMAGE" serve >/dev/null

step "calling /ping, /execution-parameters and /invocations"
checks "$ROOT/containers/inference/smoke_checks.py" example "$port" "$WORK/records.csv"

step "stopping the container (SIGTERM)"
"${PODMAN[@]}" stop -t 30 "$CONTAINER" >/dev/null
status="$("${PODMAN[@]}" inspect -f '{{.State.ExitCode}}' "$CONTAINER")"
[ "$status" = "0" ] || fail "the server exited with $status after SIGTERM"
"${PODMAN[@]}" rm "$CONTAINER" >/dev/null

# A scikit-learn Pipeline fitted on a DataFrame, a code/inference.py reading CSV with pandas
# and a code/requirements.txt met only by a wheel in code/lib/ (installed at model load).
step "making the pipeline model (code/inference.py, code/requirements.txt, code/lib/)"
pipeline="$WORK/pipeline"
checks "$ROOT/containers/inference/smoke_checks.py" pipeline-model "$pipeline" "$WORK/pipeline.csv"
chmod -R a+rX "$pipeline"
step "running the image with 'serve' for the pipeline model"
"${PODMAN[@]}" run -d --name "$CONTAINER" \
    --ulimit "nofile=$hard:$hard" --ulimit nproc=32768:32768 \
    --network slirp4netns -p "127.0.0.1:$port:8080" \
    -e SAGEMAKER_BATCH=true -e SAGEMAKER_MODEL_SERVER_WORKERS=2 \
    -v "$pipeline:/opt/ml/model:ro" "$IMAGE" serve >/dev/null
checks "$ROOT/containers/inference/smoke_checks.py" pipeline "$port" "$WORK/pipeline.csv"
installs="$("${PODMAN[@]}" logs "$CONTAINER" 2>&1 | grep -c "Successfully installed smoke-lines-1.0" || true)"
[ "$installs" = "1" ] || fail "code/requirements.txt was installed $installs times by 2 workers, not once"
"${PODMAN[@]}" stop -t 30 "$CONTAINER" >/dev/null
user="$("${PODMAN[@]}" image inspect -f '{{.Config.User}}' "$IMAGE")"
[ "$user" = "1000:1000" ] || fail "the image runs as '$user', not the non-root user"
"${PODMAN[@]}" rm "$CONTAINER" >/dev/null

torch_source=(--build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu)
if compgen -G "$TORCH_WHEELS/torch-*+cpu-*.whl" >/dev/null; then
    torch_source=(-v "$TORCH_WHEELS:/wheels:ro" --build-arg PIP_FIND_LINKS=/wheels)
fi
step "building $TORCH_IMAGE (DEEP_LEARNING=cpu, ${torch_source[*]})"
(cd "$ROOT" && "${SUDO[@]}" buildah bud --isolation chroot --pull-never --layers \
    --build-arg DEEP_LEARNING=cpu "${torch_source[@]}" \
    -f containers/inference/Dockerfile -t "$TORCH_IMAGE" .)
for framework in pytorch onnx; do
    step "serving the example network as $framework's file alone"
    network="$WORK/$framework"
    checks "$ROOT/containers/inference/smoke_checks.py" network-model "$network" "$framework" "$WORK/records.csv"
    chmod -R a+rX "$network"
    "${PODMAN[@]}" run -d --name "$CONTAINER" \
        --ulimit "nofile=$hard:$hard" --ulimit nproc=32768:32768 \
        --network slirp4netns -p "127.0.0.1:$port:8080" \
        -e SAGEMAKER_BATCH=true -e SAGEMAKER_MODEL_SERVER_WORKERS=2 \
        -v "$network:/opt/ml/model:ro" "$TORCH_IMAGE" serve >/dev/null
    checks "$ROOT/containers/inference/smoke_checks.py" network "$port" "$WORK/records.csv" "$framework"
    "${PODMAN[@]}" stop -t 30 "$CONTAINER" >/dev/null
    "${PODMAN[@]}" rm "$CONTAINER" >/dev/null
done
echo "IMAGE SMOKE TEST PASSED"
