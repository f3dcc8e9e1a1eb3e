#!/usr/bin/env bash
# Runs hookwire's coverage-guided fuzz targets (fuzz/, cargo-fuzz + libFuzzer).
# See docs/fuzzing.md for the targets, the toolchain choice and triage.
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned tool version; installed from crates.io when missing or different.
CARGO_FUZZ_VERSION="0.13.1"
# The one stable toolchain has no -Zsanitizer: build without a sanitizer
# (the fuzzed code forbids `unsafe`), with debug assertions and overflow
# checks on so that arithmetic bugs panic.
BUILD_FLAGS=(--sanitizer none --debug-assertions)
ALL_TARGETS=(json_text wire_context wire_verdict wire_approval transform declaration
  messages_request messages_stream responses_request responses_stream chat_request chat_stream hook_payload mcp_message)

usage() {
  cat <<EOF
Usage: scripts/fuzz.sh [--seconds N] [--seeds] [--lint] [TARGET...]

Runs each fuzz target of fuzz/ for N seconds (default 60), starting from the
committed seeds (fuzz/seeds/TARGET) plus the working corpus it grows
(fuzz/corpus/TARGET, not committed). Installs cargo-fuzz $CARGO_FUZZ_VERSION
if it is missing. Exits non-zero if any target finds a failure; the failing
input is in fuzz/artifacts/TARGET/ and the command to reproduce it is printed.

Targets: json_text wire_context wire_verdict wire_approval transform declaration
messages_request messages_stream responses_request responses_stream
chat_request chat_stream hook_payload mcp_message (default: all).

Options:
  --seconds N  how long each target runs (libFuzzer -max_total_time)
  --seeds      regenerate fuzz/seeds/ from the conformance vectors first
               (.cache/ctk/vectors, installed by scripts/setup.sh)
  --lint       also run clippy -D warnings on the fuzz crate
  -h, --help   this text

Examples:
  scripts/fuzz.sh --seconds 20                 # what .ci/run does
  scripts/fuzz.sh --seconds 1800 declaration   # a long run of one target
EOF
}

seconds=60
seeds=0
lint=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help)
      usage
      exit 0
      ;;
    --seconds)
      [ $# -ge 2 ] || { echo "fuzz.sh: --seconds needs a value" >&2; exit 2; }
      seconds="$2"
      shift 2
      ;;
    --seconds=*)
      seconds="${1#--seconds=}"
      shift
      ;;
    --seeds)
      seeds=1
      shift
      ;;
    --lint)
      lint=1
      shift
      ;;
    -*)
      echo "fuzz.sh: unknown option $1 (see --help)" >&2
      exit 2
      ;;
    *)
      if [[ ! " ${ALL_TARGETS[*]} " =~ " $1 " ]]; then
        echo "fuzz.sh: unknown target $1 (one of: ${ALL_TARGETS[*]})" >&2
        exit 2
      fi
      targets+=("$1")
      shift
      ;;
  esac
done
[[ "$seconds" =~ ^[0-9]+$ ]] && [ "$seconds" -gt 0 ] ||
  { echo "fuzz.sh: --seconds must be a positive whole number" >&2; exit 2; }
[ ${#targets[@]} -gt 0 ] || targets=("${ALL_TARGETS[@]}")

if [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz ${CARGO_FUZZ_VERSION}" ]; then
  echo "fuzz.sh: installing cargo-fuzz ${CARGO_FUZZ_VERSION}"
  cargo install cargo-fuzz --version "=${CARGO_FUZZ_VERSION}" --locked
fi

MANIFEST=fuzz/Cargo.toml
cargo fmt --manifest-path "$MANIFEST" -- --check
if [ "$lint" = 1 ]; then
  cargo clippy --manifest-path "$MANIFEST" --all-targets -- -D warnings
fi
if [ "$seeds" = 1 ]; then
  cargo run --manifest-path "$MANIFEST" --example seed_corpora
fi

cd fuzz
cargo fuzz build "${BUILD_FLAGS[@]}"
failed=()
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  echo "fuzz.sh: $t for ${seconds}s"
  if cargo fuzz run "${BUILD_FLAGS[@]}" "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    >"corpus/$t.log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "corpus/$t.log" | tr '\n' ' ' || true
    echo
  else
    failed+=("$t")
    tail -n 40 "corpus/$t.log"
    echo "fuzz.sh: $t FAILED; reproduce with:"
    for a in artifacts/"$t"/*; do
      [ -e "$a" ] && echo "  (cd fuzz && cargo fuzz run ${BUILD_FLAGS[*]} $t $a)"
    done
  fi
done

echo "fuzz: ${#targets[@]} targets, ${seconds} s each, ${#failed[@]} failed${failed:+ (${failed[*]})}"
[ ${#failed[@]} -eq 0 ]
