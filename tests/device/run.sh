#!/usr/bin/env bash
# Runs on the device machine (an NVIDIA GPU with its driver), over what tests/device/prepare.sh
# put in .device/: for every model artifact, kiln-device check (every output against its
# reference, |got - expected| <= 1e-4 + 1e-3 |expected| in fp32, the printed tolerance of a
# tensor-core precision) and time (median of 100 runs, CUDA events) on cuda:0; the GEMMs'
# times; in part c the PyTorch peers (eager and torch.compile, same GPU); then the table of
# bench/gpu/report.py. Results go to $OUT (or /tmp/kiln-device-out).
# Exit status: 0 when every check passed.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/kiln-device-out}
mkdir -p "$out"
[ -f .device/bundle.tar.xz ] || { echo "run.sh: no .device/ (run tests/device/prepare.sh first and carry .device)"; exit 2; }
rt=/tmp/kiln-device-rt
rm -rf $rt && mkdir -p $rt && tar -C $rt -xJf .device/bundle.tar.xz
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/bin/kiln-device "$@"\n' "$rt" "$rt" > $rt/run-kd
chmod +x $rt/run-kd
kd() { "$rt/run-kd" "$@"; }
part=$(cat .device/part)
echo "== part $part"
if [ "$(cat .device/target 2>/dev/null)" = host ]; then
  # prepare.sh ... host: a dry run of this script on a CPU.
  printf '#!/bin/sh\nc=$1; shift\nLD_LIBRARY_PATH=%s/lib exec %s/bin/kiln-device "$c" "$@" --device cpu\n' \
    "$rt" "$rt" > $rt/run-kd
  echo "(artifacts for this CPU: running on cpu)"
else
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader \
    > "$out/gpu_$part.txt" 2>&1; cat "$out/gpu_$part.txt"
  if ! kd info > "$out/info_$part.json" 2>&1; then
    cat "$out/info_$part.json"; echo "run.sh: kiln-device cannot reach the GPU"; exit 2
  fi
  cat "$out/info_$part.json"
fi

fail=0
: > "$out/kiln_$part.jsonl"
errors="$out/stderr_$part.txt"
# Every model directory's artifacts: model.kiln (fp32) and model_<precision>.kiln (tensor
# cores, checked with that precision's tolerance); a hung kernel costs 120 s, not the call.
for dir in .device/models/*/; do
  m=$(basename "$dir")
  for art in "$dir"/model*.kiln; do
    name=$m$(basename "$art" .kiln | sed 's/^model//')
    if timeout 120 "$rt/run-kd" check "$art" "$dir" > "$out/check_$name.txt" 2>&1; then
      echo "PASS $name"
    else
      echo "FAIL $name"; fail=1
    fi
    grep -E "^(FAIL|precision) " "$out/check_$name.txt" | head -5
    grep -E "^kiln-device:" "$out/check_$name.txt" | head -3
    if t=$(timeout 120 "$rt/run-kd" time "$art" "$dir" --warmup 20 --repeats 100 2>>"$errors"); then
      echo "{\"model\": \"$name\", \"kiln\": $t}" >> "$out/kiln_$part.jsonl"
    else
      echo "time $name failed (see $errors)"
    fi
  done
done
for g in .device/gemm/*.kiln; do
  [ -e "$g" ] || continue
  name=$(basename "$g" .kiln)
  if t=$(timeout 120 "$rt/run-kd" time "$g" --warmup 5 --repeats 20 2>>"$errors"); then
    echo "{\"gemm\": \"$name\", \"kiln\": $t}" >> "$out/kiln_$part.jsonl"
  else
    echo "time $name failed (see $errors)"
  fi
done
if [ "$part" = c ]; then
  command -v gcc > /dev/null || echo "note: no gcc here; torch.compile (Triton) may fail to build"
  PYTHONUNBUFFERED=1 timeout 360 python3 bench/gpu/torch_peer.py > "$out/torch.jsonl" \
    2>>"$errors" || echo "torch_peer.py failed or timed out (see $errors)"
fi
python3 bench/gpu/report.py "$out" | tee "$out/table_$part.md"
exit $fail
