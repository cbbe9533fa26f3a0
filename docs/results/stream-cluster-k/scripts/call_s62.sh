#!/bin/bash
# Prepared in session 61 for the next device call (carry .kc/whl and .kc/s62cache.txz, 19.2 MB: every kernel of the
# record's public bench, of ../kernels/screen and of tests/gpu_prebuild.py, built on the CPU machine at commit
# 608026c). On an H200: call_s61c.sh (stream_wgmma's gpu tests, then the public bench with the record's command plus
# the screen), which would measure session 60's skinny_mma and session 61's stream_wgmma clusters there. On any other
# GPU: the whole `pytest -m gpu` (../../skinny-y-resident/scripts/call_s58.sh's branch for it), its first run with
# the stream_wgmma cluster seeds and the launch's error path of 608026c. LIMIT_S (default 480; the whole gpu suite
# took 449 s on an H100 in session 61, so give it 560).
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 \
  && CACHE=.kc/s62cache.txz exec bash docs/results/stream-cluster-k/scripts/call_s61c.sh
CACHE=.kc/s62cache.txz exec bash docs/results/skinny-y-resident/scripts/call_s58.sh
