#!/usr/bin/env bash
# make_install.sh - `make install PREFIX=... DESTDIR=...` puts a tempo that
# works without the source tree: from an empty folder, with no TEMPO_CONFIGS,
# the installed binary finds its presets (train --preset tiny-test), the
# planner's fits (plan) and prints its scorecard; plan's last stdout line is
# JSON and --preset-only prints a preset that trains. Without the installed
# configs the same command fails naming where it looked (so the first check
# is not passing on files found elsewhere). `make uninstall` removes it all.
source "$(dirname "$0")/train_common.bash"
D=$(cd "$(tiny_data 512)" && pwd)
S="$E2E_TMP/stage"
make --no-print-directory install PREFIX=/opt/tempo DESTDIR="$S" >"$E2E_TMP/install.log" 2>&1 \
    || { cat "$E2E_TMP/install.log" >&2; fail "make install failed"; }
B="$S/opt/tempo/bin/tempo"
[ -x "$B" ] || fail "no installed binary"
for f in share/tempo/configs/cpu-default.conf share/tempo/configs/tiny-test.conf share/tempo/configs/chips/cpu-avx2-2core.conf \
         share/tempo/configs/chips/cpu-avx512-2core.conf \
         share/tempo/configs/scaling/transformer_law.conf share/tempo/scripts/torch_reference.py share/doc/tempo/README.md \
         share/doc/tempo/architecture.md; do
    [ -f "$S/opt/tempo/$f" ] || fail "make install left out $f"
done
mkdir -p "$E2E_TMP/empty" && cd "$E2E_TMP/empty" || fail "no empty folder"
unset TEMPO_CONFIGS
"$B" train --data "$D" --preset tiny-test --steps 3 --threads 1 --no-eval --out run >out.json 2>err.log \
    || { cat err.log >&2; fail "the installed tempo could not train tiny-test from an empty folder"; }
grep -q '^scorecard: val_bpb n/a | train [0-9.]* s (overrun 0.00 s) | 3 steps | [0-9]* tokens/s | MFU ' err.log \
    || { tail -3 err.log >&2; fail "train printed no scorecard"; }
"$B" plan --budget 10m >plan.txt 2>plan.err || { cat plan.err >&2; fail "the installed plan found no fits"; }
tail -n 1 plan.txt | python3 -c 'import json,sys; j=json.loads(sys.stdin.read()); assert j["plan"]=="tempo" and j["d_model"]>0 and j["val_bpb"]>0, j' \
    || fail "plan's last stdout line is not its JSON object"
"$B" plan --budget 2m --preset-only >my.conf 2>/dev/null || fail "plan --preset-only failed"
! grep -q '^{' my.conf || fail "--preset-only printed a JSON line"
"$B" train --data "$D" --preset "$PWD/my.conf" --set memory_order=0 --set cache_order=0 --set match_length=0 --steps 1 \
    --threads 1 --no-eval --out run2 >/dev/null 2>&1 || fail "the --preset-only preset does not train"
echo "ok: the installed tempo trains, plans and prints its scorecard from an empty folder"

mv "$S/opt/tempo/share/tempo/configs" "$S/opt/tempo/share/tempo/configs.away"
out=$("$B" train --data "$D" --preset tiny-test --steps 3 --out run3 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q 'preset tiny-test: not found (looked for tiny-test.conf in .*share/tempo/configs' \
    || fail "without its configs the installed tempo did not say where it looked (exit $rc): $out"
mv "$S/opt/tempo/share/tempo/configs.away" "$S/opt/tempo/share/tempo/configs"
cd - >/dev/null || exit 1
make --no-print-directory uninstall PREFIX=/opt/tempo DESTDIR="$S" >/dev/null 2>&1 || fail "make uninstall failed"
left=$(find "$S" -type f | wc -l)
[ "$left" = 0 ] || fail "make uninstall left $left files"
echo "ok: without its configs it says where it looked; uninstall removes every file"
