"""The GPU worker's CUDA runtime calls (cuda-python): streams, events, graph capture and replay,
one gated launch; and KernelFault, the error after which the worker process must end.

cuda-python is imported on first use only, so importing this module needs no GPU.
"""

from __future__ import annotations

from typing import Callable


class KernelFault(Exception):
    """A sticky CUDA error or memory corruption: this process must end after reporting it."""


def _rt():
    from cuda.bindings import runtime
    return runtime


def _ok(result, what: str):
    """Unpack a cuda-python return tuple, raising on error."""
    rt = _rt()
    err = result[0] if isinstance(result, tuple) else result
    if err != rt.cudaError_t.cudaSuccess:
        name = getattr(err, "name", str(err))
        raise KernelFault(f"{what}: {name}") if _sticky(err) else RuntimeError(f"{what}: {name}")
    if isinstance(result, tuple):
        return result[1] if len(result) == 2 else result[1:]
    return None


def _sticky(err) -> bool:
    name = getattr(err, "name", "")
    return any(s in name for s in ("IllegalAddress", "LaunchFailure", "MisalignedAddress", "IllegalInstruction",
                                   "HardwareStackError", "InvalidPc", "Assert", "ECCUncorrectable",
                                   "LaunchTimeout", "Unknown"))


def _with_edge_data(rt, name: str, suffix: str):
    """The runtime call `name` in the form that takes or returns edge data: CUDA 13's bindings have it under
    its own name, CUDA 12's as `name + suffix` (cudaGraphGetEdges_v2, cudaStreamGetCaptureInfo_v3)."""
    return getattr(rt, name + suffix, None) or getattr(rt, name)


def graph_edges(rt, graph) -> "tuple[list, list, list]":
    """Every edge of `graph`: its from-nodes, to-nodes and edge data, index by index."""
    get_edges = _with_edge_data(rt, "cudaGraphGetEdges", "_v2")
    _, _, _, count = _ok(get_edges(graph), "cudaGraphGetEdges")
    if not count:
        return [], [], []
    frm, to, data, count = _ok(get_edges(graph, count), "cudaGraphGetEdges")
    return list(frm[:count]), list(to[:count]), list(data[:count])


def full_dependencies(rt, graph, tails: "set[int]") -> int:
    """Turn every programmatic edge of `graph` that leaves a node of `tails` into a full dependency and return
    how many there were.

    A kernel launched as a programmatic dependent launch (cudaLaunchAttributeProgrammaticStreamSerialization)
    is captured with such an edge to the launch before it: it may start while that launch's last CTAs still
    run. Back to back in a timing graph, the launch before a call's first kernel is the last kernel of the
    same candidate's previous call, so its device time would include an overlap with itself that no foreign
    kernel before it gives (measured on the H200: CUTLASS kernels launched so were 6% faster back to back over
    17 public shapes, and up to 0.2 us slower after a cuBLAS GEMM or an elementwise op; docs/results/h200-gemm-pdl).
    `tails` are the last nodes of every call: edges from them become full, so each call starts after the
    previous one has completed, as after any other kernel. The edges inside one call (a GEMM and its own
    reduction launched as a dependent launch, in our split-K kernels and in cuBLAS's) stay as they are."""
    default = rt.cudaGraphDependencyType.cudaGraphDependencyTypeDefault
    port = rt.cudaGraphKernelNodePortDefault
    frm, to, data = graph_edges(rt, graph)
    partial = [i for i in range(len(frm))
               if int(frm[i]) in tails and (data[i].type != default or data[i].from_port != port)]
    if partial:
        edges = ([frm[i] for i in partial], [to[i] for i in partial])
        remove = _with_edge_data(rt, "cudaGraphRemoveDependencies", "_v2")
        _ok(remove(graph, *edges, [data[i] for i in partial], len(partial)), "cudaGraphRemoveDependencies")
        add = _with_edge_data(rt, "cudaGraphAddDependencies", "_v2")
        _ok(add(graph, *edges, None, len(partial)), "cudaGraphAddDependencies")
    return len(partial)


def capture_calls(rt, stream, call: Callable[[int], None], calls: int) -> "set[int]":
    """Run call(0) .. call(calls - 1) on the capturing `stream` and return every call's last node(s) (the nodes
    the next launch would depend on): the `tails` of full_dependencies."""
    info = _with_edge_data(rt, "cudaStreamGetCaptureInfo", "_v3")
    tails: set[int] = set()
    for i in range(calls):
        call(i)
        _, _, _, deps, _, n = _ok(info(stream), "cudaStreamGetCaptureInfo")
        tails.update(int(node) for node in deps[:n])
    return tails


