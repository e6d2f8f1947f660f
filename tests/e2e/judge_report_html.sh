#!/usr/bin/env bash
# judge_report_html.sh - `tempo leaderboard --html`: one self-contained page
# (no script, no external resource) with the ranking table, every attempt and
# an inline SVG plot per run with metrics; then a real browser: Debian's
# chromium renders it headless, its DOM holds the table and the plots, and
# the screenshot (decoded here) shows the table header and both curve
# colours. Without chromium the browser part is skipped LOUDLY (installed
# with apt-get only under CI=true as root).
source "$(dirname "$0")/judge_common.bash"
fake_data_dir "$J_TMP/data"
fake_tempo "$J_TMP/faketempo"
write_model_py "$J_TMP/write_model.py"
J_ARGS=(--budget 5s --grace 0.5s --data-dir "$J_TMP/data" --val "$DATA/tiny/val.txt" --tempo "$J_TMP/faketempo"
        --db "$J_TMP/lb.sqlite" --work "$J_TMP/work" --memory 4G --threads 1)
for s in "alpha 2.31" "bravo 2.12"; do
    set -- $s
    mkdir -p "$J_TMP/$1" && cp "$J_TMP/write_model.py" "$J_TMP/$1/w.py"
    new_submission "$J_TMP/$1" "$1" "[\"sh\", \"-c\", \"python3 w.py \\\"\$TEMPO_OUT_DIR/model.safetensors\\\" ok $2 metrics\"]"
done
judge_expect "$J_TMP/alpha" ok '^$' --seeds 2
judge_expect "$J_TMP/bravo" ok '^$'
mkdir -p "$J_TMP/broken"
printf '{"name": "broken", "authors": ["<b>Mallory</b> & co"], "description": "d", "phase": 1, "command": ["false"]}' \
    > "$J_TMP/broken/manifest.json"
judge_expect "$J_TMP/broken" failed 'exited with status 1'

PAGE=$J_TMP/board.html
"$TEMPO" leaderboard --db "$J_TMP/lb.sqlite" --html "$PAGE" > "$J_TMP/html.json" || fail "leaderboard --html"
[ "$(json_get "$J_TMP/html.json" 'j["html"]')" = "$PAGE" ] || fail "no JSON summary line"
python3 - "$PAGE" <<'PY' || fail "the page's structure"
import html.parser, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = {}
        self.bad = []
    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            if k in ("src", "href") and v and not v.startswith("#"):
                self.bad.append((tag, k, v))
p = P()
p.feed(text)
assert p.tags.get("script", 0) == 0, "script in the page"
assert not p.bad, p.bad
assert p.tags.get("table", 0) == 2, p.tags          # the ranking and all attempts
assert p.tags.get("svg", 0) == 3, p.tags            # alpha x2 seeds, bravo
assert p.tags.get("polyline", 0) == 6, p.tags       # train loss and val bpb per run
assert "<link" not in text and "@import" not in text
assert re.search(r"<td class=\"num\">1</td><td>bravo</td>", text), "bravo is not first"
assert "&lt;b&gt;Mallory&lt;/b&gt; &amp; co" in text, "the authors are not shown escaped"
assert "<b>Mallory" not in text, "unescaped markup from a manifest"
print("page: %d bytes, %s" % (len(text), {k: p.tags[k] for k in ("table", "svg", "polyline", "tr")}))
PY

# the real browser
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ] && [ "$(id -u)" = 0 ] && [ "${CI:-}" = true ]; then
    echo "chromium missing: installing it (CI=true, root)"
    (apt-get install -y --no-install-recommends chromium >"$J_TMP/apt.log" 2>&1 ||
        { apt-get update >>"$J_TMP/apt.log" 2>&1 && apt-get install -y --no-install-recommends chromium >>"$J_TMP/apt.log" 2>&1; }) ||
        tail -5 "$J_TMP/apt.log"
    CHROME=$(command -v chromium || true)
fi
if [ -z "$CHROME" ]; then
    echo "PART SKIPPED: chromium not installed: the browser check did not run (apt-get install chromium)"
    exit 0
fi
FLAGS=(--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
       --no-first-run --no-default-browser-check --hide-scrollbars --user-data-dir="$J_TMP/chrome-profile")
timeout 120 "$CHROME" "${FLAGS[@]}" --dump-dom "file://$PAGE" > "$J_TMP/dom.html" 2>"$J_TMP/chrome.err" ||
    { tail -5 "$J_TMP/chrome.err"; fail "chromium --dump-dom failed"; }
grep -q '<table class="board"' "$J_TMP/dom.html" || fail "rendered DOM has no ranking table"
[ "$(grep -o '<svg class="plot"' "$J_TMP/dom.html" | wc -l)" = 3 ] || fail "rendered DOM lacks the plots"
grep -q '<polyline' "$J_TMP/dom.html" || fail "rendered DOM has no curves"
timeout 120 "$CHROME" "${FLAGS[@]}" --window-size=1400,1000 --screenshot="$J_TMP/board.png" "file://$PAGE" \
    >/dev/null 2>>"$J_TMP/chrome.err" || { tail -5 "$J_TMP/chrome.err"; fail "chromium --screenshot failed"; }
python3 - "$J_TMP/board.png" <<'PY' || fail "the screenshot does not show the table and the plots"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours = {"table header": (0xE8, 0xEE, 0xF7), "train loss curve": (0x1F, 0x77, 0xB4),
           "val bpb curve": (0xD6, 0x27, 0x28)}
found = {k: 0 for k in colours}
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = line[x:x + 3]
        for k, col in colours.items():
            if all(abs(px[j] - col[j]) <= 8 for j in range(3)):
                found[k] += 1
    prev = line
print("screenshot %dx%d, pixels: %s" % (w, h, found))
assert all(v >= 20 for v in found.values()), found
PY
echo "ok: chromium rendered the page: table and plots visible"
exit 0
