"""The C ABI's host path (issue 10: initialise once, allocate no workspace per call), on the
rendered source of every seed of every family: the kernel's function attributes and device
queries are made only inside the once-per-device helper `evogemm_host::per_device`, and nothing
calls a CUTLASS `initialize()` or allocates memory. The helper itself is compiled with the host
compiler against stubbed CUDA runtime calls and run from several threads: its set-up runs until it
succeeds once per device, then never again. The launch in thread-block clusters (skinny_mma, stream_wgmma) is
compiled and run the same way: it hands the runtime its configuration, and a failed launch leaves no error for the
next call to read as its own. (The GPU side: tests/test_gpu_abi_host_path.py.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from templates import family_registry, render

FAMILIES = family_registry()
NAMES = ("sm90_cutlass", "sm90_splitk", "sm90_padded", "sm90_lean", "sm80_cutlass", "skinny_mma", "sm90_cpasync",
         "sm90_swapab", "skinny_tma")
# host calls that configure or query the device: allowed only inside a per_device<...>(...) call
ONCE_ONLY = ("cudaFuncSetAttribute", "cudaDeviceGetAttribute", "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
             "cudaGetDeviceProperties", "query_device_multiprocessor_count", "query_device_max_active_clusters")
ALLOCATIONS = ("cudaMalloc", "cudaMallocAsync", "cudaMallocManaged", "cudaHostAlloc", "cudaFree", "malloc(")


def strip_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    return re.sub(r"//[^\n]*", "", source)


def closing_paren(code: str, start: int) -> int:
    """Index of the parenthesis closing the one at `start`."""
    depth = 0
    for i in range(start, len(code)):
        if code[i] == "(":
            depth += 1
        elif code[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"unbalanced parenthesis at {start}")


def once_spans(code: str) -> "list[tuple[int, int]]":
    """The argument lists of the calls of per_device<...>(...) (not its definition)."""
    spans = []
    for m in re.finditer(r"\bper_device\s*<[^;{}()]*>\s*\(", code):
        open_at = m.end() - 1
        spans.append((open_at, closing_paren(code, open_at)))
    return spans


def host_path_violations(source: str) -> "list[str]":
    """What in a rendered kernel would make evogemm_run do per call what it needs once: a CUTLASS
    initialize() (it sets function attributes every time), a device query or attribute call
    outside per_device, an allocation."""
    code = strip_comments(source)
    out = []
    if "int evogemm_run(" not in code:
        out.append("no evogemm_run")
    if not re.search(r"std::atomic<int>\s+state\[", code):
        out.append("per_device keeps no per-device state")
    for m in re.finditer(r"(\.|->|::)\s*initialize\s*\(", code):
        out.append(f"calls initialize() at {m.start()}: {code[max(0, m.start() - 60):m.end()].strip()!r}")
    for m in re.finditer(r"\bGemm\s+\w+\s*[;({]", code):
        out.append(f"constructs a Gemm object at {m.start()}: {m.group(0)!r}")
    spans = once_spans(code)
    for name in ONCE_ONLY:
        for m in re.finditer(r"\b" + re.escape(name) + r"\w*\s*[<(]", code):
            if not any(a < m.start() < b for a, b in spans):
                out.append(f"{name} outside per_device at {m.start()}: {code[max(0, m.start() - 60):m.end()].strip()!r}")
    for name in ALLOCATIONS:
        pattern = r"\b" + re.escape(name) + (r"" if name.endswith("(") else r"\s*[<(]")
        if re.search(pattern, code):
            out.append(f"allocates with {name}")
    return out


@pytest.mark.parametrize("name", NAMES)
def test_every_seed_sets_attributes_once_and_never_initialises_per_call(name):
    fam = FAMILIES.resolve(name)
    seeds = fam.seeds()
    assert seeds
    for seed_name, genome in seeds:
        source = render(genome, FAMILIES).source
        assert host_path_violations(source) == [], (name, seed_name)
        assert "cudaFuncSetAttribute" in strip_comments(source)   # the attributes are still set (once)


def test_the_check_catches_a_per_call_initialize_or_attribute():
    fam = FAMILIES.resolve("sm90_cutlass")
    source = render(fam.seeds()[0][1], FAMILIES).source
    assert host_path_violations(source) == []
    old_run = ("  Gemm gemm;\n  if (gemm.initialize(args, workspace, s) != cutlass::Status::kSuccess) return 3;\n"
               "  if (gemm.run(s) != cutlass::Status::kSuccess) return 4;\n")
    back = source.replace("  const int status = evogemm_host::launch_gemm(", old_run + "  const int status = evogemm_host::launch_gemm(")
    assert back != source
    found = host_path_violations(back)
    assert any("initialize()" in v for v in found) and any("Gemm object" in v for v in found)
    skinny = render(FAMILIES.resolve("skinny_mma").seeds()[0][1], FAMILIES).source
    per_call = skinny.replace("  cudaLaunchConfig_t cfg = {};",
                              "  cudaFuncSetAttribute(skinny_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);\n"
                              "  cudaLaunchConfig_t cfg = {};")
    assert per_call != skinny
    assert any("cudaFuncSetAttribute outside per_device" in v for v in host_path_violations(per_call))
    queried = source.replace("  const int status = evogemm_host::launch_gemm(",
                             "  int sms = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(0);\n"
                             "  const int status = evogemm_host::launch_gemm(")
    assert any("query_device_multiprocessor_count" in v for v in host_path_violations(queried))
    assert any("cudaMalloc" in v for v in host_path_violations(source.replace(
        "  const int status = evogemm_host::launch_gemm(", "  cudaMalloc(&workspace, 1 << 20);\n"
        "  const int status = evogemm_host::launch_gemm(")))


# ---- the helper itself, compiled with the host compiler and run ----------------------------------

DRIVER = r"""
#include <cuda_runtime.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

