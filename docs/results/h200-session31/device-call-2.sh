#!/bin/bash
# device call 2 (nvidia-h200), session 31: the LLM tests on the H200, where torch and transformers are
# installed (the transformers provider with a tiny model built inside the test; the CPU machine has no torch).
set -u
T0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .kc/whl/*.whl || exit 9
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 EVOGEMM_CACHE=/tmp/kc
R=$OUT/res; mkdir -p $R /tmp/kc; cat .kc/s31/HEAD
python -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, torch.cuda.get_device_name(0))"
timeout 400 python -m pytest -q -rs tests/test_llm_transformers.py tests/test_llm_operators.py tests/test_llm_engine.py > $R/pytest-llm.log 2>&1
echo "pytest rc=$? at $(( $(date +%s) - T0 )) s"; tail -n 4 $R/pytest-llm.log
cd $OUT && tar czf res.tgz res && rm -rf res
