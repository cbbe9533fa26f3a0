#!/bin/bash
# Session 62, one device call, two branches. On an H200: the public bench of call1 again, without the gpu tests
# (../../stream-cluster-k/scripts/call_s61c.sh, SKIP_TESTS=1), as a second sample of the record. On any other GPU: the
# whole `pytest -m gpu` on this commit (../../skinny-y-resident/scripts/call_s58.sh's branch for it), cut to what is
# left of LIMIT_S. Carry .kc/whl and .kc/s62b.txz.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 \
  && SKIP_TESTS=1 CACHE=.kc/s62b.txz exec bash docs/results/stream-cluster-k/scripts/call_s61c.sh
CACHE=.kc/s62b.txz exec bash docs/results/skinny-y-resident/scripts/call_s58.sh
