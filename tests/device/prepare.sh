#!/usr/bin/env bash
# Prepares .device/ (git-ignored) for one call of the device machine, on this CPU host: the
# models of one part compiled for cuda:sm_90 with their test data sets, and kiln-device (the
# runner without the compiler) with the shared libraries it needs, packed as bundle.tar.xz.
# A call carries at most 64 MiB with the repo, so the models come in three parts:
#   a: lenet mlp squeezenet1_1 (also as tf32 and fp16) transformer_encoder
#      transformer_encoder_dyn mobilenet_v2, and the GEMMs (4096^3 f32, tf32 and f16; ResNet-18
#      and transformer shapes; inputs made on the device)
#   b: resnet18
#   c: mobilenet_v2_taps, transformer_encoder as tf32 and fp16, and the PyTorch peers of
#      every model (bench/gpu/torch_peer.py)
# Then, with the device tool: run(command="bash tests/device/run.sh", carry=[".device"]).
#
# usage: tests/device/prepare.sh a|b|c [SM]   (SM: sm_90 by default; "host" compiles for this
#        CPU instead, fp32 only, to try run.sh here: it then runs everything with --device cpu)
set -euo pipefail
part=${1:?usage: tests/device/prepare.sh a|b|c [SM]}
sm=${2:-sm_90}
cd "$(dirname "$0")/../.."
shared=../shared/models
[ -d "$shared" ] || { echo "prepare.sh: $shared is missing" >&2; exit 1; }
case $part in
  a) models="lenet mlp squeezenet1_1 transformer_encoder transformer_encoder_dyn mobilenet_v2" ;;
  b) models="resnet18" ;;
  c) models="mobilenet_v2_taps transformer_encoder" ;;
  *) echo "prepare.sh: unknown part '$part' (a, b or c)" >&2; exit 1 ;;
esac

cmake --build build --target kiln kiln-device
rm -rf .device
mkdir -p .device/pack/bin .device/pack/lib .device/models .device/gemm
echo "$part" > .device/part
if [ "$sm" = host ]; then target=host; else target=cuda:$sm; fi
echo "$target" > .device/target

# The runner and every library it links but the C library's (the device has its own).
cp build/bin/kiln-device .device/pack/bin/
ldd build/bin/kiln-device | awk '/=> \// {print $3}' |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv)\.so|/ld-linux' |
  while read -r lib; do cp -L "$lib" .device/pack/lib/; done
strip --strip-unneeded .device/pack/bin/kiln-device .device/pack/lib/* 2>/dev/null || true
tar -C .device/pack -cJf .device/bundle.tar.xz bin lib
rm -rf .device/pack

# "--input-shape NAME=D0,D1,..." per input of one data set (a shape profile each).
shape_flags() {
  /usr/bin/python3 - "$1" <<'PY'
import glob, sys
import onnx
flags = []
for f in sorted(glob.glob(sys.argv[1] + "/input_*.pb")):
    t = onnx.TensorProto()
    t.ParseFromString(open(f, "rb").read())
    flags.append("--input-shape %s=%s" % (t.name, ",".join(str(d) for d in t.dims)))
print(" ".join(flags))
PY
}

# The tensor-core precisions checked per model (within each part's 64 MiB).
precisions_of() {
  case $1 in
    squeezenet1_1) echo "tf32 fp16" ;;
    transformer_encoder) [ "$part" = c ] && echo "tf32 fp16" ;;
    *) ;;
  esac
}

for m in $models; do
  src=$shared/$m
  mkdir -p .device/models/$m
  flags=""
  if grep -P "^$m\t" $shared/MANIFEST.tsv | grep -q -P "\tsymbolic\t"; then
    for ds in "$src"/test_data_set_*; do flags="$flags $(shape_flags "$ds")"; done
  fi
  # shellcheck disable=SC2086
  build/bin/kiln compile "$src/model.onnx" -o .device/models/$m/model.kiln --target $target $flags
  # Tensor-core variants (model_<precision>.kiln), checked with their tolerance.
  for p in $([ "$target" = host ] || precisions_of "$m"); do
    # shellcheck disable=SC2086
    build/bin/kiln compile "$src/model.onnx" -o .device/models/$m/model_$p.kiln \
      --target cuda:$sm --precision "$p" $flags
  done
  cp -r "$src"/test_data_set_* .device/models/$m/
done

if [ "$part" = a ]; then
  # M K N DTYPE PRECISION: the 4096^3 GEMMs (f32 on CUDA cores and as tf32, f16 and bf16 on
  # tensor cores), ResNet-18's fc at batch 64 and the transformer's projections (64 tokens) and FFN.
  while read -r M K N T P; do
    name=gemm_${M}x${K}x${N}_$T
    [ "$P" = fp32 ] || name=${name}_$P
    [ "$P" = fp32 ] || [ "$target" != host ] || continue
    /usr/bin/python3 scripts/make-gemm-model "$M" "$K" "$N" "$T" /tmp/$name.onnx
    build/bin/kiln compile /tmp/$name.onnx -o .device/gemm/$name.kiln --target $target \
      --precision "$P"
  done <<'GEMMS'
4096 4096 4096 float32 fp32
4096 4096 4096 float32 tf32
4096 4096 4096 float16 fp16
4096 4096 4096 bfloat16 bf16
64 512 1000 float32 fp32
64 256 768 float32 fp32
64 256 1024 float32 fp32
64 1024 256 float32 fp32
GEMMS
fi
du -sh .device
echo "ready: run(command=\"bash tests/device/run.sh\", carry=[\".device\"])"
