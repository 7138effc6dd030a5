#!/usr/bin/env bash
# The GPU figures in one prepared run: the CUDA tests (they skip without CUDA elsewhere), then the
# trial engine's step and whole-trial benchmarks and the fused packs on the GPU. Every output goes
# to $OUT (the folder that comes back from a lent GPU machine), or ./benchmarks/out when unset.
#
#     bash benchmarks/device_figures.sh
#
# It needs only torch, numpy and pytest (the numerics, not Ray or the store), so it runs on a GPU
# machine whose Python holds torch but not the project's other dependencies (the coordinate check's
# tests read the store's schema, which imports DuckDB: they are left out).
# FIGURES="step whole fused" (the default) chooses the parts; FUSED_TABLES="1 2 3" the fused tables.
set -u
cd "$(dirname "$0")/.."
out="${OUT:-benchmarks/out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:$PWD/benchmarks${PYTHONPATH:+:$PYTHONPATH}"
{ date -u; nvidia-smi -L; python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"; } \
    2>&1 | tee "$out/device.txt"
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/trials -k cuda \
    --ignore tests/trials/test_coordcheck.py 2>&1 | tail -n 15 | tee "$out/cuda_tests.txt"
figures="${FIGURES:-step whole fused}"
case " $figures " in *" step "*)
    timeout 120 python3 benchmarks/trials_step.py --device cuda --repeats 3 --no-naive \
        --json "$out/step.json" > "$out/step.txt" 2>&1 ;; esac
case " $figures " in *" whole "*)
    timeout 240 python3 benchmarks/trials_step.py --device cuda --whole --steps 10 50 --repeats 3 \
        --json "$out/whole.json" > "$out/whole.txt" 2>&1 ;; esac
case " $figures " in *" fused "*)
    timeout 300 python3 benchmarks/fused_throughput.py --device cuda --repeats 2 --tables ${FUSED_TABLES:-1 2 3} \
        --json "$out/fused.json" > "$out/fused.txt" 2>&1 ;; esac
echo "outputs in $out"
