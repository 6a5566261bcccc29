#!/bin/bash

HF_MODEL_CKPT=/workspace/scratch/meta-llama/Llama-3.2-1B-Instruct
TP=1
ETP=1
EP=1
PP=1