class Cuda:
    """Streams, events and graphs through cuda-python's runtime bindings."""

    def __init__(self) -> None:
        rt = _rt()
        self.rt = rt
        self.edges_made_full = 0  # programmatic edges the captures turned into full ones (full_dependencies)
        self.stream = _ok(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking), "cudaStreamCreate")
        self.start = _ok(rt.cudaEventCreate(), "cudaEventCreate")
        self.end = _ok(rt.cudaEventCreate(), "cudaEventCreate")
        self.gate_stream = _ok(rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking), "cudaStreamCreate")

    @property
    def stream_ptr(self) -> int:
        return int(self.stream)

    def sync(self, what: str = "cudaStreamSynchronize") -> None:
        _ok(self.rt.cudaStreamSynchronize(self.stream), what)
        _ok(self.rt.cudaGetLastError(), what + " (last error)")

    def capture(self, call: Callable[[int], None], calls: int):
        """Capture `calls` calls (call(0), call(1), ...) on the stream into an instantiated graph in which
        every call starts after the previous one has completed (full_dependencies). On failure the capture
        is ended and a graph already made is destroyed before the error propagates."""
        rt = self.rt
        _ok(rt.cudaStreamBeginCapture(self.stream, rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed),
            "cudaStreamBeginCapture")
        try:
            tails = capture_calls(rt, self.stream, call, calls)
        except BaseException:
            # always end the capture; an error ending it replaces call's error (a sticky one
            # must become a KernelFault)
            graph = _ok(rt.cudaStreamEndCapture(self.stream), "cudaStreamEndCapture")
            rt.cudaGraphDestroy(graph)
            raise
        graph = _ok(rt.cudaStreamEndCapture(self.stream), "cudaStreamEndCapture")
        try:
            self.edges_made_full += full_dependencies(rt, graph, tails)
            exe = _ok(rt.cudaGraphInstantiate(graph, 0), "cudaGraphInstantiate")
        except BaseException:
            rt.cudaGraphDestroy(graph)
            raise
        return graph, exe

    def replay_ms(self, exe) -> float:
        rt = self.rt
        _ok(rt.cudaEventRecord(self.start, self.stream), "cudaEventRecord")
        _ok(rt.cudaGraphLaunch(exe, self.stream), "cudaGraphLaunch")
        _ok(rt.cudaEventRecord(self.end, self.stream), "cudaEventRecord")
        _ok(rt.cudaEventSynchronize(self.end), "cudaEventSynchronize")
        _ok(rt.cudaGetLastError(), "graph replay")
        return float(_ok(rt.cudaEventElapsedTime(self.start, self.end), "cudaEventElapsedTime"))

    def timed_once_ms(self, enqueue: Callable[[], None]) -> float:
        rt = self.rt
        _ok(rt.cudaEventRecord(self.start, self.stream), "cudaEventRecord")
        enqueue()
        _ok(rt.cudaEventRecord(self.end, self.stream), "cudaEventRecord")
        _ok(rt.cudaEventSynchronize(self.end), "cudaEventSynchronize")
        _ok(rt.cudaGetLastError(), "launch")
        return float(_ok(rt.cudaEventElapsedTime(self.start, self.end), "cudaEventElapsedTime"))

    def gated_once_ms(self, enqueue: Callable[[], None], flag_ptr: int) -> "tuple[float, bool]":
        """Device time of one launch with host launch cost kept out: the stream first waits on a
        device flag, the events and the launch queue up behind it, then a second stream releases
        the flag. Returns (ms, gated); gated is False where stream memory operations are missing
        and the plain event timing (which includes the launch cost) was used."""
        if self.gate_stream is None:
            return self.timed_once_ms(enqueue), False
        from cuda.bindings import driver
        rt = self.rt
        stream = driver.CUstream(int(self.stream))
        err, = driver.cuStreamWaitValue32(stream, driver.CUdeviceptr(flag_ptr), 1,
                                         driver.CUstreamWaitValue_flags.CU_STREAM_WAIT_VALUE_GEQ)
        if err != driver.CUresult.CUDA_SUCCESS:
            self.gate_stream = None
            return self.timed_once_ms(enqueue), False
        try:
            _ok(rt.cudaEventRecord(self.start, self.stream), "cudaEventRecord")
            enqueue()
            _ok(rt.cudaEventRecord(self.end, self.stream), "cudaEventRecord")
        finally:  # never leave the stream blocked on the flag
            err, = driver.cuStreamWriteValue32(driver.CUstream(int(self.gate_stream)), driver.CUdeviceptr(flag_ptr),
                                               1, 0)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuStreamWriteValue32: {err.name}")
        _ok(rt.cudaEventSynchronize(self.end), "cudaEventSynchronize")
        _ok(rt.cudaGetLastError(), "launch")
        return float(_ok(rt.cudaEventElapsedTime(self.start, self.end), "cudaEventElapsedTime")), True

    def destroy_graph(self, graph, exe) -> None:
        self.rt.cudaGraphExecDestroy(exe)
        self.rt.cudaGraphDestroy(graph)
