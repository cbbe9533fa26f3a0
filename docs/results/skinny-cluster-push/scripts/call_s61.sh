#!/bin/bash
# Prepared in session 60 for the next call: ../../skinny-y-resident/scripts/call_s58.sh with session 60's kernel cache.
# On an H200: call_s57.sh without its gpu tests (the public bench with the record's command plus the decode probe's
# kernels, then the probe), now with skinny_mma's cluster reduction of commit b226b81. On any other GPU: the whole
# `pytest -m gpu` on this commit, every kernel from the cache. Carry .kc/whl and .kc/s60cache.txz: .kc/s58cache.txz
# plus the skinny_mma kernels of tests/gpu_prebuild.py (221 genomes) and of the record's set, built with b226b81's
# template. LIMIT_S (default 480): the call's limit.
CACHE=.kc/s60cache.txz exec bash docs/results/skinny-y-resident/scripts/call_s58.sh
