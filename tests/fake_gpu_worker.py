"""A stand-in for evaluator.gpu_worker that speaks its protocol without a GPU (for CPU tests).

Kernel ids decide the behaviour: 'crash*' kills the process, 'hang*' goes silent forever,
'fault*' reports a sticky fault and exits, anything else gets a fake timing.
"""

import json
import os
import sys
import time


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main():
    send({"type": "ready", "info": {"device": "fake"}, "pid": os.getpid()})
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("op") == "exit":
            return 0
        kernels = {}
        for spec in req["kernels"]:
            kid = spec["id"]
            send({"type": "running", "id": kid, "phase": "gate"})
            if kid.startswith("crash"):
                os._exit(1)
            if kid.startswith("hang"):
                time.sleep(3600)
            if kid.startswith("fault"):
                send({"type": "fault", "error": f"{kid}: wrote outside C (canary band overwritten)"})
                return 4
            t = float(len(kid))
            kernels[kid] = {"status": "ok", "rel_error": 2e-4,
                            "device": {"median_us": t, "min_us": t, "max_us": t, "repeats": 3}}
        send({"type": "result", "problem": req["problem"], "kernels": kernels, "baselines": {},
              "gpu_seconds": 0.01, "info": {"device": "fake"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
