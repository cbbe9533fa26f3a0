"""The name lists and allowlists of the patch screen (`llm_mutators.safety`).

Where a list can be closed, it is an allowlist: the CUDA runtime and driver functions a patch may
call (`CUDA_API`), the compiler builtins (`BUILTINS`) and the attributes (`ATTRIBUTES`) it may use.
The C library's functions cannot be listed that way (a patch may call none of them, but it may name
variables and members as it likes), so they are a denylist of names, by rule. `check_allowlists`
applies the closed lists to a patch's text.
"""

from __future__ import annotations

import re
from typing import Callable

from .cpp_scan import matching_parens

# Library functions, by rule. Those of NAMES are refused wherever they appear as a name (`(system)(..)`,
# `&system`, `#define RUN system`, `.system` after a `#define D .`); those of CALLED, common words also
# used as variables (`read`, `signal`, CuTe's `remove<1>(...)`), where called or addressed, or named
# from the global scope (`::remove`), unless a member or qualified by a scope written on the same line.
NAMES = {
    "allocation": "malloc calloc realloc reallocarray free aligned_alloc posix_memalign valloc pvalloc memalign mmap "
                  "mmap64 munmap mremap sbrk brk strdup strndup __libc_malloc alloca asprintf vasprintf wcsdup "
                  "get_temporary_buffer",
    "threads": "thrd_create thrd_detach thrd_join __gthread_create timer_create",
    "file-io": "fopen fopen64 freopen freopen64 fdopen fclose fread fwrite fprintf fscanf fputs fgets fputc fgetc putc "
               "getc fseek ftell fflush dprintf open64 openat openat64 __open_2 creat creat64 pread64 pwrite64 readv "
               "writev unlink unlinkat renameat mkdir rmdir chmod chown opendir readdir ftruncate sendfile ioctl "
               "fcntl dup2 dup3 tmpfile tmpfile64 tmpnam tmpnam_r tempnam mkstemp mkostemp mkdtemp open_memstream "
               "realpath stdout stderr stdin __has_include __has_include_next",
    "print": "printf vprintf sprintf snprintf vsnprintf vfprintf puts putchar perror scanf sscanf getchar gets "
             "wprintf vwprintf putwchar",
    "process": "system popen pclose execl execle execlp execv execve execvp execvpe fexecve fork vfork _Fork "
               "posix_spawn posix_spawnp sigaction _exit _Exit quick_exit atexit at_quick_exit killpg "
               "dlopen dlmopen dlsym dlvsym dlclose dl_iterate_phdr _r_debug __libc_stack_end syscall ptrace mprotect "
               "setuid setgid chroot prctl wordexp process_vm_writev process_vm_readv on_exit",
    "network": "socket socketpair sendto sendmsg recvfrom recvmsg accept4 gethostbyname gethostbyname_r gethostbyname2 "
               "gethostbyaddr getaddrinfo getaddrinfo_a getnameinfo",
    "environment": "getenv secure_getenv setenv putenv unsetenv clearenv setlocale locale",
}
CALLED = {
    "file-io": "open close read write pread pwrite remove rename truncate",
    "process": "exit abort kill raise signal clone",
    "network": "connect bind listen accept send recv",
}

# cuda* / cu* names a patch may use (types, constants, error handling, launches on the stream it is given,
# attributes, occupancy, TMA descriptors); any other is refused (allocation, synchronisation, streams,
# events, graphs, host callbacks, IPC, contexts, logs, export tables, checkpoints ...).
CUDA_API = frozenset("""
cudaError_t cudaError cudaSuccess cudaErrorInvalidValue cudaErrorNotSupported cudaGetLastError cudaPeekAtLastError
cudaGetErrorString cudaGetErrorName cudaStream_t cudaFuncSetAttribute cudaFuncGetAttributes cudaFuncAttributes
cudaFuncAttribute cudaFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributePreferredSharedMemoryCarveout
cudaFuncAttributeNonPortableClusterSizeAllowed cudaFuncAttributeRequiredClusterWidth
cudaFuncAttributeRequiredClusterHeight cudaFuncAttributeRequiredClusterDepth cudaFuncSetCacheConfig cudaFuncCache
cudaLaunchKernel cudaLaunchKernelEx cudaLaunchKernelExC cudaLaunchConfig_t cudaLaunchAttribute cudaLaunchAttributeID
cudaLaunchAttributeValue cudaLaunchAttributeClusterDimension cudaLaunchAttributeProgrammaticStreamSerialization
cudaLaunchAttributeClusterSchedulingPolicyPreference cudaClusterSchedulingPolicySpread
cudaClusterSchedulingPolicyDefault cudaMemsetAsync cudaMemcpyAsync cudaMemcpy2DAsync cudaMemcpyToSymbolAsync
cudaMemcpyFromSymbolAsync cudaMemcpyDeviceToDevice cudaGetDevice cudaDeviceGetAttribute cudaDeviceAttr
cudaDevAttrMultiProcessorCount cudaDevAttrMaxSharedMemoryPerBlockOptin cudaDevAttrL2CacheSize
cudaDevAttrMaxSharedMemoryPerMultiprocessor cudaDevAttrClockRate cudaDevAttrComputeCapabilityMajor
cudaDevAttrComputeCapabilityMinor cudaOccupancyMaxActiveBlocksPerMultiprocessor
cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags cudaOccupancyMaxActiveClusters
cudaOccupancyMaxPotentialClusterSize cudaGetFuncBySymbol cudaFunction_t cudaDataType cudaDataType_t
cudaGridDependencySynchronize cudaTriggerProgrammaticLaunchCompletion
CUresult CUtensorMap CUtensorMapDataType CUtensorMapInterleave CUtensorMapSwizzle CUtensorMapL2promotion
CUtensorMapFloatOOBfill cuTensorMapEncodeTiled cuTensorMapEncodeIm2col cuTensorMapReplaceAddress
""".split())

