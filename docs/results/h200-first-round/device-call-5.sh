#!/bin/bash
# (call 5: as call 4, with the cut applied to every round, its built genomes measured (162dc7a); call 6: the
# same on the final tree (the build-time prior: this session's builds, then this host's, then carried ones);
# each call's files are kept as callN-*)
# device calls 3 and 4 (nvidia-h200, one GPU), session 23: campaign.yaml here (the four-shape, 60 s campaign of
# ../h200-build-rounds) on the tree with the first-round cut; only the first shape's first-round kernels
# are carried prebuilt, so every later shape's first round holds seeds that need nvcc (a cold cache but
# for what the campaign built itself). Then the same folder resumed: it must measure nothing again.
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/s23/c3/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
mkdir -p /tmp/kc $OUT/res; xz -dc .kc/s23/c3/fr.txz | tar xf - -C /tmp/kc; find /tmp/kc -name kernel.so | wc -l
timeout -s INT -k 15 150 python -m experiments.cli run docs/results/h200-first-round/campaign.yaml --out $OUT/res/camp \
    --no-live > $OUT/res/run.log 2>&1
echo "campaign rc=$? at $(( $(date +%s) - T0 )) s"
grep -E "done \(|waits on nvcc|left out|first round" $OUT/res/camp/campaign.log | cut -c1-240
timeout -s INT -k 15 60 python -m experiments.cli resume $OUT/res/camp --no-live > $OUT/res/resume.log 2>&1
echo "resume rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 4 $OUT/res/camp/campaign.log | cut -c1-200
rm -f $OUT/res/camp/campaign.db-shm
