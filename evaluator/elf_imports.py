"""The symbols a built kernel library imports, read from its ELF dynamic symbol table.

A second line behind the source checks of `llm_mutators.safety`: a patch can reach a library function
under a name no static screen sees (an asm label, a pointer cast), but the linker still has to import
it. A patched kernel whose library imports one of `FORBIDDEN_IMPORTS` is refused before any worker
loads it. The list holds only calls that neither CUDA's static runtime nor libstdc++ make (checked
against the imports of an unpatched sm90 kernel built with nvcc 13.0), so an honest patch never meets it.
"""

from __future__ import annotations

import struct
from pathlib import Path

FORBIDDEN_IMPORTS = frozenset("""
system popen pclose execl execlp execle execv execve execvp execvpe execveat fexecve fork vfork posix_spawn
posix_spawnp clone clone3 ptrace chroot setuid setgid seteuid setegid setreuid setresuid prctl
getaddrinfo getnameinfo gethostbyname gethostbyname2 gethostbyaddr send sendto recv recvfrom
accept accept4 putenv unsetenv clearenv secure_getenv dup2 dup3 unlinkat renameat rename symlink link chown
""".split())

_SHT_DYNSYM = 11


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
