#!/usr/bin/env bash
# Regenerates the report screenshots shown in README.md and docs/REPORT.md (the waterfall
# of span traces last):
# simulate a scenario, write its report, photograph it with headless chromium.
#   scripts/report-screenshots.sh [BINARY]      (default build/bin/snailtrail)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "${1:-build/bin/snailtrail}")
DOCS=$(realpath docs)
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

shoot() {  # name scenario window
  local name=$1 scenario=$2 window=$3
  "$BIN" simulate "$scenario" -o "$WORK/$name.snail" -q
  # Relative names, so that the page's title shows the trace's name only.
  (cd "$WORK" && "$BIN" report "$name.snail" -o "$name.html" --window "$window" --no-progress)
  # The page draws synchronously on load; the budget only bounds a hang.
  "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --virtual-time-budget=5000 --window-size=1280,1900 \
    --screenshot="$DOCS/report-$name.png" "file://$WORK/$name.html" 2>/dev/null
  echo "docs/report-$name.png ($(stat -c %s "$DOCS/report-$name.png") bytes)"
}

shoot skew examples/wordcount-skew-30.toml 1s
shoot microbatch examples/spark-microbatch.toml 1s

# The Waterfall of span traces: generated checkout requests (scripts/gen-spans.py), the
# slowest one shown.
python3 scripts/gen-spans.py --traces 60 --items 3 -o "$WORK/checkout.json"
(cd "$WORK" && "$BIN" report checkout.json -o checkout.html --traces 12)
"$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
  --virtual-time-budget=5000 --window-size=1280,860 \
  --screenshot="$DOCS/report-waterfall.png" "file://$WORK/checkout.html" 2>/dev/null
echo "docs/report-waterfall.png ($(stat -c %s "$DOCS/report-waterfall.png") bytes)"

# The Job graph section of the skewed word count's report (an element screenshot, through
# playwright-core as the browser tests use it).
"$BIN" simulate examples/wordcount-skew-30.toml -o "$WORK/wordcount.snail" -q
(cd "$WORK" && "$BIN" report wordcount.snail -o wordcount.html --no-progress)
CHROMIUM="$CHROMIUM" PAGE="$WORK/wordcount.html" OUT="$DOCS/report-jobgraph.png" node --input-type=module -e "
import { chromium } from 'playwright-core';
const b = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ['--no-sandbox'] });
const p = await b.newPage({ viewport: { width: 1280, height: 900 } });
await p.goto('file://' + process.env.PAGE);
await p.waitForSelector('body[data-jobgraph]');
await p.locator('#sec-jobgraph').screenshot({ path: process.env.OUT });
await b.close();"
echo "docs/report-jobgraph.png ($(stat -c %s "$DOCS/report-jobgraph.png") bytes)"
