#!/usr/bin/env bash
# The daily update of README "Updating a served index", end to end on real data, printing what each step did:
# day 1 = Chroma's five corpora; day 2 = state_of_the_union.md edited (a closing line appended), chatlogs.md
# deleted, and a new file that sorts first (the first XQuAD context, so every other row moves). Day 1 is embedded
# and exported to Qdrant and Chroma; day 2 is embedded with --reuse and synced into both; a second sync finds
# nothing to do. The README's counts come from this script.
#
#   bash scripts/sync_demo.sh [WORKDIR]        # WORKDIR default: a new temporary folder; ~2 minutes on 2 CPUs
set -euo pipefail
data="${LATECHUNK_DATA:-$(cd "$(dirname "$0")/.." && pwd)/../shared/data}"
corpora="$data/chroma_chunking_eval/corpora"
[ -d "$corpora" ] || { echo "no $corpora (set LATECHUNK_DATA to the data folder)" >&2; exit 2; }
work="${1:-$(mktemp -d -t latechunk_sync_demo.XXXXXX)}"
mkdir -p "$work/day1" "$work/day2"
cd "$work"
cp "$corpora"/*.md day1/
cp day1/finance.md day1/pubmed.md day1/wikitexts.md day1/state_of_the_union.md day2/
printf '\n\nThank you. God bless you all, and may God protect our troops.\n' >> day2/state_of_the_union.md
python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['data'][0]['paragraphs'][0]['context'])" \
  "$data/xquad_en/xquad.en.json" > day2/a_new_note.md
latechunk embed day1 --out idx1 --force -q
latechunk embed day2 --out idx2 --reuse idx1 --force -q
rm -rf store cstore
latechunk export idx1 --to qdrant:store -q
latechunk export idx1 --to chroma:cstore -q
latechunk export idx2 --to qdrant:store --sync -q
latechunk export idx2 --to chroma:cstore --sync -q
latechunk export idx2 --to qdrant:store --sync -q
echo "work folder: $work"
