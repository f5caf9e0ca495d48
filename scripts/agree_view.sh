#!/usr/bin/env bash
# The HTML view of `latechunk agree` on tests/data/agree_policy.md (heading vs semantic), screenshotted in headless
# chromium into results/agree_view.png.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
latechunk agree tests/data/agree_policy.md --strategies "heading semantic" --html "$tmp/view" --quiet > results/agree_policy.txt
chromium --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
  --disable-sync --no-first-run --window-size=1200,1400 --screenshot="$PWD/results/agree_view.png" \
  "file://$tmp/view/$(ls "$tmp/view" | grep -v index.html | head -1)" 2>/dev/null
echo "results/agree_view.png, results/agree_policy.txt"
