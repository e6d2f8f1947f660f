#!/usr/bin/env bash
# fit_hybrid_curve.sh - scripts/fit_scaling.py's hybrid relation from saved
# points (--hybrid-tsv): points made from a known curved relation give back
# its pivot, slope and curve with --hybrid-curve, and the file it writes loads
# in `tempo plan --hybrid`; a line's points give back the line without it;
# --hybrid-points-out saves the points the refit line then reads alone; a
# second memory order is refused with --hybrid-curve.
source "$(dirname "$0")/train_common.bash"
PY=python3
# limit 1.64 (a useless transformer, t 3.6), pivot 2.7, slope 0.05, curve 0.12; linear - mixture 0.01
"$PY" - "$E2E_TMP/curve.tsv" "$E2E_TMP/line.tsv" <<'PY' || fail "could not write the points"
import sys
def rows(rel):
    out = ["run\tmemory_order\tval_bpb_transformer\tval_bpb_linear\tval_bpb", "useless\t5\t3.600000\t1.640000\t1.630000"]
    for i, t in enumerate([2.2, 2.0, 1.9, 1.8, 1.7, 1.6, 1.55]):
        h = rel(t)
        out.append("r%d\t5\t%.6f\t%.6f\t%.6f" % (i, t, h, h - 0.01))
    return "\n".join(out) + "\n"
open(sys.argv[1], "w").write(rows(lambda t: 1.64 - 0.05 * (2.7 - t) - 0.12 * (2.7 - t) ** 2))
open(sys.argv[2], "w").write(rows(lambda t: 1.64 - 0.2 * (2.4 - t)))
PY
H=configs/scaling/hybrid.conf
"$PY" scripts/fit_scaling.py --hybrid-curve --hybrid-tsv "$E2E_TMP/curve.tsv" --keep-timings "$H" \
    --hybrid-points-out "$E2E_TMP/points.tsv" --hybrid-out "$E2E_TMP/curve.conf" >"$E2E_TMP/curve.out" ||
    fail "the curve fit failed: $(cat "$E2E_TMP/curve.out")"
key() { sed -n "s/^$1 = \([^ ]*\).*/\1/p" "$2"; }
near() { "$PY" -c 'import sys; a, b, tol = map(float, sys.argv[1:]); sys.exit(abs(a - b) > tol)' "$@"; }
near "$(key pivot "$E2E_TMP/curve.conf")" 2.7 0.002 || fail "pivot $(key pivot "$E2E_TMP/curve.conf"), not 2.7"
near "$(key slope "$E2E_TMP/curve.conf")" 0.05 0.002 || fail "slope $(key slope "$E2E_TMP/curve.conf"), not 0.05"
near "$(key curve "$E2E_TMP/curve.conf")" 0.12 0.002 || fail "curve $(key curve "$E2E_TMP/curve.conf"), not 0.12"
near "$(key limit.5 "$E2E_TMP/curve.conf")" 1.64 1e-4 || fail "limit $(key limit.5 "$E2E_TMP/curve.conf"), not 1.64"
near "$(key calibration_gain "$E2E_TMP/curve.conf")" 0.01 1e-6 || fail "the calibration gain is not 0.01"
near "$(key residual_sd "$E2E_TMP/curve.conf")" 0 5e-4 || fail "exact points left a residual"
grep -q -- '--hybrid-curve' "$E2E_TMP/curve.conf" && grep -q -- "--hybrid-tsv $E2E_TMP/points.tsv" "$E2E_TMP/curve.conf" ||
    fail "the refit line does not read the saved points"
cmp -s "$E2E_TMP/curve.tsv" "$E2E_TMP/points.tsv" || fail "--hybrid-points-out did not save the points as read"
"$TEMPO" plan --budget 10m --hybrid "$E2E_TMP/curve.conf" >/dev/null 2>"$E2E_TMP/plan.err" ||
    fail "tempo plan does not load the fitted file: $(cat "$E2E_TMP/plan.err")"

# a line's points without --hybrid-curve: the line, no curve key
"$PY" scripts/fit_scaling.py --hybrid-tsv "$E2E_TMP/line.tsv" --keep-timings "$H" --hybrid-out "$E2E_TMP/line.conf" \
    >/dev/null || fail "the line fit failed"
near "$(key slope "$E2E_TMP/line.conf")" 0.2 1e-4 || fail "slope $(key slope "$E2E_TMP/line.conf"), not 0.2"
near "$(key pivot "$E2E_TMP/line.conf")" 2.4 1e-3 || fail "pivot $(key pivot "$E2E_TMP/line.conf"), not 2.4"
! grep -q '^curve' "$E2E_TMP/line.conf" || fail "a line fit wrote a curve"

# the curve is fitted for one memory order
sed 's/^r3\t5\t/r3\t4\t/' "$E2E_TMP/curve.tsv" >"$E2E_TMP/orders.tsv"
! "$PY" scripts/fit_scaling.py --hybrid-curve --hybrid-tsv "$E2E_TMP/orders.tsv" --keep-timings "$H" \
    --hybrid-out "$E2E_TMP/orders.conf" >"$E2E_TMP/orders.out" 2>&1 || fail "two orders were fitted as one curve"
grep -q "fits one memory order" "$E2E_TMP/orders.out" || fail "the refusal does not say why: $(cat "$E2E_TMP/orders.out")"
echo "ok: curve, line and points file"
