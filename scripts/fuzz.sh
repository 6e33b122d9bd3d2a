#!/usr/bin/env bash
# Coverage-guided fuzzing of the agent's request decoding (issue 17): sockaddrs, open_how,
# control messages, paths and xattr names (crates/warden/src/agent/decode.rs), with cargo-fuzz
# (libFuzzer), each target for SECONDS seconds (default 30) from the corpus kept in
# fuzz/corpus/TARGET. A panic, a failed assertion or a timeout is a failure; the input that
# caused it is left in fuzz/artifacts/TARGET.
#
#   bash scripts/fuzz.sh [SECONDS]
#
# Needs the nightly toolchain (this machine kind has it beside stable) and cargo-fuzz, which it
# installs from crates.io when missing. New inputs go to a scratch corpus, so the repository's
# stays as committed; `cargo +nightly fuzz cmin TARGET` in fuzz/ refreshes it.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-30}
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz.sh: no nightly toolchain (cargo-fuzz needs it): rustup toolchain install nightly" >&2
  exit 1
fi
command -v cargo-fuzz >/dev/null || cargo install --locked -q cargo-fuzz
# The decoders are safe Rust: coverage instrumentation without a sanitizer finds their panics.
cargo +nightly fuzz build -s none >/dev/null 2>&1 || cargo +nightly fuzz build -s none
scratch=$(mktemp -d "${TMPDIR:-/tmp}/warden-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
for target in $(cargo +nightly fuzz list); do
  mkdir -p "$scratch/$target" "corpus/$target"
  out=$(cargo +nightly fuzz run -s none "$target" "$scratch/$target" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=5 -rss_limit_mb=1024 2>&1) || {
    echo "$out" | tail -30
    echo "fuzz.sh: $target FAILED (input in fuzz/artifacts/$target)"
    exit 1
  }
  echo "fuzz.sh: $target: $(echo "$out" | grep -o 'Done [0-9]* runs in [0-9]* second(s)' | tail -1), no failure"
done
