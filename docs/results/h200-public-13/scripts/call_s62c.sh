#!/bin/bash
# Session 62, one device call, two branches. On an H200: the public bench of call1 again, without the gpu tests
# (../../stream-cluster-k/scripts/call_s61c.sh, SKIP_TESTS=1), as a second sample of the record, with
# ../kernels/decode-neighbours added (bedab432's neighbourhood at the two M = 16 shapes, scripts/make_decode_neighbours.py).
# On any other GPU: the whole `pytest -m gpu` on this commit (../../skinny-y-resident/scripts/call_s58.sh's branch for
# it), cut to what is left of LIMIT_S; give it 560 (session 62's whole run did not finish in 475 s). Carry .kc/whl and
# .kc/s62c.txz (.kc/s62b.txz with the neighbours' builds added). When the results folders are set aside for the call,
# copy this folder back in.
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 \
  && SKIP_TESTS=1 CACHE=.kc/s62c.txz EXTRA_KERNELS=docs/results/h200-public-13/kernels/decode-neighbours \
     exec bash docs/results/stream-cluster-k/scripts/call_s61c.sh
CACHE=.kc/s62c.txz exec bash docs/results/skinny-y-resident/scripts/call_s58.sh
