#!/usr/bin/env bash
# Load benchmark of kilnd (not a test; builds nothing): starts kilnd on loopback with a temp data
# dir, runs kiln-bench-load against it (cache-hit latency p50/p99 for the ResNet-18 artifact,
# then throughput with 16 concurrent clients), and stops kilnd.
#   bench/load.sh [--tls] [BIN_DIR] [kiln-bench-load flags...]   (BIN_DIR: build/bin)
# With --tls, kilnd serves over TLS (a self-signed certificate made with openssl for the run)
# and requires a bearer token (a token file with a compile,read token), as a deployment does.
# Extra flags go to kiln-bench-load, e.g. --requests 100 --clients 16 --duration-s 10.
set -euo pipefail
cd "$(dirname "$0")/.."

tls=0
if [ "${1:-}" = --tls ]; then tls=1; shift; fi
bin_dir=build/bin
if [ $# -gt 0 ] && [ -d "$1" ]; then bin_dir=$1; shift; fi
model=${KILN_BENCH_MODEL:-../shared/models/resnet18/model.onnx}
for b in kilnd kiln-worker kiln-bench-load; do
  [ -x "$bin_dir/$b" ] || { echo "load.sh: $bin_dir/$b not built (ninja -C build $b)" >&2; exit 1; }
done
[ -f "$model" ] || { echo "load.sh: $model not found" >&2; exit 1; }

tmp=$(mktemp -d /tmp/kiln-bench-load-XXXXXX)
kilnd_pid=
cleanup() {
  if [ -n "$kilnd_pid" ] && kill -0 "$kilnd_pid" 2>/dev/null; then
    kill -TERM "$kilnd_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$kilnd_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$kilnd_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

security=()
client_security=()
if [ "$tls" = 1 ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
  token=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  echo "$token compile,read" > "$tmp/tokens"
  echo "$token" > "$tmp/client.token"
  security=(--tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" --token-file "$tmp/tokens")
  client_security=(--tls-ca "$tmp/cert.pem" --token-file "$tmp/client.token")
fi
"$bin_dir/kilnd" --listen 127.0.0.1:0 --data-dir "$tmp/data" --workers 1 "${security[@]}" \
  2> "$tmp/kilnd.log" &
kilnd_pid=$!
for _ in $(seq 1 600); do
  [ -s "$tmp/data/kilnd.port" ] && break
  kill -0 "$kilnd_pid" 2>/dev/null || { cat "$tmp/kilnd.log" >&2; exit 1; }
  sleep 0.1
done
[ -s "$tmp/data/kilnd.port" ] || { echo "load.sh: kilnd did not start" >&2; cat "$tmp/kilnd.log" >&2; exit 1; }
port=$(cat "$tmp/data/kilnd.port")
echo "kilnd on 127.0.0.1:$port (data dir $tmp/data)"

"$bin_dir/kiln-bench-load" --server "127.0.0.1:$port" --model "$model" --clients 16 \
  "${client_security[@]}" "$@"
