# Sourced by the benchmarks that run ONNX Runtime beside Kiln (compare.sh, decode.sh): needs
# node, builds $BIN (kiln-bench-model in $BUILD_DIR) with cmake if missing, and installs npm
# onnxruntime-node@$ORT_VERSION (CPU library inside the package) once into the git-ignored
# $ORT_DIR. Nothing in the product depends on it. Expects BUILD_DIR and BIN set.
ORT_VERSION=1.30.0
ORT_DIR=bench/.ort
_bench=$(basename "$0")

command -v node >/dev/null || { echo "$_bench: node is required (apt-get install nodejs npm)" >&2; exit 1; }

if [[ ! -x "$BIN" ]]; then
  echo "$_bench: building kiln-bench-model in $BUILD_DIR" >&2
  [[ -f "$BUILD_DIR/CMakeCache.txt" ]] || cmake -S . -B "$BUILD_DIR" -G Ninja -DKILN_BUILD_SERVER=OFF >/dev/null
  cmake --build "$BUILD_DIR" --target kiln-bench-model >&2
fi

installed_version() {
  node -p "require('./$ORT_DIR/node_modules/onnxruntime-node/package.json').version" 2>/dev/null || true
}
if [[ "$(installed_version)" != "$ORT_VERSION" ]]; then
  echo "$_bench: installing onnxruntime-node@$ORT_VERSION into $ORT_DIR" >&2
  mkdir -p "$ORT_DIR"
  [[ -f "$ORT_DIR/package.json" ]] || echo '{"name":"kiln-bench-ort","private":true}' > "$ORT_DIR/package.json"
  # --ignore-scripts: the package's install script downloads GPU libraries (and fails offline);
  # the CPU library ships inside the package.
  (cd "$ORT_DIR" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
     "onnxruntime-node@$ORT_VERSION" >&2)
fi
