# judge_common.bash - helpers shared by the tests/e2e/judge_*.sh scripts
# (sourced, never run: its name does not end in .sh, so run_all.sh skips it).
# Scripts run from the repository root with build/tempo built.
set -u
TEMPO=${TEMPO:-build/tempo}
DATA=${TEMPO_DATA:-../shared/data}
J_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tempo-judge-e2e.XXXXXX")
chmod 755 "$J_TMP" # a root judge runs submissions as nobody, who must be able to enter the run folders
trap '[ -n "${J_KEEP:-}" ] || rm -rf "$J_TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# json_get FILE_OR_DASH EXPR : evaluate a python expression on the last JSON line (variable j).
json_get() {
    python3 -c 'import json,sys
src = sys.stdin if sys.argv[1] == "-" else open(sys.argv[1])
lines = [l for l in src.read().splitlines() if l.strip()]
j = json.loads(lines[-1])
print(eval(sys.argv[2]))' "$1" "$2"
}

# A stand-in for a prepared training folder (the judge hands it over as is).
fake_data_dir() {
    mkdir -p "$1"
    printf 'not real tokens\n' > "$1/train.tok"
    printf '{"vocab": 256}\n' > "$1/meta.json"
}

# write_model.py: a tempo-looking safetensors file (metadata config + tokenizer).
# usage: python3 write_model.py OUT [ok|nan|truncated|foreign|nometa] [bpb-hint] [metrics]
write_model_py() {
    cat > "$1" <<'PY'
import json, struct, sys
out, kind = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "ok"
hint = sys.argv[3] if len(sys.argv) > 3 else "2.5"
vals = [0.5, -0.25, 1.0, 2.0]
if kind == "nan":
    vals[2] = float("nan")
meta = {"config": "{}", "tokenizer": "fake", "fake_bpb": hint}
if kind == "nometa":
    meta = {"format": "pt"}
hdr = {"__metadata__": meta, "w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
h = json.dumps(hdr).encode()
h += b" " * ((8 - len(h) % 8) % 8)
blob = struct.pack("<Q", len(h)) + h + struct.pack("<4f", *vals)
if kind == "truncated":
    blob = blob[:-7]
if kind == "foreign":
    blob = b"PK\x03\x04 this is a zip file, not safetensors" + bytes(64)
open(out, "wb").write(blob)
if len(sys.argv) > 4 and sys.argv[4] == "metrics":  # a learning curve next to the model
    import os
    with open(os.path.join(os.path.dirname(out), "metrics.jsonl"), "w") as f:
        for i in range(60):
            f.write(json.dumps({"step": i, "elapsed_s": 0.05 * i, "train_loss": 5.5 - 0.04 * i, "lr": 0.003}) + "\n")
            if i % 10 == 9:
                f.write(json.dumps({"step": i, "elapsed_s": 0.05 * i, "val_bpb_slice": 4.0 - 0.02 * i}) + "\n")
PY
}

# A fake tempo binary for the judge's --tempo: `eval --text` prints the bpb
# hinted in the model's metadata (so tests control scores); `eval --phase 2`
# prints $FAKE_SCORECARD when set, else fails like a tempo without phase 2.
fake_tempo() {
    cat > "$1" <<'SH'
#!/bin/sh
if [ "$1" = eval ]; then
    model=""; phase=1; prev=""
    for a in "$@"; do
        [ "$prev" = "--model" ] && model=$a
        [ "$prev" = "--phase" ] && phase=$a
        prev=$a
    done
    if [ "$phase" = 2 ]; then
        [ -n "${FAKE_SCORECARD:-}" ] || { echo "tempo: eval: --phase: unknown option" >&2; exit 2; }
        echo "$FAKE_SCORECARD"; exit 0
    fi
    exec python3 -c 'import json,struct,sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
print(json.dumps({"bpb": float(h["__metadata__"]["fake_bpb"]), "bits": 1, "bytes": 1000, "tokens": 400,
                  "context": 64, "stride": 32, "seconds": 0.01}))' "$model"
fi
echo "tempo: $1: not implemented in the fake" >&2
exit 2
SH
    chmod +x "$1"
}

# new_submission DIR NAME COMMAND_JSON [extra manifest keys]; a submission
# sees nothing outside its own folder, so $J_TMP/write_model.py (when there
# is one) is copied in ($WM_IN runs it from there).
WM_IN="python3 \$TEMPO_SUBMISSION_DIR/write_model.py \$TEMPO_OUT_DIR/model.safetensors"
new_submission() {
    mkdir -p "$1"
    [ ! -f "$J_TMP/write_model.py" ] || cp "$J_TMP/write_model.py" "$1/write_model.py"
    printf '{"name": "%s", "authors": ["e2e"], "description": "test submission", "phase": 1, "command": %s%s}\n' \
        "$2" "$3" "${4:+, $4}" > "$1/manifest.json"
}

# judge_expect SUBMISSION STATUS REASON_REGEX [judge args...]: judge it with
# the common test options ($J_ARGS), require exit 0 and the verdict; the
# attempt JSON is left in $J_TMP/last.json.
judge_expect() {
    local sub=$1 status=$2 reason=$3 t0=$SECONDS; shift 3
    "$TEMPO" judge --submission "$sub" "${J_ARGS[@]}" "$@" >"$J_TMP/last.json" 2>"$J_TMP/last.err"
    local rc=$?
    [ "$rc" -eq 0 ] || { cat "$J_TMP/last.err" >&2; fail "judge exited $rc on $sub"; }
    local got why
    got=$(json_get "$J_TMP/last.json" 'j["status"]')
    why=$(json_get "$J_TMP/last.json" 'j["reason"]')
    [ "$got" = "$status" ] || { cat "$J_TMP/last.err" >&2; fail "$sub: status $got, expected $status ($why)"; }
    echo "$why" | grep -Eq -- "$reason" || fail "$sub: reason '$why' does not match /$reason/"
    [ "$(echo "$why" | wc -l)" -eq 1 ] || fail "$sub: reason is not one line"
    echo "ok: $(basename "$sub"): $got${why:+: $why} ($((SECONDS - t0))s)"
}
