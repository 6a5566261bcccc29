#!/usr/bin/env bash
# Copyright (c) 2026, NVIDIA CORPORATION.  All rights reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Workspace directory for checkpoints and results
WORKSPACE=${WORKSPACE:-/workspace}

# Import HF → Megatron (base model)
./scripts/conversion/convert.sh import \
    --hf-model google/gemma-4-26B-A4B \
    --megatron-path ${WORKSPACE}/models/gemma-4-26B-A4B

# Import HF → Megatron (instruction-tuned model, needed for inference.sh step 3)
./scripts/conversion/convert.sh import \
    --hf-model google/gemma-4-26B-A4B-it \
    --megatron-path ${WORKSPACE}/models/gemma-4-26B-A4B-it

# Export Megatron → HF
./scripts/conversion/convert.sh export \
    --hf-model google/gemma-4-26B-A4B \
    --megatron-path ${WORKSPACE}/models/gemma-4-26B-A4B/iter_0000000 \
    --hf-path ${WORKSPACE}/models/gemma-4-26B-A4B-hf-export

# Round-trip validation (multi-GPU)
uv run --no-sync python -m torch.distributed.run --nproc_per_node=8 examples/conversion/hf_megatron_roundtrip_multi_gpu.py \
      --hf-model-id google/gemma-4-26B-A4B --tp 2 --pp 2
