CONTAINER="nvcr.io/nvidia/nemo:26.04"
MBRIDGE_PATH="</path/to/mbridge>"

JOB_NAME="dsv3_gb300"
RESULTS_DIR="${MBRIDGE_PATH}/results/${JOB_NAME}"

uv run python scripts/performance/setup_experiment.py \
  --account <slurm_account> \
  -i ${CONTAINER} \
  --partition <slurm_partition> \
  -m deepseek \
  -mr deepseek_v3 \
  --log_dir ${RESULTS_DIR} \
  --num_gpus 256 \
  --gpus_per_node 4 \
  -t "00:15:00" \
  -g gb300 \ 
  -c fp8_mx \
  -hf <HF_TOKEN>