// stubs of the CUDA runtime calls the helper makes: the current device is per thread
static thread_local int g_device = 0;
static std::atomic<int> g_attribute_calls{0};
cudaError_t cudaGetDevice(int* device) { *device = g_device; return cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr, int device) {
  ++g_attribute_calls;
  *value = 100 + device;
  return cudaSuccess;
}

HELPER

#define CHECK(cond) do { if (!(cond)) { std::printf("FAILED line %d: %s\n", __LINE__, #cond); return 1; } } while (0)

struct ThreadsTag;
struct FlakyTag;
struct DevicesTag;
struct BeyondTag;

int main() {
  using evogemm_host::per_device;
  // several threads on a first call: set-up runs at least once and at most once per racing thread,
  // every caller gets the value, and later calls run nothing
  std::atomic<int> made{0};
  std::atomic<int> wrong{0};
  auto make = [&made](int& v) { ++made; std::this_thread::sleep_for(std::chrono::milliseconds(2)); v = 7; return cudaSuccess; };
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        int v = 0;
        if (per_device<ThreadsTag>(0, v, make) != cudaSuccess || v != 7) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(made >= 1 && made <= 32);   // the racing first calls only, not the 16000 calls
  const int after_threads = made;
  for (int i = 0; i < 1000; ++i) { int v = 0; per_device<ThreadsTag>(0, v, make); CHECK(v == 7); }
  CHECK(made == after_threads);

  // a failed set-up is not remembered: it runs again until it succeeds, then never
  int tries = 0;
  auto flaky = [&tries](int& v) { ++tries; v = 1; return tries < 3 ? cudaErrorInvalidValue : cudaSuccess; };
  int v = 0;
  CHECK(per_device<FlakyTag>(0, v, flaky) == cudaErrorInvalidValue);
  CHECK(per_device<FlakyTag>(0, v, flaky) == cudaErrorInvalidValue);
  CHECK(per_device<FlakyTag>(0, v, flaky) == cudaSuccess);
  for (int i = 0; i < 10; ++i) CHECK(per_device<FlakyTag>(0, v, flaky) == cudaSuccess);
  CHECK(tries == 3);

  // one value per device
  int per_dev_calls = 0;
  for (int round = 0; round < 3; ++round)
    for (int d = 0; d < 4; ++d) {
      int value = -1;
      per_device<DevicesTag>(d, value, [&per_dev_calls, d](int& x) { ++per_dev_calls; x = 10 * d; return cudaSuccess; });
      CHECK(value == 10 * d);
    }
  CHECK(per_dev_calls == 4);

  // a device id outside the table (or none) is served every call, never cached
  int beyond_calls = 0;
  for (int i = 0; i < 5; ++i) {
    int value = 0;
    CHECK(per_device<BeyondTag>(evogemm_host::kMaxDevices, value, [&beyond_calls](int& x) { ++beyond_calls; x = 3; return cudaSuccess; }) == cudaSuccess);
    CHECK(per_device<BeyondTag>(-1, value, [&beyond_calls](int& x) { ++beyond_calls; x = 3; return cudaSuccess; }) == cudaSuccess);
    CHECK(value == 3);
  }
  CHECK(beyond_calls == 10);

#ifdef HAS_SM_COUNT
  // the SM count: asked once per device, whichever thread asks
  g_attribute_calls = 0;
  for (int i = 0; i < 100; ++i) CHECK(evogemm_host::sm_count(evogemm_host::current_device()) == 100);
  std::thread other([] { g_device = 3; for (int i = 0; i < 100; ++i) if (evogemm_host::sm_count(evogemm_host::current_device()) != 103) std::abort(); });
  other.join();
  CHECK(g_attribute_calls == 2);
#endif
  std::printf("OK\n");
  return 0;
}
"""


def cuda_include_dir() -> "Path | None":
    candidates = []
    nvcc = os.environ.get("EVOGEMM_NVCC") or shutil.which("nvcc")
    if nvcc:
        candidates.append(Path(nvcc).resolve().parent.parent / "include")
    if os.environ.get("CUDA_HOME"):
        candidates.append(Path(os.environ["CUDA_HOME"]) / "include")
    candidates.append(Path("/usr/local/cuda/include"))
    return next((c for c in candidates if (c / "cuda_runtime.h").exists()), None)


def helper_section(source: str) -> str:
    """The once-per-device helper as rendered: from its heading comment to the end of the first
    evogemm_host namespace (with the header it needs)."""
    start = source.index("// ---- host-side state of the C ABI")
    end = source.index("}  // namespace evogemm_host\n", start) + len("}  // namespace evogemm_host\n")
    return "#include <atomic>\n" + source[start:end]


def test_the_once_per_device_helper_runs_its_setup_once_per_device_from_many_threads(tmp_path):
    cxx = shutil.which("g++") or shutil.which("c++")
    include = cuda_include_dir()
    if not cxx or include is None:
        pytest.skip("needs a host C++ compiler and the CUDA runtime headers")
    helpers = {}
    for name in ("sm90_cutlass", "sm80_cutlass", "skinny_mma"):   # every other family extends sm90_cutlass
        helpers.setdefault(helper_section(render(FAMILIES.resolve(name).seeds()[0][1], FAMILIES).source), name)
    for helper, name in helpers.items():
        src = tmp_path / f"{name}.cpp"
        src.write_text(DRIVER.replace("HELPER", helper))
        exe = tmp_path / name
        flags = ["-std=c++17", "-O1", "-pthread", f"-I{include}"]
        if "int sm_count(int device)" in helper:
            flags.append("-DHAS_SM_COUNT")
        build = subprocess.run([cxx, *flags, str(src), "-o", str(exe)], capture_output=True, text=True, timeout=120)
        assert build.returncode == 0, build.stderr[-3000:]
        run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0 and run.stdout.strip() == "OK", (name, run.stdout, run.stderr)


# ---- the launch in clusters (skinny_mma, stream_wgmma with cluster_k), compiled with the host compiler and run ----

LAUNCH_DRIVER = r"""
#include <cuda_runtime.h>
#include <cstdio>

