#!/bin/bash
# Shrink every structured subnetwork of a structured_cpu sweep and time them against the dense
# CE model with `srnet bench` (batch 1 and 32, length 128, interleaved), writing
# <sweep>/shrunk/<stage>_<key>/ and <sweep>/bench.json. Run it on otherwise idle cores.
#   benchmarks/structured_study.sh runs/structured_cpu [--threads 2]
set -euo pipefail
sweep=${1:?usage: structured_study.sh SWEEP_DIR [srnet bench flags]}
shift
srnet=${SRNET:-srnet}
models=("$(ls -d "$sweep"/ft_ce/*/ | head -1)")
for run in "$sweep"/omp/*/ "$sweep"/recover/*/; do
    [ -f "$run/metrics.json" ] || continue
    stage=$(basename "$(dirname "$run")"); key=$(basename "$run")
    # the retrained ticket's mask file is its search run's group gates
    masks=$(python3 -c "import sys,yaml; c=yaml.safe_load(open(sys.argv[1])); print(c['pruning'].get('mask_file') or sys.argv[2])" \
        "$run/config.yaml" "$run/masks.safetensors")
    out="$sweep/shrunk/${stage}_${key}"
    [ -d "$out" ] || $srnet export --model "$run" --masks "$masks" --out "$out" --shrink
    models+=("$out")
done
models+=("$(ls -d "$sweep"/unstructured/*/ | head -1)")
$srnet bench "${models[@]}" --batch-sizes 1 32 --lengths 128 --rounds 7 --warmup 2 --markdown \
    --out "$sweep/bench.json" "$@"
