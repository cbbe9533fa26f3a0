"""What inline asm a code patch may hold: PTX for the device, nothing for the host.

A kernel patch needs asm only for device instructions CUTLASS/CuTe do not wrap (a fence, a wait, an
mma). Its instruction text must be string literals (no macro or name inside it could be checked),
and each statement of it, after its C escapes are decoded (`"sys\\143all"` is `syscall`), must begin
with a PTX opcode or declaration: an allowlist, so that host instructions (syscall, int, jmp to a
library function) and assembler directives that emit bytes (.byte, .value, .fill) are refused
whatever their spelling. An asm with no qualifier, no operands and a bare symbol as its text is an
asm label, which renames the declaration before it to any library symbol: refused too.
"""

from __future__ import annotations

import re

# PTX instruction names (PTX ISA 8.x; the part before the first '.'), the ones a kernel patch may use.
# `call` is left out: it is also the host's call instruction, and no patch needs a PTX call.
PTX_OPCODES = frozenset("""
abs activemask add addc alloca and applypriority atom bar barrier bfe bfi bfind bmsk bra brev brkpt brx clz cnot
clusterlaunchcontrol copysign cos cp createpolicy cvt cvta discard div dp2a dp4a elect ex2 exit fence fma fns
getctarank griddepcontrol isspacep istypeof ld ldmatrix ldu lg2 lop3 mad mad24 madc mapa match max mbarrier membar
min mma mov movmatrix mul mul24 multimem nanosleep neg not or pmevent popc prefetch prefetchu prmt rcp red redux rem
ret rsqrt sad selp set setmaxnreg setp shf shfl shl shr sin slct sqrt st stackrestore stacksave stmatrix sub subc
suld suq sured sust szext tanh tcgen05 tensormap testp tex tld4 trap txq vabsdiff vabsdiff2 vabsdiff4 vadd vadd2
vadd4 vavrg2 vavrg4 vmad vmax vmax2 vmax4 vmin vmin2 vmin4 vote vset vset2 vset4 vshl vshr vsub vsub2 vsub4 wgmma
wmma xor
""".split())
PTX_DECLARATIONS = frozenset({".reg", ".pred", ".shared", ".local", ".param", ".const"})

_STRING = re.compile(r'(?:u8|[uUL])?"(?:[^"\\\n]|\\.)*"')
_LABEL = re.compile(r"[A-Za-z_.$@][\w.$@]*")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]+|[0-7]{1,3}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "a": "\a", "b": "\b", "0": "\0"}
LONGEST = 4000   # characters inside an asm statement's parentheses; longer ones are refused


def decode(literal_body: str) -> str:
    """A string literal's text with its C escapes decoded."""
    def one(m: "re.Match[str]") -> str:
        e = m.group(1)
        try:
            if e[0] == "x":
                return chr(int(e[1:], 16) % 0x110000)
            if e[0] in "01234567":
                return chr(int(e, 8))
            if e[0] in "uU":
                return chr(int(e[1:], 16) % 0x110000)
        except ValueError:
            return "\ufffd"
        return _SIMPLE.get(e, e)
    return _ESCAPE.sub(one, literal_body)


def split_template(body: str) -> "tuple[str, str]":
    """An asm body split at its first ':' outside string literals: (template, operands)."""
    i = 0
    while i < len(body):
        m = _STRING.match(body, i)
        if m:
            i = m.end()
        elif body[i] == ":":
            return body[:i], body[i + 1:]
        else:
            i += 1
    return body, ""


def asm_problem(body: str, qualified: bool) -> "str | None":
    """The rule an inline asm statement breaks (`body`: its text inside the parentheses), or None."""
    if len(body) > LONGEST:
        return "asm-template"
    template, operands = split_template(body)
    if _STRING.sub("", template).strip():
        return "asm-template"
    text = "".join(decode(lit[lit.index('"') + 1:-1]) for lit in _STRING.findall(template))
    if not qualified and not operands.strip() and _LABEL.fullmatch(text.strip()):
        return "asm-label"
    return None if all(_ptx_statement(s) for s in re.split(r"[;\n]", text)) else "host-asm"


def _ptx_statement(statement: str) -> bool:
    """Whether one statement of asm text is empty, a label, or starts with a PTX opcode or declaration
    (after an optional `@p` / `@!p` guard)."""
    s = statement.strip().lstrip("{} \t")                       # a scope's braces (operand vectors stay)
    s = re.sub(r"^(?:[A-Za-z_$][\w$]*:\s*)+", "", s)            # labels
    s = re.sub(r"^@!?%?[\w.]+\s+", "", s)                        # a predicate guard
    if not s:
        return True
    head = s.split()[0]
    if head.startswith("."):
        return head in PTX_DECLARATIONS
    return head.split(".")[0] in PTX_OPCODES
