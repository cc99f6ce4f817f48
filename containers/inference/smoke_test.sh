#!/usr/bin/env bash
# Image smoke test: build containers/inference/Dockerfile and run it as SageMaker would
# (`<image> serve`, the model at /opt/ml/model), then call /ping, /execution-parameters and
# /invocations with the example model. No Docker daemon and no registry pulls: Debian's
# buildah + podman + runc, and a base image made with debootstrap from the Debian mirror
# apt uses, tagged as the Dockerfile's FROM. Needs root (or passwordless sudo) for apt-get,
# debootstrap and podman. Any failure exits non-zero with the reason.
#
# Usage: containers/inference/smoke_test.sh        (from anywhere; PYTHON defaults to .venv)
set -Eeuo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
BASE_TAG="docker.io/library/debian:bookworm-slim"
IMAGE="localhost/batchinfer-inference:smoke"
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
"$PYTHON" - "$port" "$WORK/records.csv" <<'PY'
import json
import sys
import time
import urllib.error
import urllib.request

url = f"http://127.0.0.1:{sys.argv[1]}"
records = open(sys.argv[2], "rb").read()
deadline = time.monotonic() + 120
while True:
    try:
        with urllib.request.urlopen(f"{url}/ping", timeout=2) as reply:
            if reply.status == 200:
                break
    except (urllib.error.URLError, OSError):
        pass
    if time.monotonic() > deadline:
        sys.exit("/ping did not answer 200 within 120 s")
    time.sleep(0.5)
print("/ping: 200")
with urllib.request.urlopen(f"{url}/execution-parameters", timeout=10) as reply:
    parameters = json.load(reply)
print("/execution-parameters:", parameters)
expected = {"MaxConcurrentTransforms": 2, "BatchStrategy": "MULTI_RECORD", "MaxPayloadInMB": 6}
assert parameters == expected, f"expected {expected}"
request = urllib.request.Request(
    f"{url}/invocations", data=records, headers={"Content-Type": "text/csv", "Accept": "text/csv"}
)
with urllib.request.urlopen(request, timeout=60) as reply:
    body, content_type = reply.read(), reply.headers["Content-Type"]
lines, expected_lines = body.decode().splitlines(), records.count(b"\n")
assert content_type == "text/csv", content_type
assert len(lines) == expected_lines, f"{len(lines)} lines for {expected_lines} records"
assert set(lines) <= {"0", "1"}, f"unexpected predictions {sorted(set(lines))[:5]}"
print(f"/invocations: {len(lines)} predictions for {len(lines)} records")
bad = urllib.request.Request(f"{url}/invocations", data=b"1,2\n", headers={"Content-Type": "text/csv"})
try:
    urllib.request.urlopen(bad, timeout=10)
    sys.exit("a record with 2 of 10 features was accepted")
except urllib.error.HTTPError as error:
    assert error.code == 400, error.code
    print("/invocations with a bad record: 400", error.read().decode())
PY

step "stopping the container (SIGTERM)"
"${PODMAN[@]}" stop -t 30 "$CONTAINER" >/dev/null
status="$("${PODMAN[@]}" inspect -f '{{.State.ExitCode}}' "$CONTAINER")"
[ "$status" = "0" ] || fail "the server exited with $status after SIGTERM"
user="$("${PODMAN[@]}" image inspect -f '{{.Config.User}}' "$IMAGE")"
[ "$user" = "1000:1000" ] || fail "the image runs as '$user', not the non-root user"
echo "IMAGE SMOKE TEST PASSED"
