"""A write that the operating system refuses (no space left, read-only, quota) is the whole
store's failure: ``StoreUnreachable`` naming the store and the error, so that a sweep stops at
once instead of rerunning points that can only fail again (issue 25, item 5). Nothing partial
is left behind, and what was written before is intact."""
from __future__ import annotations

import errno
import os
import subprocess

import pytest
import store_testkit as kit

import store.files as files_module
from store import Store, StoreUnreachable


def _fail_with(code):
    def write(fd, data):
        raise OSError(code, os.strerror(code))
    return write


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO])
def test_an_os_write_error_is_the_stores_failure_and_leaves_no_temporary(local_store, monkeypatch, code):
    key, rows, trial = kit.trial(L=2)
    local_store.write_trial("tiny", key, rows, trial)
    monkeypatch.setattr(files_module.os, "write", _fail_with(code))
    other, rows, trial = kit.trial(L=4)
    with pytest.raises(StoreUnreachable) as caught:
        local_store.write_trial("tiny", other, rows, trial)
    message = str(caught.value)
    assert message.startswith(f"store {local_store.uri} cannot be written: [Errno {code}] {os.strerror(code)} (writing ")
    assert "\n" not in message
    monkeypatch.undo()
    assert local_store.check().ok  # no temporary, no partial file; the first trial intact
    assert local_store.completed_trial_keys("tiny") == {key}


def _tmpfs(path, size: str) -> bool:
    path.mkdir()
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


def test_a_full_tmpfs_stops_writes_with_one_line_and_keeps_what_landed(tmp_path):
    mount = tmp_path / "small"
    if not _tmpfs(mount, "200k"):
        pytest.skip("mounting a tmpfs needs root")
    try:
        st = Store(mount / "store")
        landed = []
        with pytest.raises(StoreUnreachable, match=r"No space left on device") as caught:
            for i in range(1000):
                key, rows, trial = kit.trial(L=2, M=i + 1, steps=20)
                st.write_trial("tiny", key, rows, trial)
                landed.append(key)
        assert str(caught.value).startswith(f"store {mount / 'store'} cannot be written: [Errno 28]")
        assert landed and st.completed_trial_keys("tiny") <= set(landed)
        report = st.check()
        assert {f.category for f in report.problems} <= {"incomplete"}, report.lines()  # metrics of the last, if any
        st.remove_unfinished("tiny", set(landed) | {key})
        assert st.check().ok
    finally:
        subprocess.run(["umount", str(mount)], check=False)
