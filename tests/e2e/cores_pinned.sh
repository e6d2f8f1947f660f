#!/usr/bin/env bash
# cores_pinned.sh - the hardware profile counts the same cores with OpenMP's
# threads bound (--pin-threads sets OMP_PROC_BIND=close, OMP_PLACES=cores) as
# without: libgomp binds the main thread to one place before main runs, and a
# profile that saw one core there measured a 1-core peak as the 2-thread one
# (bench train --pin-threads printed an MFU over 100 %).
source "$(dirname "$0")/train_common.bash"
"$TEMPO" bench peak --seconds 0.2 --out "$E2E_TMP/free.json" >/dev/null 2>"$E2E_TMP/err" \
    || { cat "$E2E_TMP/err" >&2; fail "bench peak failed"; }
free=$(json_field "$E2E_TMP/free.json" cores)
if [ "$free" -lt 2 ]; then
    echo "SKIP: this process may run on $free CPU: binding cannot lose any"
    exit 0
fi
OMP_PROC_BIND=close OMP_PLACES=cores "$TEMPO" bench peak --seconds 0.2 --out "$E2E_TMP/bound.json" \
    >/dev/null 2>"$E2E_TMP/err" || { cat "$E2E_TMP/err" >&2; fail "bench peak (bound) failed"; }
bound=$(json_field "$E2E_TMP/bound.json" cores)
[ "$bound" -eq "$free" ] || fail "bound threads: the profile counts $bound cores, unbound $free"
python3 - "$E2E_TMP/bound.json" "$free" <<'PY' || fail "bound threads: no peak at all threads: $(cat "$E2E_TMP/bound.json")"
import json, sys
p = json.load(open(sys.argv[1]))
assert str(sys.argv[2]) in p["peak_gflops"], p["peak_gflops"]
PY
echo "ok: $free cores counted with the threads bound and without"
