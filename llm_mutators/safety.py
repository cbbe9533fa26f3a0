"""Static checks on patched kernel code, before it is built.

A code patch may only change how the kernel computes. It may not synchronise with the host,
allocate memory, start threads or streams, touch files, the network, other processes or the
environment, reach the reference (cuBLAS, CUTLASS's reference GEMM, names like ref_*), pull in new
headers, or remove or rename the C ABI (`evogemm_run` and the other entry points). Each refusal
names its rule and the offending line.

Comments and the contents of string and character literals are removed first (keeping line
numbers), so a comment that mentions cudaMalloc is no violation and `cuda/**/Malloc` or a
line-continued name hides none; `##` token pasting and universal character names, which could
assemble a forbidden name the checks cannot see, are refused. This is a static screen, not a
sandbox: generated code still runs only in the isolated compile pool and GPU workers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from genome import Genome

ABI_SYMBOLS = ("evogemm_abi_version", "evogemm_family", "evogemm_can_implement", "evogemm_workspace_size",
               "evogemm_run")
_CALL = r"(?<![\w.])(?<!->)(?:{})\s*\("  # a free function called (not a member)


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    pattern: "re.Pattern[str]"


def _rule(name: str, description: str, *parts: str) -> Rule:
    return Rule(name, description, re.compile("|".join(f"(?:{p})" for p in parts), re.M))


RULES = (
    _rule("host-sync", "no host synchronisation (cudaDeviceSynchronize, cudaStreamSynchronize, blocking "
          "cudaMemcpy / cudaMemset)", r"\bcu(?:da)?(?:Device|Stream|Event|Thread|Ctx)Synchronize\b",
          r"\bcu(?:da)?Memcpy(?!\w*Async\b|Kind\b|HostToHost\b|HostToDevice\b|DeviceToHost\b|DeviceToDevice\b|"
          r"Default\b)\w*", r"\bcu(?:da)?Memset(?!\w*Async\b)\w*", r"\bcudaStreamQuery\b"),
    _rule("allocation", "no memory allocation (cudaMalloc/cudaFree, malloc/free, new/delete, containers)",
          r"\bcuda(?:Malloc|Free|HostAlloc|HostRegister|MemPool|DeviceSetMemPool)\w*", r"\bcuMem(?:Alloc|Free|Create|Map|Host)\w*",
          _CALL.format("malloc|calloc|realloc|free|aligned_alloc|posix_memalign|valloc|memalign|mmap|munmap|sbrk|brk"),
          r"\bnew\b", r"(?<![=\s])\s*\bdelete\b|^\s*delete\b", r"\boperator\s+(?:new|delete)\b",
          r"\bstd::(?:vector|string|basic_string|unique_ptr|shared_ptr|make_unique|make_shared|allocator|map|"
          r"unordered_map|list|deque|set|unordered_set)\b", r"\bthrust::\w*vector\b", r"\bDeviceAllocation\b",
          r"\bdevice_memory::\w+", r"\bHostTensor\b"),
    _rule("threads", "no host threads (std::thread, std::async, pthreads, OpenMP)",
          r"\bstd::(?:thread|jthread|async|execution)\b", r"\bpthread_\w+", r"#\s*pragma\s+omp\b", r"\bomp_\w+",
          r"\btbb::"),
    _rule("streams", "no extra streams, events, graphs or host callbacks (use the stream the ABI passes)",
          r"\bcu(?:da)?Stream(?:Create|Destroy|BeginCapture|EndCapture|AddCallback|AttachMemAsync)\w*",
          r"\bcu(?:da)?Event(?:Create|Destroy)\w*", r"\bcu(?:da)?Graph\w*", r"\bcudaStream(?:PerThread|Legacy)\b",
          r"\bcu(?:da)?LaunchHostFunc\b"),
    _rule("device-control", "no device or context control (cudaSetDevice, cudaDeviceReset, limits, IPC)",
          r"\bcuda(?:SetDevice|DeviceReset|DeviceSetLimit|DeviceSetCacheConfig|DeviceSetSharedMemConfig|"
          r"SetDeviceFlags|ProfilerStart|ProfilerStop|Ipc\w*)\b", r"\bcuCtx\w*", r"\bcuInit\b", r"\bcuDevicePrimaryCtx\w*"),
    _rule("file-io", "no files or console (fopen, fstream, iostream, open/read/write)",
          _CALL.format("fopen|fopen64|freopen|fdopen|fclose|fread|fwrite|fprintf|fscanf|fputs|fgets|fputc|fgetc|"
                       "fseek|ftell|fflush|open|openat|creat|close|read|write|pread|pwrite|unlink|remove|rename|"
                       "mkdir|rmdir|chmod|opendir|readdir|truncate|ftruncate|sendfile|ioctl"),
          r"\bstd::(?:ifstream|ofstream|fstream|filesystem|cout|cerr|clog|cin|wcout|print|println)\b", r"\bFILE\s*\*"),
    _rule("print", "no printing, also not from the device (printf)",
          _CALL.format("printf|vprintf|sprintf|snprintf|vsnprintf|puts|putchar|perror|scanf|sscanf|getchar|gets|"
                       "print|println")),
    _rule("process", "no process calls (system, popen, exec*, fork, exit, signals, dlopen)",
          _CALL.format(r"system|popen|pclose|exec[lv]p?e?|execvpe|fexecve|fork|vfork|clone|posix_spawnp?|kill|raise|"
                       r"signal|sigaction|exit|_exit|_Exit|quick_exit|abort|atexit|at_quick_exit|dlopen|dlsym|"
                       r"dlclose|syscall|ptrace|mprotect|setuid|setgid|chroot"),
          r"\bstd::(?:system|exit|abort|terminate|quick_exit)\b",
          r"__attribute__\s*\(\(\s*(?:constructor|destructor)\b", r"#\s*pragma\s+(?:init|fini)\b"),
    _rule("network", "no network calls (sockets, name lookups, curl)",
          _CALL.format(r"socket|socketpair|connect|bind|listen|accept4?|send|sendto|sendmsg|recv|recvfrom|recvmsg|"
                       r"gethostbyname\w*|getaddrinfo|getnameinfo|inet_\w+|epoll_\w+"),
          r"\bcurl_\w+", r"\bsockaddr\w*"),
    _rule("environment", "no access to the environment (getenv, setenv, environ)",
          _CALL.format("getenv|secure_getenv|setenv|putenv|unsetenv|clearenv"), r"\b_{0,2}environ\b"),
    _rule("reference", "no access to the reference (cuBLAS, cuDNN, CUTLASS's reference GEMM, torch, ref_* names)",
          r"\bcublas\w*", r"\bcudnn\w*", r"\bcutlass::reference\b", r"\breference\w*", r"\w+_reference\w*",
          r"\bref_\w+", r"\btorch::", r"\bat::\w+"),
    _rule("abi-names", "the C ABI entry points (evogemm_run, ...) live in the abi block: a patch may not "
          "name, define or redefine them", r"\b(?:" + "|".join(ABI_SYMBOLS) + r")\b"),
    _rule("token-pasting", "no ## token pasting (it can assemble a forbidden name)", r"##"),
    _rule("asm-macro", "no macro named asm or volatile (it would empty the device-side waits and the inline "
          "asm of the blocks no patch may touch)", r"#\s*define\s+(?:asm|__asm__|__asm|volatile|__volatile__)\b",
          r"#\s*undef\s+(?:asm|__asm__|__asm|volatile|__volatile__)\b"),
    _rule("ucn", r"no universal character names (\u...) outside strings", r"\\[uU][0-9a-fA-F]{4}"),
)
RULES_TEXT = "\n".join(f"- {r.description}" for r in RULES) + (
    "\n- no #include of a header the kernel does not include already"
    "\n- no host instructions in inline asm (syscall, int 0x80, call)")
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b(.*)$", re.M)
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b\s*(?:volatile|__volatile__)?\s*(?:goto\s*)?\(")
_HOST_ASM = re.compile(r"\bsyscall\b|\bsysenter\b|\bint\s+\$?0x80\b|\bsvc\s+#?0\b|\bcall\s+[*%A-Za-z_]")


@dataclass(frozen=True)
class Refusal:
    rule: str
    line: int
    text: str   # the offending line, as written
    block: str = ""

    def __str__(self) -> str:
        where = f"block {self.block}, " if self.block else ""
        return f"[{self.rule}] {where}line {self.line}: {self.text.strip()[:200]}"


class UnsafeCode(ValueError):
    def __init__(self, refusals: Iterable[Refusal]):
        self.refusals = list(refusals)
        super().__init__("unsafe code: " + "; ".join(str(r) for r in self.refusals))


def scan(text: str, keep_strings: bool = False) -> "tuple[str, list[int]]":
    """The code without comments (each becomes a space; its newlines stay), with line splices
    (backslash-newline) joined and, unless `keep_strings`, string and character literals emptied
    (the quotes stay). Returns the text and, for each of its characters, its 1-based line."""
    out: list[str] = []
    lines: list[int] = []
    i, n, line = 0, len(text), 1

    def emit(s: str) -> None:
        out.append(s)
        lines.extend([line] * len(s))

    while i < n:
        c = text[i]
        if c == "\\" and text.startswith("\n", i + 1):
            i, line = i + 2, line + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                if text[i] == "\\" and text.startswith("\n", i + 1):
                    line += 1
                    i += 1
                i += 1
            emit(" ")
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            emit(" ")
            for _ in range(text.count("\n", i, end)):
                emit("\n")
                line += 1
            i = end
        elif c == '"' or (c == "'" and not _digit_separator(text, i)):
            prefix = _token_before(text, i)
            end = _raw_end(text, i) if c == '"' and prefix.endswith("R") else _literal_end(text, i, c)
            body = text[i:end]
            if not keep_strings:
                emit(c + c)
                body = "\n" * body.count("\n")
            for ch in body:
                emit(ch)
                line += ch == "\n"
            i = end
        else:
            emit(c)
            if c == "\n":
                line += 1
            i += 1
    return "".join(out), lines


def _token_before(text: str, i: int) -> str:
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_"):
        j -= 1
    return text[j:i]


def _digit_separator(text: str, i: int) -> bool:
    token = _token_before(text, i)
    return bool(token) and token[0].isdigit()


def _literal_end(text: str, i: int, quote: str) -> int:
    j = i + 1
    while j < len(text) and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return min(j + 1, len(text))


def _raw_end(text: str, i: int) -> int:
    open_paren = text.find("(", i)
    if open_paren < 0:
        return _literal_end(text, i, '"')
    end = text.find(")" + text[i + 1:open_paren] + '"', open_paren)
    return len(text) if end < 0 else end + len(text[i + 1:open_paren]) + 2


def includes_of(source: str) -> set[str]:
    """The headers a source includes, as written (`<x>` or `"x"`)."""
    code, _ = scan(source, keep_strings=True)
    return {m.group(1).strip() for m in _INCLUDE.finditer(code)}


def check_code(code: str, allowed_includes: Iterable[str] = (), block: str = "") -> list[Refusal]:
    """Every rule the patch text breaks, one refusal per rule and line."""
    originals = code.split("\n")
    found: dict[tuple[str, int], Refusal] = {}

    def refuse(rule: str, line: int) -> None:
        text = originals[line - 1] if 0 < line <= len(originals) else ""
        found.setdefault((rule, line), Refusal(rule, line, text, block))

    stripped, line_of = scan(code)
    for rule in RULES:
        for m in rule.pattern.finditer(stripped):
            if m.group(0).strip():
                refuse(rule.name, line_of[m.start() + len(m.group(0)) - len(m.group(0).lstrip())])
    with_strings, line_of_s = scan(code, keep_strings=True)
    allowed = {a.strip() for a in allowed_includes}
    for m in _INCLUDE.finditer(with_strings):
        if m.group(1).strip() not in allowed:
            refuse("includes", line_of_s[m.start(1)] if m.group(1) else line_of_s[m.start()])
    for m in _ASM.finditer(with_strings):
        body = with_strings[m.end():_close(with_strings, m.end() - 1)]
        if _HOST_ASM.search(body):
            refuse("host-asm", line_of_s[m.start()])
    return sorted(found.values(), key=lambda r: (r.line, r.rule))


def _close(text: str, open_paren: int) -> int:
    depth = 0
    for j in range(open_paren, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            return j
    return len(text)


def check_abi(source: str) -> list[Refusal]:
    """The rendered kernel must still define every C ABI entry point inside extern "C"."""
    code, _ = scan(source, keep_strings=True)
    out = []
    if not re.search(r'\bextern\s*"C"', code):
        out.append(Refusal("abi", 0, 'no extern "C" section in the rendered kernel'))
    for name in ABI_SYMBOLS:
        if not re.search(rf"\b{name}\s*\([^;{{}}]*\)\s*\{{", code):
            out.append(Refusal("abi", 0, f"the rendered kernel no longer defines {name}()"))
    return out


_GRID_WAIT = re.compile(r"\bgriddepcontrol\.wait\b")


def check_grid_waits(source: str, unpatched: str) -> list[Refusal]:
    """A kernel launched as a programmatic dependent (sm90_splitk's reduction with pdl) waits on the device
    (griddepcontrol.wait) before it reads what the launch before it wrote; a patch that dropped the wait
    would read it early. The rendered kernel must keep every wait of the unpatched one."""
    def count(text: str) -> int:
        return len(_GRID_WAIT.findall(scan(text, keep_strings=True)[0]))
    kept, before = count(source), count(unpatched)
    if kept < before:
        return [Refusal("grid-wait", 0, f"the patched kernel has {kept} of the unpatched kernel's {before} "
                                        "griddepcontrol.wait (a dependent launch would read its inputs early)")]
    return []


def check_genome(genome: Genome, render: Callable[[Genome], str]) -> list[Refusal]:
    """Every refusal for a genome's patches and its rendered source (empty: it may be built).
    `render(genome) -> source`; the headers allowed are those of the unpatched kernel."""
    if not genome.patches:
        return []
    unpatched = render(Genome(genome.family, genome.params))
    allowed = includes_of(unpatched)
    out: list[Refusal] = []
    for patch in genome.patches:
        if patch.block == "abi":
            out.append(Refusal("abi", 0, "the abi block may not be patched", patch.block))
        out.extend(check_code(patch.code, allowed, patch.block))
    source = render(genome)
    return out + check_abi(source) + check_grid_waits(source, unpatched)


def safety_refusal(genome: Genome, render: Callable[[Genome], str]) -> "str | None":
    """Why this genome's patched code may not be built (its refusals, joined), or None. The engine
    runs it on every patched child before the child is proposed, whichever operator made it."""
    refusals = check_genome(genome, render)
    return "unsafe code: " + "; ".join(str(r) for r in refusals) if refusals else None
