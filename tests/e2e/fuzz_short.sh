#!/usr/bin/env bash
# fuzz_short.sh - every libFuzzer harness (tests/fuzz/) for a few seconds, so
# that a parser regression that its seed corpus reaches fails the suite.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash tests/fuzz/run.sh "${TEMPO_FUZZ_SECONDS:-3}"
