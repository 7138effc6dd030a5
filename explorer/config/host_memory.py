"""This machine's memory, as a sweep on it may use it: the physical total (what a design for it
plans with) and what is available now (the kernel's available memory, no more than a cgroup limit
leaves). The dry run, the refusal of a point too large and the design read it here."""
from __future__ import annotations

import os


def physical_memory_bytes() -> int:
    """This machine's physical memory (what a design for it may plan with)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


# cgroup v2 (the unified hierarchy) and v1 files of this process's memory limit, usage and page cache
_CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory.stat", "inactive_file"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes",
                  "/sys/fs/cgroup/memory/memory.stat", "total_inactive_file"))


def _read_small(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(1 << 16).decode("ascii", "replace")
    except OSError:
        return None


def _meminfo_available() -> int | None:
    """The kernel's MemAvailable: free memory plus what it can reclaim without swapping."""
    text = _read_small("/proc/meminfo")
    for line in (text or "").splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def _cgroup_available() -> int | None:
    """What this process's memory cgroup leaves (its limit less its usage, the inactive page
    cache counted as free), or None without a limit."""
    for limit_file, usage_file, stat_file, cache_key in _CGROUP_FILES:
        limit = (_read_small(limit_file) or "").strip()
        if not limit.isdigit():  # absent, or "max": no limit at this level
            continue
        if int(limit) >= 2**60:  # cgroup v1 writes "no limit" as a page-rounded 2^63
            return None
        usage = (_read_small(usage_file) or "0").strip()
        cache = 0
        for line in (_read_small(stat_file) or "").splitlines():
            key, _, value = line.partition(" ")
            if key == cache_key and value.strip().isdigit():
                cache = int(value)
        used = int(usage) - cache if usage.isdigit() else 0
        return max(int(limit) - max(used, 0), 0)
    return None


def available_memory_bytes() -> int:
    """The memory a sweep on this machine can use now: the kernel's available memory (not the
    physical total: other processes hold some), no more than what a cgroup limit
    (``/sys/fs/cgroup/memory.max``, or cgroup v1's ``memory.limit_in_bytes``) leaves; the
    physical memory where neither can be read."""
    known = [n for n in (_meminfo_available(), _cgroup_available()) if n is not None]
    return min(known) if known else physical_memory_bytes()


__all__ = ["available_memory_bytes", "physical_memory_bytes"]
