"""`python -m <package>`: verify the kernels on this machine and print what each shape runs."""

import json
import sys

import torch

from . import DISPATCH, load, provenance


def main() -> int:
    prov = provenance()
    print(f"{__package__}: {len(DISPATCH.entries)} dispatched shape(s), exported {prov.get('date')} "
          f"from {', '.join(prov.get('campaigns', [])) or '-'}")
    if not torch.cuda.is_available():
        print("no CUDA device: the kernels cannot be verified here; hgemm falls back to torch.matmul")
        return 1
    report = load(range(torch.cuda.device_count()))
    for index, result in report.items():
        print(f"cuda:{index} ({torch.cuda.get_device_name(index)}): serves {len(result['served'])}, "
              f"dropped {len(result['dropped'])}")
        for shape in result["served"]:
            print(f"  {shape}: verified, evolved kernel")
        for shape, why in result["dropped"].items():
            print(f"  {shape}: falls back to torch.matmul ({why})")
    if "--json" in sys.argv:
        print(json.dumps(report, indent=1))
    return 0 if all(not r["dropped"] for r in report.values()) else 2


if __name__ == "__main__":
    sys.exit(main())
