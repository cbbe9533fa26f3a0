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


class Cuda:
    """Streams, events and graphs through cuda-python's runtime bindings."""

    def __init__(self) -> None:
        rt = _rt()
        self.rt = rt
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

    def capture(self, enqueue: Callable[[], None]):
        """Capture everything `enqueue` puts on the stream into an instantiated graph. On failure
        the capture is ended and a graph already made is destroyed before the error propagates."""
        rt = self.rt
        _ok(rt.cudaStreamBeginCapture(self.stream, rt.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed),
            "cudaStreamBeginCapture")
        try:
            enqueue()
        except BaseException:
            # always end the capture; an error ending it replaces enqueue's error (a sticky one
            # must become a KernelFault)
            graph = _ok(rt.cudaStreamEndCapture(self.stream), "cudaStreamEndCapture")
            rt.cudaGraphDestroy(graph)
            raise
        graph = _ok(rt.cudaStreamEndCapture(self.stream), "cudaStreamEndCapture")
        try:
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