// stubs: the launch records what it was given and fails when told to, setting the thread's last error as the
// runtime does; cudaGetLastError reads and clears it
static cudaError_t g_last = cudaSuccess;
static cudaError_t g_fail_with = cudaSuccess;
static int g_launches = 0;
static dim3 g_grid, g_block;
static size_t g_smem = 0;
static cudaStream_t g_stream = nullptr;
static unsigned g_cluster[3] = {0, 0, 0};
static unsigned g_attrs = 0;
static const void* g_func = nullptr;
static int g_int = 0;
static const float* g_ptr = nullptr;
extern "C" cudaError_t CUDARTAPI cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  ++g_launches;
  g_grid = config->gridDim; g_block = config->blockDim; g_smem = config->dynamicSmemBytes; g_stream = config->stream;
  g_attrs = config->numAttrs;
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id == cudaLaunchAttributeClusterDimension) {
      g_cluster[0] = config->attrs[i].val.clusterDim.x; g_cluster[1] = config->attrs[i].val.clusterDim.y;
      g_cluster[2] = config->attrs[i].val.clusterDim.z;
    }
  g_func = func;
  g_int = *static_cast<int*>(args[0]);
  g_ptr = *static_cast<const float**>(args[1]);
  if (g_fail_with != cudaSuccess) g_last = g_fail_with;
  return g_fail_with;
}
extern "C" cudaError_t CUDARTAPI cudaGetLastError(void) { const cudaError_t e = g_last; g_last = cudaSuccess; return e; }

