#!/usr/bin/env bash
# Runs on the device machine (an NVIDIA GPU with its driver), over what tests/device/prepare.sh
# put in .device/: for every model, kiln-device check (every output against its reference,
# |got - expected| <= 1e-4 + 1e-3 |expected|) and time (median of 100 runs, CUDA events) on
# cuda:0; the GEMMs' times; in part c the PyTorch peers (eager and torch.compile, same GPU);
# then the table of bench/gpu/report.py. Results go to $OUT (or /tmp/kiln-device-out).
# Exit status: 0 when every check passed.
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/kiln-device-out}
mkdir -p "$out"
[ -f .device/bundle.tar.xz ] || { echo "run.sh: no .device/ (run tests/device/prepare.sh first and carry .device)"; exit 2; }
rt=/tmp/kiln-device-rt
rm -rf $rt && mkdir -p $rt && tar -C $rt -xJf .device/bundle.tar.xz
kd() { LD_LIBRARY_PATH=$rt/lib $rt/bin/kiln-device "$@"; }
part=$(cat .device/part)
echo "== part $part"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader \
  > "$out/gpu_$part.txt" 2>&1; cat "$out/gpu_$part.txt"
if ! kd info > "$out/info_$part.json" 2>&1; then
  cat "$out/info_$part.json"; echo "run.sh: kiln-device cannot reach the GPU"; exit 2
fi
cat "$out/info_$part.json"

fail=0
: > "$out/kiln_$part.jsonl"
for dir in .device/models/*/; do
  m=$(basename "$dir")
  if kd check "$dir/model.kiln" "$dir" > "$out/check_$m.txt" 2>&1; then
    echo "PASS $m"
  else
    echo "FAIL $m"; fail=1
  fi
  grep -E "^(PASS|FAIL) " "$out/check_$m.txt" | grep -v "^PASS \." | head -5
  grep -E "^kiln-device:" "$out/check_$m.txt" | head -3
  t=$(kd time "$dir/model.kiln" "$dir" --warmup 20 --repeats 100 2>&1) && \
    echo "{\"model\": \"$m\", \"kiln\": $t}" >> "$out/kiln_$part.jsonl" || echo "time $m: $t"
done
for g in .device/gemm/*.kiln; do
  [ -e "$g" ] || continue
  name=$(basename "$g" .kiln)
  t=$(kd time "$g" --warmup 5 --repeats 20 2>&1) && \
    echo "{\"gemm\": \"$name\", \"kiln\": $t}" >> "$out/kiln_$part.jsonl" || echo "time $name: $t"
done
if [ "$part" = c ]; then
  PYTHONUNBUFFERED=1 timeout 420 python3 bench/gpu/torch_peer.py > "$out/torch.jsonl" || echo "torch_peer.py failed or timed out"
fi
python3 bench/gpu/report.py "$out" | tee "$out/table_$part.md"
exit $fail
