"""This machine's memory (explorer.config.host_memory): what the kernel and a cgroup limit leave,
the physical memory where neither can be read."""
from __future__ import annotations

from explorer.config import host_memory


def test_available_memory_is_what_the_kernel_and_a_cgroup_limit_leave(monkeypatch):
    files = {"/proc/meminfo": "MemTotal: 32000000 kB\nMemAvailable: 8000000 kB\n"}
    monkeypatch.setattr(host_memory, "_read_small", lambda path: files.get(path))
    assert host_memory.available_memory_bytes() == 8_000_000 * 1024
    files.update({"/sys/fs/cgroup/memory.max": "4294967296\n", "/sys/fs/cgroup/memory.current": "1073741824\n",
                  "/sys/fs/cgroup/memory.stat": "anon 1\ninactive_file 536870912\n"})
    assert host_memory.available_memory_bytes() == 4 * 2**30 - (2**30 - 2**29)  # the limit, less what is used but cache
    files["/sys/fs/cgroup/memory.max"] = "max\n"
    assert host_memory.available_memory_bytes() == 8_000_000 * 1024
    del files["/sys/fs/cgroup/memory.max"]  # cgroup v1: a page-rounded 2^63 means no limit
    files["/sys/fs/cgroup/memory/memory.limit_in_bytes"] = "9223372036854771712\n"
    assert host_memory.available_memory_bytes() == 8_000_000 * 1024
    files["/sys/fs/cgroup/memory/memory.limit_in_bytes"] = "2147483648\n"
    files["/sys/fs/cgroup/memory/memory.usage_in_bytes"] = "0\n"
    assert host_memory.available_memory_bytes() == 2 * 2**30
    files.clear()
    assert host_memory.available_memory_bytes() == host_memory.physical_memory_bytes()