namespace evogemm_host {
namespace {
HELPER
}  // namespace
}  // namespace evogemm_host

void kernel(int, const float*) {}

#define CHECK(cond) do { if (!(cond)) { std::printf("FAILED line %d: %s\n", __LINE__, #cond); return 1; } } while (0)

int main() {
  const float data[2] = {1.f, 2.f};
  const cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x1234);
  // a launch in clusters of 4: the grid, block, shared memory, stream, cluster and arguments reach the runtime
  CHECK(evogemm_host::launch_in_clusters(kernel, dim3(12, 3, 1), 384, 100000, 4, stream, 7, data) == 0);
  CHECK(g_launches == 1 && g_grid.x == 12 && g_grid.y == 3 && g_grid.z == 1 && g_block.x == 384 && g_block.y == 1);
  CHECK(g_smem == 100000 && g_stream == stream && g_attrs == 1);
  CHECK(g_cluster[0] == 4 && g_cluster[1] == 1 && g_cluster[2] == 1);
  CHECK(g_func == reinterpret_cast<const void*>(&kernel) && g_int == 7 && g_ptr == data);
  // a failed launch returns 4 and leaves no error behind for the next call to read as its own
  g_fail_with = cudaErrorLaunchOutOfResources;
  CHECK(evogemm_host::launch_in_clusters(kernel, dim3(8, 1, 1), 128, 0, 8, stream, 1, data) == 4);
  CHECK(g_launches == 2 && g_cluster[0] == 8);
  CHECK(g_last == cudaSuccess);
  g_fail_with = cudaSuccess;
  CHECK(evogemm_host::launch_in_clusters(kernel, dim3(8, 1, 1), 128, 0, 1, stream, 2, data) == 0);
  CHECK(g_last == cudaSuccess && g_cluster[0] == 1 && g_int == 2);
  std::printf("OK\n");
  return 0;
}
"""


def launch_section(source: str) -> str:
    """The launch in clusters as rendered, from its heading comment to its closing one."""
    start = source.index("// ---- a launch in clusters")
    end = source.index("// ---- end of the launch in clusters ----", start)
    return source[start:end]


def test_the_launch_in_clusters_passes_its_configuration_and_clears_a_failure(tmp_path):
    cxx = shutil.which("g++") or shutil.which("c++")
    include = cuda_include_dir()
    if not cxx or include is None:
        pytest.skip("needs a host C++ compiler and the CUDA runtime headers")
    cluster_stream = next(g for _, g in FAMILIES.resolve("stream_wgmma").seeds() if g.get("cluster_k", 1) > 1)
    sections = {launch_section(render(g, FAMILIES).source)
                for g in (FAMILIES.resolve("skinny_mma").seeds()[0][1], cluster_stream)}
    assert len(sections) == 1   # both families launch through the one helper
    plain_stream = next(g for _, g in FAMILIES.resolve("stream_wgmma").seeds() if g.get("cluster_k", 1) == 1)
    assert "launch_in_clusters" not in render(plain_stream, FAMILIES).source   # unchanged without a cluster
    src = tmp_path / "launch.cpp"
    src.write_text(LAUNCH_DRIVER.replace("HELPER", sections.pop()))
    exe = tmp_path / "launch"
    build = subprocess.run([cxx, "-std=c++17", "-O1", f"-I{include}", str(src), "-o", str(exe)],
                           capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr[-3000:]
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "OK", (run.stdout, run.stderr)
