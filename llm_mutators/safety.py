"""Static checks on patched kernel code, before it is built.

A code patch may only change how the kernel computes. It may not synchronise with the host,
allocate memory, start threads or streams, touch files, the network, other processes or the
environment, reach the reference (cuBLAS, CUTLASS's reference GEMM, the gate's ref_output-style
names), pull in new headers, or remove or rename the C ABI (`evogemm_run` and the other entry
points). Each refusal names its rule and the offending line.

Comments and the contents of string and character literals are removed first (keeping line
numbers), so a comment that mentions cudaMalloc is no violation and `cuda/**/Malloc` or a
line-continued name (also with blanks after the backslash) hides none; whitespace around `::` is
dropped before matching. Library functions are refused wherever they appear as a name, not only
when called (`(system)(...)`, `&system`, `#define RUN system`; common words such as `read` only where
called or addressed), unless they are a member or qualified by a scope other than std. Whatever could
assemble, declare or rename a name the checks cannot see is refused: `##` pasting and `%:` digraphs,
universal character names, control and bidirectional characters, extern declarations, asm labels,
`_Pragma` and linkage attributes (weakref, alias, ...), inline asm the check cannot read, lookups of
driver entry points by name, `using namespace std`, directives other than conditionals, defines,
`#pragma unroll` and known includes, a `#define` / `#undef` of a name the code outside the patched
blocks uses, and conditionals or comments left open across a patch's end. Instruction-like text
aimed at a model (prompt injection) is refused too: patches are shown to later prompts.

Where a list can be closed it is an allowlist (`safety_lists`): the CUDA runtime and driver names a
patch may use, the compiler builtins, the attributes, and, for inline asm, the PTX opcodes
(`inline_asm`). A patch's braces must balance (it may not close the kernel's namespace), and it may
not overload an operator on a type that the code outside its blocks tests (cudaError_t, Status).

This is a static screen, not a sandbox. Behind it, a patched kernel's library may import nothing
its unpatched twin does not (`evaluator.elf_imports`), and generated code runs only in the isolated
compile pool and GPU workers; a patch that walks memory from a function pointer to find a library
function would pass both checks, and only that isolation contains it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from genome import Genome, Patch

from .cpp_scan import close_paren, matching_parens, scan, scan_code, squeeze_scopes
from .safety_lists import CALLED, MEMCPY_KIND_ARG, NAMES, check_allowlists
from .inline_asm import LONGEST as _LONGEST_ASM
from .inline_asm import asm_problem

_LONGEST_CALL = 4000   # characters of a cudaMemcpy*Async call's arguments read; a longer call is no device copy

ABI_SYMBOLS = ("evogemm_abi_version", "evogemm_family", "evogemm_can_implement", "evogemm_workspace_size",
               "evogemm_run")


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    pattern: "re.Pattern[str]"


def _rule(name: str, description: str, *parts: str) -> Rule:
    return Rule(name, description, re.compile("|".join(f"(?:{p})" for p in parts), re.M))


_NAMED = re.compile(r"\b(" + "|".join(n for names in NAMES.values() for n in names.split()) + r")\b")
_CALLED = re.compile(r"\b(" + "|".join(n for names in CALLED.values() for n in names.split()) + r")\b")
_RULE_OF_NAME = {n: rule for table in (NAMES, CALLED) for rule, names in table.items() for n in names.split()}

RULES = (
    _rule("host-sync", "no host synchronisation or host copies (cudaDeviceSynchronize, cudaStreamSynchronize, "
          "cudaMemcpy but a device-to-device cudaMemcpy*Async, blocking cudaMemset)",
          r"\bcu(?:da)?(?:Device|Stream|Event|Thread|Ctx)Synchronize\w*", r"\bcu(?:da)?Memset(?!\w*Async(?:_pt\w*)?\b)\w*",
          r"\bcu(?:da)?StreamQuery\w*", r"\bcuMemcpy\w*"),
    _rule("allocation", "no memory allocation (cudaMalloc/cudaFree, malloc/free, new/delete, containers)",
          r"\bcuda(?:Malloc|Free|HostAlloc|HostRegister|MemPool|DeviceSetMemPool)\w*", r"\bcuMem(?:Alloc|Free|Create|Map|Host)\w*",
          r"\bnew\b", r"\boperator\s+(?:new|delete)\b", r"\b__builtin_(?:malloc|calloc|realloc|free|alloca|strdup)\b",
          r"\b__nv_aligned_device_malloc\b",
          r"\bstd::(?:vector|string|wstring|basic_string|\w*stringstream|to_string|to_wstring|unique_ptr|shared_ptr|"
          r"make_unique|make_shared|allocator|__new_allocator|allocator_traits|pmr|function|map|multimap|unordered_map|"
          r"unordered_multimap|list|forward_list|deque|set|multiset|unordered_set|unordered_multiset)\b",
          r"\bthrust::\w*vector\b", r"\bDeviceAllocation\b", r"\bdevice_memory::\w+", r"\bHostTensor\b"),
    _rule("threads", "no host threads (std::thread, std::async, pthreads, C11 threads, OpenMP)",
          r"\bstd::(?:thread|jthread|async|execution)\b", r"\bpthread_\w+", r"#\s*pragma\s+omp\b", r"\bomp_\w+",
          r"\btbb::"),
    _rule("streams", "no extra streams, events, graphs or host callbacks (use the stream the ABI passes)",
          r"\bcu(?:da)?Stream(?:Create|Destroy|BeginCapture|EndCapture|AddCallback|AttachMemAsync)\w*",
          r"\bcu(?:da)?Event(?:Create|Destroy)\w*", r"\bcu(?:da)?Graph\w*", r"\bcudaStream(?:PerThread|Legacy)\b",
          r"\bcu(?:da)?LaunchHostFunc\w*", r"\(\s*(?:cudaStream_t|CUstream)\s*\)",
          r"_cast\s*<\s*(?:cudaStream_t|CUstream)\s*>", r"\b(?:cudaStream_t|CUstream)\s*[({]"),
    _rule("device-control", "no device or context control (cudaSetDevice, cudaDeviceReset, limits, IPC) and no "
          "lookup of driver entry points or modules by name",
          r"\bcuda(?:SetDevice|DeviceReset|DeviceSetLimit|DeviceSetCacheConfig|DeviceSetSharedMemConfig|"
          r"SetDeviceFlags|ProfilerStart|ProfilerStop|Ipc\w*)\b", r"\bcuCtx\w*", r"\bcuInit\b", r"\bcuDevicePrimaryCtx\w*",
          r"\bcudaGetDriverEntryPoint\w*", r"\bcuGetProcAddress\w*", r"\bcu(?:da)?(?:Module|Library|Link)\w*",
          r"\bnvrtc\w*", r"\bnvJitLink\w*"),
    _rule("file-io", "no files or console (fopen, fstream, iostream, open/read/write)",
          r"\bstd::(?:ifstream|ofstream|fstream|filesystem|cout|cerr|clog|cin|wcout|wcerr|wclog|wcin|print|println)\b",
          r"\bFILE\s*\*"),
    _rule("print", "no printing, also not from the device (printf, cute::print)", r"\bstd::printf\b",
          r"\b__builtin_\w*printf\b", r"(?<![\w.])(?<!->)print(?:ln|_\w+)?\s*(?:\(|<|\))"),
    _rule("process", "no process calls (system, popen, exec*, fork, exit, signals, dlopen, load-time code)",
          r"\bstd::(?:system|exit|abort|terminate|quick_exit)\b",
          r"\b__attribute__\s*\(\([^;{}]*?\b(?:constructor|destructor|weakref|weak|alias|ifunc|section|symver|"
          r"visibility|init_priority)\b",
          r"\[\[\s*(?:gnu::)?(?:constructor|destructor|weakref|weak|alias|ifunc|section|symver|visibility)\b",
          r"\b_Pragma\b", r"\b__pragma\b", r"#\s*pragma\s+(?:init|fini|weak|redefine_extname)\b"),
    _rule("network", "no network calls (sockets, name lookups, curl)",
          r"\binet_\w+", r"\bepoll_\w+", r"\bcurl_\w+", r"\bsockaddr\w*"),
    _rule("environment", "no access to the environment (getenv, setenv, environ)", r"\b_{0,2}environ\b"),
    _rule("reference", "no access to the reference (cuBLAS, cuDNN, CUTLASS's reference GEMM, torch, the gate's "
          "ref_output / ref_result names)",
          r"\bcublas\w*", r"\bcudnn\w*", r"\bcutlass::reference\b", r"\breference::(?:host|device)\b",
          r"\bref_(?:out|output|result|expected|gold|golden)\w*", r"\btorch::", r"\bat::\w+"),
    _rule("abi-names", "the C ABI entry points (evogemm_run, ...) live in the abi block: a patch may not "
          "name, define or redefine them", r"\b(?:" + "|".join(ABI_SYMBOLS) + r")\b"),
    _rule("token-pasting", "no ## token pasting (it can assemble a forbidden name)", r"##"),
    _rule("linkage", "no extern declarations but `extern __shared__` (a patch declares no library symbol of its own)",
          r"\bextern\b(?!\s+__shared__\b)"),
    _rule("std-alias", "no `using namespace std` or alias of std (std:: names are how the checks see them)",
          r"\busing\s+namespace\s+(?:::)?std\b", r"\bnamespace\s+\w+\s*=\s*(?:::)?std\b"),
    _rule("asm-macro", "no macro named asm or volatile (it would empty the device-side waits and the inline "
          "asm of the blocks no patch may touch)", r"#\s*define\s+(?:asm|__asm__|__asm|volatile|__volatile__)\b",
          r"#\s*undef\s+(?:asm|__asm__|__asm|volatile|__volatile__)\b"),
    _rule("ucn", r"no universal character names (\u...) outside strings", r"\\[uU][0-9a-fA-F]{4}"),
)
RULES_TEXT = "\n".join(f"- {r.description}" for r in RULES) + (
    "\n- the library functions of these rules (system, getenv, fopen, printf, malloc, ...) are refused as names, "
    "not only as calls"
    "\n- preprocessor: only #if/#ifdef/#ifndef/#elif/#else/#endif (closed within the patch), #define/#undef (not of "
    "a name the rest of the kernel uses), #pragma unroll, and #include of a header the kernel includes already; "
    "no %: digraphs"
    "\n- inline asm: `asm volatile(\"...\" : ...)` with PTX only (each statement starts with a PTX opcode or "
    ".reg/.pred), the instruction text in string literals, no asm labels"
    "\n- CUDA runtime calls: error handling, cudaLaunchKernel(Ex), cudaFuncSetAttribute, cudaMemsetAsync / "
    "device-to-device cudaMemcpyAsync on the given stream, device attributes and occupancy; no other cuda*/cu* "
    "function; compiler builtins and attributes only of the usual hints (expect, assume, aligned, always_inline, "
    "noinline, likely, maybe_unused); braces balanced within the patch"
    "\n- no control or bidirectional characters, no text addressed to a model")
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b(.*)$", re.M)
_ASM_WORD = re.compile(r"\b(?:asm|__asm__|__asm)\b")
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b((?:\s*\b(?:volatile|__volatile__|__volatile|inline|__inline__|__inline|"
                  r"goto)\b)*)\s*\(")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+)*(?:previous|prior|above|earlier|"
    r"preceding|former|system|original)\s+(?:instructions?|prompts?|messages?|rules|directions|context|guidelines)\b|"
    r"\b(?:ignore|disregard|forget)\b[^.;]{0,40}\b(?:you\s+were\s+(?:told|given|instructed)|your\s+instructions)\b|"
    r"\b(?:system|developer)\s+(?:prompt|message)\b|\bnote\s+to\s+(?:the\s+)?(?:assistant|model|ai|llm|reviewer)\b|"
    r"\bas\s+an?\s+(?:ai|language\s+model)\b|<\|?(?:im_start|im_end|system|endoftext)\|?>|\[/?INST\]", re.I)
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w*)[ \t]*(\w*)", re.M)
_ALLOWED_DIRECTIVES = {"if", "ifdef", "ifndef", "elif", "else", "endif", "define", "undef", "include", "pragma", ""}
_ALLOWED_PRAGMA = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+(?:unroll\b|nounroll\b|once\b)", re.M)


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


def includes_of(source: str) -> set[str]:
    """The headers a source includes, as written (`<x>` or `"x"`)."""
    code, _ = scan(source, keep_strings=True)
    return {m.group(1).strip() for m in _INCLUDE.finditer(code)}


def check_code(code: str, allowed_includes: Iterable[str] = (), block: str = "") -> list[Refusal]:
    """Every rule the patch text breaks, one refusal per rule and line."""
    code = code.replace("\r\n", "\n")
    originals = code.split("\n")
    found: dict[tuple[str, int], Refusal] = {}

    def refuse(rule: str, line: int) -> None:
        text = originals[line - 1] if 0 < line <= len(originals) else ""
        found.setdefault((rule, line), Refusal(rule, line, text, block))

    for m in _CONTROL.finditer(code):
        refuse("control-characters", code.count("\n", 0, m.start()) + 1)
    flat, flat_line = _comment_text(code)
    for m in _INJECTION.finditer(flat):
        refuse("prompt-injection", flat_line[m.start()])
    scanned = scan_code(code)
    for what, line in scanned.unterminated:
        refuse("unterminated", line)
    for m in re.finditer(r"%:", scanned.text):   # before `::` is squeezed: `K % ::cute::size` is no digraph
        refuse("token-pasting", scanned.lines[m.start()])
    last_line = len(code.rstrip("\n").split("\n"))
    # directives and asm before `::` is squeezed too: squeezing eats the newline that starts a directive
    _check_directives(scanned.text, scanned.lines, last_line, refuse)
    readable = {m.start() for m in _ASM.finditer(scanned.text)}
    for m in _ASM_WORD.finditer(scanned.text):   # an asm the check below cannot read: a macro, another spelling
        if m.start() not in readable:
            refuse("asm-template", scanned.lines[m.start()])
    if re.search(r"\\[ \t\f\v]*\Z", code.rstrip("\n")):   # a last-line splice would swallow the template's next line
        refuse("unterminated", last_line)
    stripped, line_of = squeeze_scopes(scanned.text, scanned.lines)
    for rule in RULES:
        for m in rule.pattern.finditer(stripped):
            if m.group(0).strip():
                refuse(rule.name, line_of[m.start() + len(m.group(0)) - len(m.group(0).lstrip())])
    # names on the unsqueezed text: squeezing would make `return ::system(...)` read as `return::system`
    plain, plain_line = scanned.text, scanned.lines
    for m in _NAMED.finditer(plain):
        refuse(_RULE_OF_NAME[m.group(1)], plain_line[m.start()])
    for m in _CALLED.finditer(plain):
        exempt, global_scope = _member_or_qualified(plain, m.start())
        if global_scope or (not exempt and _called(plain, m.end())):
            refuse(_RULE_OF_NAME[m.group(1)], plain_line[m.start()])
    check_allowlists(plain, plain_line, refuse)
    for m in re.finditer(r"\bdelete\b", stripped):
        if not stripped[:m.start()].rstrip().endswith("="):   # `= delete` deletes a function, frees nothing
            refuse("allocation", line_of[m.start()])
    pairs = matching_parens(stripped)
    for m in re.finditer(r"\bcudaMemcpy\w*", stripped):
        if m.group(0) not in ("cudaMemcpyDeviceToDevice", "cudaMemcpyKind") and not _device_copy(stripped, m, pairs):
            refuse("host-sync", line_of[m.start()])
    with_strings, line_of_s = scan(code, keep_strings=True)
    allowed = {a.strip() for a in allowed_includes}
    for m in _INCLUDE.finditer(with_strings):
        if m.group(1).strip() not in allowed:
            refuse("includes", line_of_s[m.start(1)] if m.group(1) else line_of_s[m.start()])
    closing = matching_parens(with_strings)
    for m in _ASM.finditer(with_strings):
        end = closing.get(m.end() - 1, len(with_strings))
        if end == len(with_strings) or end - m.end() > _LONGEST_ASM:   # unclosed, or no kernel's asm
            rule: "str | None" = "asm-template"
        else:
            rule = asm_problem(with_strings[m.end():end], bool(m.group(1).strip()))
        if rule:
            refuse(rule, line_of_s[m.start()])
    return sorted(found.values(), key=lambda r: (r.line, r.rule))


def _comment_text(code: str) -> "tuple[str, list[int]]":
    """The code with comment markers and line breaks turned into blanks (a sentence split over `//`
    lines reads as one), with the line of each character."""
    out: list[str] = []
    lines: list[int] = []
    line = 1
    for m in re.finditer(r"(//|/\*|\*/|\n\s*\*(?!/)|\s+)|([^/*\s]+|[/*])", code):
        text = " " if m.group(1) else m.group(2)
        out.append(text)
        lines.extend([line] * len(text))
        line += m.group(0).count("\n")
    return "".join(out), lines


def _device_copy(text: str, m: "re.Match[str]", pairs: "dict[int, int]") -> bool:
    """Whether a cudaMemcpy*Async call copies device to device: one of its arguments is exactly that kind."""
    end = pairs.get(m.end(), len(text))
    if m.group(0) not in MEMCPY_KIND_ARG or not text.startswith("(", m.end()) or end - m.end() > _LONGEST_CALL:
        return False
    args, depth, current = [], 0, []
    for ch in text[m.end() + 1:end]:
        if ch == "," and depth == 0:
            args.append("".join(current).strip())
            current = []
            continue
        depth += {"(": 1, "<": 1, "[": 1, "{": 1, ")": -1, ">": -1, "]": -1, "}": -1}.get(ch, 0)
        current.append(ch)
    args.append("".join(current).strip())
    index = MEMCPY_KIND_ARG.get(m.group(0))
    return index is not None and len(args) > index and args[index] == "cudaMemcpyDeviceToDevice"


def _check_directives(stripped: str, line_of: "list[int]", last_line: int, refuse: Callable[[str, int], None]) -> None:
    """Only the allowed directives, and #if/#endif closed within the patch (a conditional left open
    could swallow the code between two patched blocks)."""
    depth = 0
    for m in _DIRECTIVE.finditer(stripped):
        kind, line = m.group(1), line_of[m.start()]
        if kind not in _ALLOWED_DIRECTIVES or (kind == "pragma" and not _ALLOWED_PRAGMA.match(stripped, m.start())):
            refuse("preprocessor", line)
        depth += kind in ("if", "ifdef", "ifndef")
        if kind in ("elif", "else", "endif") and depth == 0:
            refuse("unterminated", line)
        depth -= kind == "endif" and depth > 0
    if depth > 0:
        refuse("unterminated", last_line)


_NOT_A_SCOPE = frozenset("""return case throw else do co_return co_yield co_await and or not xor bitand bitor compl
sizeof alignof typeid new delete typename template using namespace define undef if elif ifdef ifndef""".split())
_CALLED_AFTER = re.compile(r"\s*(?:\(|\)\s*\()")


def _member_or_qualified(text: str, start: int) -> "tuple[bool, bool]":
    """(exempt, global): whether the name at `start` is a member (`.x`, `->x`) or qualified by a scope
    other than std written against its `::` (`cute::remove`), both on the name's own line (a `#define D .`
    on the line before makes no member); and whether it is named from the global scope (`::remove`,
    `using ::remove`, `return ::remove(..)`)."""
    before = text[text.rfind("\n", 0, start) + 1:start].rstrip()
    if before.endswith((".", "->")):
        return True, False
    if not before.endswith("::"):
        return False, False
    if before[:-2].endswith(">"):   # `Foo<T>::close` or `0>::remove`: neither exempt nor global
        return False, False
    name = re.search(r"(\w+)$", before[:-2])
    if name is None or name.group(1) in _NOT_A_SCOPE:
        return False, True
    return name.group(1) != "std", False


def _called(text: str, end: int) -> bool:
    """Whether the name ending at `end` is called (`write(...)`, `(write)(...)`) or addressed (`&write`);
    a variable of that name (`if (write)`, `f(x, signal)`) is neither."""
    start = re.search(r"\w+$", text[:end]).start()
    before = text[max(0, start - 200):start].rstrip()
    after = _CALLED_AFTER.match(text, end)
    return bool(after) and (after.group(0).strip() == "(" or before.endswith("(")) or \
        (before.endswith("&") and not before.endswith("&&"))


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
    would read it early. The waits live outside the patchable blocks; as a second line, the rendered kernel
    must keep every wait of the unpatched one, counted in inline asm statements only."""
    def count(text: str) -> int:
        code = scan(text, keep_strings=True)[0]
        return sum(len(_GRID_WAIT.findall(code[m.end():close_paren(code, m.end() - 1)])) for m in _ASM.finditer(code))
    kept, before = count(source), count(unpatched)
    if kept < before:
        return [Refusal("grid-wait", 0, f"the patched kernel has {kept} of the unpatched kernel's {before} "
                                        "griddepcontrol.wait (a dependent launch would read its inputs early)")]
    return []


