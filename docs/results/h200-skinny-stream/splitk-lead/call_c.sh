#!/bin/bash
# session 35, device call C: sm90_splitk with larger tiles, clusters and more K splits at small-M*N long-K shapes,
# against the public record's kernel (286669bf) and its pdl twin; builds on the device (16 jobs), screen + focus
# timing against torch, and a torch.profiler breakdown of the best two and torch.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
timeout 400 python3 -X faulthandler .kc/s35/screen2.py .kc/s35/sk/genomes0.json /tmp/skcache $OUT/sk.json \
  512x512x16384,640x640x12288,256x1024x8192,512x1024x16384 286669bfac1e2fa2 > $OUT/sk.log 2>&1; echo "python rc=$?"; grep -v -E "Warn|^   run|^   skip" $OUT/sk.log | tail -60; grep "^   skip" $OUT/sk.log | head -5
grep "^   run" $OUT/sk.log | tail -2; echo "rc=$? at $(( $(date +%s) - T0 )) s"
