"""Find processes on the host by a tag in their command line (sandbox tests look, not trust)."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """True if the process exists and is not a zombie waiting for an absent reaper."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "\nState:\tZ" not in status


def tagged(tag: str) -> list[str]:
    """Command lines of live (non-zombie) host processes that contain ``tag``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
        except OSError:
            continue
        if tag in cmdline and alive(int(entry.name)):
            found.append(cmdline.strip())
    return found