# Compiler builtins a patch may use: hints, bit tricks, constants; none reaches the C library.
BUILTINS = frozenset("""
__builtin_expect __builtin_assume __builtin_assume_aligned __builtin_unreachable __builtin_trap
__builtin_is_constant_evaluated __builtin_constant_p __builtin_offsetof __builtin_addressof __builtin_bit_cast
__builtin_launder __builtin_prefetch __builtin_popcount __builtin_popcountl __builtin_popcountll __builtin_clz
__builtin_clzl __builtin_clzll __builtin_ctz __builtin_ctzl __builtin_ctzll __builtin_ffs __builtin_ffsl
__builtin_ffsll __builtin_parity __builtin_bswap16 __builtin_bswap32 __builtin_bswap64 __builtin_huge_val
__builtin_huge_valf __builtin_inf __builtin_inff __builtin_nan __builtin_nanf __builtin_fabs __builtin_fabsf
__builtin_memcpy __builtin_memset __builtin_memcmp __builtin_memmove __builtin_types_compatible_p
__builtin_choose_expr __builtin_va_start __builtin_va_end __builtin_va_arg __builtin_va_list
__builtin_FILE __builtin_LINE __builtin_FUNCTION __builtin_align_up __builtin_align_down
""".split()) - {"__builtin_FILE", "__builtin_FUNCTION"}

# Attributes a patch may use (GNU __attribute__((...)) and C++ [[...]], underscores stripped).
ATTRIBUTES = frozenset("""
aligned always_inline noinline unused maybe_unused packed nodiscard fallthrough likely unlikely noreturn
deprecated no_unique_address carries_dependency const pure hot cold flatten restrict noipa optimize
""".split())

# cudaMemcpy*Async: which argument is the copy's kind (0-based); a copy not listed is refused.
MEMCPY_KIND_ARG = {"cudaMemcpyAsync": 3, "cudaMemcpy2DAsync": 6, "cudaMemcpyToSymbolAsync": 4,
                   "cudaMemcpyFromSymbolAsync": 4}

# Types whose operators a patch may not overload (the code outside its blocks compares and tests them).
OPERATOR_TYPES = ("cudaError", "Status", "CUresult", "cudaStream", "CUstream", "dim3", "cudaLaunch", "cudaFunc")


def check_allowlists(text: str, line_of: "list[int]", refuse: Callable[[str, int], None]) -> None:
    """The closed lists: CUDA runtime and driver names, compiler builtins, attributes; and no overload of
    an operator on a type the code outside the patched blocks tests, and braces closed within the patch."""
    for m in re.finditer(r"\b(?:cuda[A-Z]\w*|cu[A-Z]\w*|CU[a-z]\w*)", text):
        if m.group(0) not in CUDA_API:
            refuse("cuda-api", line_of[m.start()])
    for m in re.finditer(r"\b__builtin_\w+", text):
        if m.group(0) not in BUILTINS:
            refuse("builtins", line_of[m.start()])
    pairs = matching_parens(text)
    for m in re.finditer(r"\b__attribute(?:__)?\s*\(", text):
        inner = text[m.end():pairs.get(m.end() - 1, len(text))].strip()
        inner = inner[1:-1] if inner.startswith("(") and inner.endswith(")") else inner   # ((...)): one pair off
        if not _allowed_attributes(inner):
            refuse("attributes", line_of[m.start()])
    for m in re.finditer(r"\[\[(.*?)\]\]", text, re.S):
        if not _allowed_attributes(re.sub(r"^\s*using\s+\w+\s*:", "", m.group(1))):
            refuse("attributes", line_of[m.start()])
    if re.search(r"\b__declspec\b", text):
        refuse("attributes", line_of[re.search(r"\b__declspec\b", text).start()])
    for m in re.finditer(r"\boperator\b([^;{]*)", text):
        if any(t in m.group(1) for t in OPERATOR_TYPES):
            refuse("operator-overload", line_of[m.start()])
    depth = 0
    for i, ch in enumerate(text):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:   # a brace that closes a scope the patch did not open (the kernel's namespace)
            refuse("unterminated", line_of[i])
            depth = 0
    if depth > 0:
        refuse("unterminated", line_of[-1] if line_of else 1)


def _allowed_attributes(inner: str) -> bool:
    """Whether every attribute of a list (`aligned(16), noinline`, `gnu::always_inline`) is allowed."""
    depth, item, items = 0, [], []
    for ch in inner:
        if ch == "," and depth == 0:
            items.append("".join(item).strip())
            item = []
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        item.append(ch)
    items.append("".join(item).strip())
    names = [re.match(r"(?:\w+\s*::\s*)*(\w+)", i) for i in items if i]
    return all(n is not None and n.group(1).strip("_") in ATTRIBUTES for n in names)
