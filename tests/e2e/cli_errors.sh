#!/usr/bin/env bash
# cli_errors.sh - the top-level `tempo` command: an unknown command is one
# error line with a pointer to --help (exit 2), not the whole usage (issue 9);
# --help prints the usage (exit 0); no command at all is bad usage (exit 2).
source "$(dirname "$0")/train_common.bash"
expect_error 2 "^tempo: unknown command 'x'; see tempo --help$" "$TEMPO" x
out=$("$TEMPO" frobnicate --help 2>&1 >/dev/null)
[ "$out" = "tempo: unknown command 'frobnicate'; see tempo --help" ] || fail "unknown command: got '$out'"
"$TEMPO" --help >"$E2E_TMP/help" 2>&1 || fail "tempo --help exited $?"
grep -q '^usage: tempo <command>' "$E2E_TMP/help" && grep -q '^  judge ' "$E2E_TMP/help" || fail "tempo --help: $(cat "$E2E_TMP/help")"
"$TEMPO" >/dev/null 2>&1
[ $? -eq 2 ] || fail "tempo without a command: want exit 2"
echo "ok: unknown command, --help, no command"
exit 0
