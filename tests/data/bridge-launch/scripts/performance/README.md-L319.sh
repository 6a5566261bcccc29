# Llama 3 70B — deterministic, H100 64-GPU
python scripts/performance/setup_experiment.py \
  --account <account> --partition <partition> \
  --gpu h100 -m llama3 -s 70b -ng 64 -gn 8 \
  --container_image <image> --task pretrain \
  --deterministic

# Llama 3.1 405B — deterministic, H100 512-GPU
python scripts/performance/setup_experiment.py \
  --account <account> --partition <partition> \
  --gpu h100 -m llama31 -s 405b -ng 512 -gn 8 \
  --container_image <image> --task pretrain \
  --deterministic
