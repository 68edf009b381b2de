#!/usr/bin/env bash
# Speed of the structured study's students (docs/studies/structured_kd_cpu.md): export the seed-1
# distilled CE student of every sparsity shrunk (all students of one sparsity share its shape), then
# time them against the dense model with `srnet bench` at 1 and 2 threads (run on idle cores).
#   bash benchmarks/structured_kd_bench.sh runs/structured_kd_cpu results/structured_kd_cpu
set -euo pipefail
sweep=${1:?sweep folder}; out=${2:?results folder}
mkdir -p "$sweep/shrunk" "$out"
pick() {  # the run folder of a stage with seed 1 (and, for students, sparsity $2 with distillation)
  python - "$sweep" "$1" "${2:-}" <<'PY'
import glob, sys, yaml
sweep, stage, sparsity = sys.argv[1:]
for config in sorted(glob.glob(f"{sweep}/{stage}/*/config.yaml")):
    recipe = yaml.safe_load(open(config))
    params = (recipe.get("objective") or {}).get("params") or {}
    if recipe["seed"] == 1 and (not sparsity or (abs(recipe["pruning"]["sparsity"] - float(sparsity)) < 1e-9
                                                 and params.get("pred_weight") == 1.0)):
        print(config.rsplit("/", 1)[0])
        break
PY
}
models=()
for sparsity in 0.3 0.5 0.7; do
  export_dir="$sweep/shrunk/shrunk_$(python -c "print(round($sparsity * 100))")"
  [ -d "$export_dir" ] || srnet export --masks "$(pick omp_ce $sparsity)" --shrink --out "$export_dir"
  models+=("$export_dir")
done
for threads in 1 2; do
  srnet bench "$(pick ft)" "${models[@]}" --batch-sizes 1 32 --lengths 128 --threads "$threads" --rounds 7 \
    --markdown --out "$out/bench_t$threads.json"
done