_RESERVED_MACRO = re.compile(r"(?:CUTLASS|CUTE|CUDA|cuda|cu[A-Z]|__|_[A-Z])\w*")


def check_macros(genome: Genome, render: Callable[[Genome], str], unpatched: str) -> list[Refusal]:
    """A patch's `#define` or `#undef` may not name anything the code outside its blocks uses (it would
    rewrite code no patch may touch, e.g. `#define cudaPeekAtLastError() cudaSuccess` in front of the
    C ABI), nor a reserved or library name (CUTLASS_*, CUTE_*, cuda*, __*), unless the unpatched block
    defined that macro itself (the patch keeps it)."""
    probe = scan(render(Genome(genome.family, genome.params, tuple(Patch(p.block, "") for p in genome.patches))))[0]
    outside = set(re.findall(r"\b[A-Za-z_]\w*\b", probe))

    def defined(code: str) -> set[str]:
        return {m.group(2) for m in _DIRECTIVE.finditer(code) if m.group(1) in ("define", "undef")}
    kept = defined(scan(unpatched)[0]) - defined(probe)
    out = []
    for patch in genome.patches:
        code = patch.code.replace("\r\n", "\n")
        stripped, line_of = scan(code)
        for m in _DIRECTIVE.finditer(stripped):
            name = m.group(2)
            if (m.group(1) in ("define", "undef") and name and name not in kept
                    and (name in outside or _RESERVED_MACRO.fullmatch(name))):
                line = line_of[m.start(2)]
                out.append(Refusal("macro-redefines", line, code.split("\n")[line - 1], patch.block))
    return out


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
    out.extend(check_macros(genome, render, unpatched))
    source = render(genome)
    return out + check_abi(source) + check_grid_waits(source, unpatched)


def safety_refusal(genome: Genome, render: Callable[[Genome], str]) -> "str | None":
    """Why this genome's patched code may not be built (its refusals, joined), or None. The engine
    runs it on every patched child before the child is proposed, whichever operator made it."""
    refusals = check_genome(genome, render)
    return "unsafe code: " + "; ".join(str(r) for r in refusals) if refusals else None
