#!/bin/bash
# Starts a Ray worker that joins the training job's head node. gpufleet
# renders this file for each node; the cluster password comes from the
# RAY_PASSWORD secret (GPUFLEET_SECRET_RAY_PASSWORD when the node launches).
set -euo pipefail
export RAY_REDIS_PASSWORD='{{secret "RAY_PASSWORD"}}'
ray start --address=ray-head.training.internal.example.com:6379 \
  --resources='{"{{.InstanceType}}": 1}' \
  --labels='{"cloud": "{{.Cloud}}", "region": "{{.Region}}", "zone": "{{.Zone}}"}' \
  --block
