#!/usr/bin/env bash
# The first hour on a fresh clone (issue 53): the README's quick tour and docs/getting-started.md's first commands,
# RUN (not parsed: tests/test_docs.py parses them), from the root of a fresh `git clone` of this repository's HEAD,
# with the packaged model and the data root ($BENCH_DATA, default ../shared/data); any non-zero exit fails.
#
# Cut to about two minutes (100 s on 2 idle cores, 24 s of it the laptop page's intervals over its committed store;
# 132 s on one torch thread, as .ci/run runs it beside the regression check),
# each cut said where it is made: training runs take `--set max_steps=2` on a
# 64-sentence sample of the Twitter URL corpus the data root holds and are scored on STSb only (`--tasks stsb` with
# `--corpus`: the tour's `--tasks twitterpara` also scores TwitterPara, 20K sentences per unit); `bench eval` scores
# STSb (the tour's useb,sts takes 79 s on 2 idle cores); `bench reproduce laptop` (about 3 h) and its `--results-dir results/laptop`
# run as --dry-run; `bench check` (the command itself, on the whole CI subset, is a step of .ci/run beside this script)
# and `bench doctor --device cuda` (needs a GPU; tests/doctor/test_doctor.py runs --quick) are not run here.
#
#   scripts/first_hour.sh            # in the environment that has `bench` (the clone's code is what runs)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
BENCH_DATA="${BENCH_DATA:-$repo/../shared/data}"
[ -d "$BENCH_DATA" ] || { echo "[first-hour] no data root at $BENCH_DATA (set BENCH_DATA)"; exit 1; }
export BENCH_DATA="$(cd "$BENCH_DATA" && pwd)"  # absolute: the commands run from the clone's root
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
unset BENCH_RESULTS
work="$(mktemp -d "${TMPDIR:-/tmp}/first-hour.XXXXXX")"
trap 'rm -rf "$work"' EXIT
git clone --quiet "$repo" "$work/clone"
cd "$work/clone"
export PYTHONPATH="$PWD"  # the clone's usebench, whichever environment installed `bench`
start=$SECONDS
echo "[first-hour] $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"

run() {  # one command, timed; a failure stops the script (set -e) after saying which
  local t0=$SECONDS
  echo "[first-hour] \$ $*"
  local rc=0
  "$@" > "$work/out.txt" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then cat "$work/out.txt"; echo "[first-hour] FAILED (exit $rc): $*"; exit 1; fi
  tail -n 3 "$work/out.txt" | sed 's/^/    /'
  echo "[first-hour]   ok in $((SECONDS - t0)) s"
}

corpus="$BENCH_DATA/useb/extra/twitter_url_train_tok/a.toks"
cut=(--corpus "$corpus" --corpus-size 64 --set max_steps=2 --set batch_size=8)

# docs/getting-started.md, "What is there"
run bench tasks
run bench methods
run bench methods --preset paper
run bench report --list
run bench data status
# the README's quick tour (and getting-started's first evaluation and training run), in its order
run bench eval --model minilm --tasks stsb                                     # cut: the tour's useb,sts
run bench eval --model minilm --tasks stsb --limit 500                         # cut: the tour's quick twitterpara
run bench run --methods tsdae,simcse --tasks stsb --eval-tasks stsb --preset smoke "${cut[@]}"  # cut: twitterpara
run bench run --methods ct --tasks stsb --eval-tasks stsb --preset smoke "${cut[@]}" --log-to tensorboard
run bench report --table paper-table2,sts-table --format md,html
run bench report
run bench eval --model minilm --pooling cls --tasks stsb                       # the row the next command compares
run bench compare "minilm (mean)" "minilm (cls)"
run bench status --state failed,running
run bench status
run bench reproduce tsdae --dry-run
run bench reproduce laptop --dry-run                                           # cut: the 3 h run itself
run bench reproduce laptop --dry-run --results-dir results/laptop              # the committed store: nothing remains
run bench report --results-dir results/laptop --table laptop-adapt --out "$work/laptop-page"
run python -c "import usebench; print(usebench.load_results('results/').shape)"
run python -c "
import zlib
import numpy as np
import usebench
class MyModel:  # any encoder: here hashed bags of words (MiniLM was scored above), so the API's own work is timed
    def encode(self, texts):
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, zlib.crc32(w.encode()) % 256] += 1.0
        return out
my_model = MyModel()
frame = usebench.evaluate(lambda texts: my_model.encode(texts), ['stsb'], name='my-model')  # cut: the tour's twitterpara
from usebench import useb
print(frame[frame['main']].to_string())
# bench run from Python: the tsdae unit trained above, found done (the same corpus sample, preset and cut)
trained = usebench.train('tsdae', 'stsb', corpus='$corpus', corpus_size=64, preset='smoke', max_steps=2,
                         train_batch_size=8, eval_tasks='stsb')
print(trained[trained['main']][['run_id', 'task', 'value']].to_string())"
# a fresh clone's committed stores are still the committed files, and nothing was written into them
test -z "$(git status --porcelain -- results/laptop results/reference)" \
  || { git status --porcelain -- results/laptop results/reference; echo "[first-hour] FAILED: a committed store was written into"; exit 1; }
echo "[first-hour] the README's tour and the getting-started commands ran green in $((SECONDS - start)) s"
