# Shared by scripts/loadtest.sh, soak.sh and runaway.sh (sourced, not run): builds the
# release binaries unless COMPUTEGUARD_BIN and LOADGEN_BIN name prebuilt ones, writes a
# certificate, and starts `computeguard serve` in the background.
#
#   prepare_binaries                       sets BIN and LOADGEN
#   start_server PORT [PREFIX...] -- [SERVE ARGS...]
#       writes $WORK/computeguard.yaml if absent (asOf pinned), starts
#       `PREFIX... $BIN serve` on 127.0.0.1:PORT, sets SERVER, waits until it serves.

prepare_binaries() {
  if [ -z "${COMPUTEGUARD_BIN:-}" ] || [ -z "${LOADGEN_BIN:-}" ]; then
    rustup target add wasm32-wasip2 >/dev/null
    cargo build --release -p computeguard
    cargo build --release -p computeguard-server --example loadgen
  fi
  BIN=${COMPUTEGUARD_BIN:-target/release/computeguard}
  LOADGEN=${LOADGEN_BIN:-target/release/examples/loadgen}
}

start_server() {
  local port=$1; shift
  local prefix=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do prefix+=("$1"); shift; done
  [ "${1:-}" = "--" ] && shift
  "$LOADGEN" certs "$WORK" >/dev/null
  # LOADTEST_CONFIG_DIR: a folder with a computeguard.yaml (and the files it names) to
  # serve with instead of the default config.
  if [ -n "${LOADTEST_CONFIG_DIR:-}" ]; then cp -r "$LOADTEST_CONFIG_DIR"/. "$WORK"/; fi
  # asOf pinned so results are reproducible; everything else is the default config.
  [ -f "$WORK/computeguard.yaml" ] || printf 'asOf: 2026-11-22\n' > "$WORK/computeguard.yaml"
  COMPUTEGUARD_CACHE_DIR="${LOADTEST_CACHE:-$WORK/cache}" "${prefix[@]}" "$BIN" serve \
    --addr "127.0.0.1:$port" --tls-cert "$WORK/tls.crt" --tls-key "$WORK/tls.key" \
    --config "$WORK/computeguard.yaml" "$@" 2> "$WORK/server.log" &
  SERVER=$!
  for _ in $(seq 1 600); do
    if grep -q "webhook serving" "$WORK/server.log"; then return 0; fi
    sleep 0.1
  done
  cat "$WORK/server.log"
  exit 1
}
