"""Which GPU a run uses, and the per-GPU lock that keeps two kpilot processes from checking or
timing on one GPU at once (the lock kpilot-runner takes)."""

import fcntl
import os
import time


def visible_device_entry(visible, index):
    """The CUDA_VISIBLE_DEVICES entry naming device `index` as the caller numbers them: the index
    itself when the variable is unset or empty, else the list's entry at that place (an index, a
    UUID or a MIG name); None when the list has no such entry."""
    if not visible:
        return str(index)
    entries = visible.split(",")
    return entries[index] if 0 <= index < len(entries) else None


class GpuLock:
    """The per-GPU timing lock kpilot-runner takes (an flock on LOCK_DIR/kpilot-gpu-INDEX.lock), so
    two kpilot processes never build, check or time on one GPU at once. Once acquired it is held
    until the process ends, however it ends, or until release() lets other runs in for work that
    needs no exclusive GPU (a torch.compile's compile). In kpilot's sandbox the lock's folder is
    hidden: the sandbox passes the file, opened, at the descriptor KPILOT_GPU_LOCK_FD names."""

    def __init__(self, lock_dir, index):
        self.path = os.path.join(lock_dir, "kpilot-gpu-%d.lock" % index)
        self.fd = None

    def acquire(self):
        """Waits for the lock. Returns (seconds waited, warning or "")."""
        if self.fd is None:
            inherited = os.environ.get("KPILOT_GPU_LOCK_FD")
            try:
                if inherited and os.readlink("/proc/self/fd/%s" % inherited) == self.path:
                    self.fd = int(inherited)
                else:
                    self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            except OSError as e:
                return 0.0, ("could not open the GPU lock file %s (%s); another kpilot may time on this GPU "
                             "at the same time" % (self.path, e.strerror))
        t0 = time.perf_counter()
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX)
                break
            except InterruptedError:
                continue
        return time.perf_counter() - t0, ""

    def release(self):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
