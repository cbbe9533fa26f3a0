"""The symbols a built kernel library imports, read from its ELF dynamic symbol table.

A second line behind the source checks of `llm_mutators.safety`: a patch can reach a library function
under a name no static screen sees (an asm label, a pragma, a declaration of its own), but the linker
still has to import it. A patched kernel is refused before any worker loads it (`ImportGuard`) when its
library imports one of `FORBIDDEN_IMPORTS` (calls that neither CUDA's static runtime nor libstdc++ make,
checked against unpatched sm90 kernels built with nvcc 13.0), or anything its unpatched twin does not
import (else: that no unpatched kernel of its family built or found in this cache imports). What CUDA's
static runtime imports itself (getenv, dlopen, fopen, socket, ...) no import check can tell from an
honest kernel's: there the source checks and the isolated worker are the lines.
"""

from __future__ import annotations

import struct
import threading
from pathlib import Path

FORBIDDEN_IMPORTS = frozenset("""
system popen pclose execl execlp execle execv execve execvp execvpe execveat fexecve fork vfork posix_spawn
posix_spawnp clone clone3 ptrace chroot setuid setgid seteuid setegid setreuid setresuid prctl
getaddrinfo getnameinfo gethostbyname gethostbyname2 gethostbyaddr send sendto recv recvfrom
accept accept4 putenv unsetenv clearenv secure_getenv dup2 dup3 unlinkat renameat rename symlink link chown
""".split())

# Imports a patch may add although its unpatched twin lacks them: libm's math, memory and string helpers,
# and the C++ runtime (mangled names, exceptions, unwinding), except the parts of libstdc++ that reach
# files, threads or processes.
HARMLESS_IMPORTS = frozenset("""
sqrt sqrtf exp expf exp2 exp2f expm1 expm1f log logf log2 log2f log10 log10f log1p log1pf pow powf ceil ceilf floor
floorf fmod fmodf round roundf lround lroundf llround trunc truncf rint rintf lrint nearbyint ldexp ldexpf frexp
frexpf fabs fabsf fmin fminf fmax fmaxf cbrt cbrtf hypot hypotf sin sinf cos cosf tan tanf tanh tanhf erf erff
sincos sincosf asin asinf acos acosf atan atanf atan2 atan2f sinh sinhf cosh coshf fma fmaf lrintf llrint llrintf
exp10 exp10f copysign copysignf nextafter nextafterf remainder remainderf modf modff
memcpy memmove memset memcmp memchr strlen strnlen strcmp strncmp strchr strrchr strstr abs labs llabs
__stack_chk_fail __tls_get_addr __cxa_atexit __cxa_finalize __gmon_start__
""".split())
_RUNTIME_PREFIXES = ("_Z", "__cxa_", "_Unwind_", "__gxx_", "_ITM_")
_RUNTIME_REACHING_OUT = ("filesystem", "thread", "fstream", "filebuf", "basic_file", "system", "random_device",
                         "locale", "cout", "cin", "cerr", "clog", "ostream", "istream", "xsputn", "xsgetn", "stdio")

_SHT_DYNSYM = 11


def _harmless(name: str) -> bool:
    if name in HARMLESS_IMPORTS:
        return True
    return name.startswith(_RUNTIME_PREFIXES) and not any(w in name for w in _RUNTIME_REACHING_OUT)


def imported_symbols(library: "str | Path") -> set[str]:
    """The undefined (imported) symbols of a 64-bit little-endian ELF shared library, without their
    version suffix. Raises ValueError for a file that is not one."""
    data = Path(library).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{library}: not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names: set[str] = set()
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != _SHT_DYNSYM or not entsize:
            continue
        strtab = sections[link]
        str_start, str_size = strtab[4], strtab[5]
        for j in range(size // entsize):
            st_name, _st_info, _st_other, st_shndx = struct.unpack_from("<IBBH", data, offset + j * entsize)
            if st_shndx != 0 or st_name == 0 or st_name >= str_size:
                continue
            end = data.index(b"\0", str_start + st_name)
            names.add(data[str_start + st_name:end].decode("ascii", "replace").split("@")[0])
    return names


def forbidden_imports(library: "str | Path") -> list[str]:
    """The forbidden functions the library imports, sorted (empty: none)."""
    return sorted(imported_symbols(library) & FORBIDDEN_IMPORTS)


class ImportGuard:
    """What a patched kernel's library may import: no forbidden call, nothing its unpatched twin (or,
    without one, any unpatched kernel of its family seen so far) does not import, but the harmless
    (math, memory and string helpers, the C++ runtime: `HARMLESS_IMPORTS`). Thread-safe."""

    def __init__(self) -> None:
        self._seen: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def note(self, family: str, library: "str | Path") -> "set[str] | None":
        """Remember what an unpatched kernel of `family` imports; returns it (None: unreadable)."""
        try:
            names = imported_symbols(library)
        except (OSError, ValueError, IndexError, struct.error):
            return None
        with self._lock:
            self._seen.setdefault(family, set()).update(names)
        return names

    def refusal(self, library: "str | Path", family: str, twin: "str | Path | None") -> "str | None":
        """Why the patched kernel's library may not be loaded, or None."""
        try:
            names = imported_symbols(library)
        except (OSError, ValueError, IndexError, struct.error) as exc:
            return f"rejected: the patched kernel's library cannot be read as ELF ({exc})"
        reference = self.note(family, twin) if twin is not None else None
        if reference is None:
            with self._lock:
                reference = set(self._seen.get(family, ())) or None
        bad = sorted(names & FORBIDDEN_IMPORTS)
        new = [] if reference is None else sorted(n for n in names - reference - FORBIDDEN_IMPORTS if not _harmless(n))
        if not bad and not new:
            return None
        parts = ([f"forbidden calls: {', '.join(bad)}"] if bad else []) + (
            [f"calls no unpatched {family} kernel makes: {', '.join(new[:8])}"] if new else [])
        return "rejected: the patched kernel imports " + "; ".join(parts)
