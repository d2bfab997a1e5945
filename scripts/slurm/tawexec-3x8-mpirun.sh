#!/bin/bash
# mpirun example: the same run as tawexec-3x8.sbatch on 3 nodes x 8 GPUs without Slurm (Open MPI).
#   scripts/slurm/tawexec-3x8-mpirun.sh node1,node2,node3 [METHOD]
# One process per GPU, placed by node (ranks 0-7 on node1, ...), which is the placement the
# 3x8-a100 topology's rank -> GPU map assumes; tawexec takes its GPU from
# OMPI_COMM_WORLD_LOCAL_RANK. NCCL picks the IB NICs itself; export NCCL_* settings on the
# command line (-x) if your fabric needs them (e.g. NCCL_SOCKET_IFNAME, NCCL_IB_HCA).
set -euo pipefail
HOSTS=${1:?usage: $0 host1,host2,host3 [METHOD]}
METHOD=${2:-tawpipe}
BUILD=${BUILD:-build}
OUT=${OUT:-validate-mpirun}
mkdir -p "$OUT"
hosts=$(echo "$HOSTS" | sed 's/\([^,]*\)/\1:8/g')
launch=(mpirun -np 24 --host "$hosts" --map-by ppr:8:node --bind-to none
        -x NCCL_DEBUG=WARN -x LD_LIBRARY_PATH)
workload=(--topology 3x8-a100 --model llama-h4096-l48 --seq-len 4096 --schedule "$METHOD"
          --micro-batches 8 --set train.compute_dtype=bf16
          --set train.recompute=full)

"${launch[@]}" "$BUILD/exec/tawexec" calibrate --backend cuda --topology 3x8-a100 \
  --model llama-h4096-l48 --seq-len 4096 --output "$OUT/profile.yaml"
"$BUILD/sim/tawsim" "${workload[@]}" --profile "$OUT/profile.yaml" --report "$OUT/predicted.json"
"${launch[@]}" "$BUILD/exec/tawexec" --backend cuda "${workload[@]}" --warmup 1 --steps 5 \
  --timeout 300 --report "$OUT/measured.json" --trace "$OUT/measured.trace.json"
"$BUILD/sim/tawsim" compare "$OUT/predicted.json" "$OUT/measured.json"
