// The sandbox's seccomp filter and the supervisor's side of it (user notifications).
//
// The filter allows everything except the calls below, which it hands to the supervisor instead
// of running them: the supervisor records each and answers EPERM (a signal to a process of the
// sandbox itself is let through). Other architectures' system calls (int 0x80 from a 64-bit
// process) kill the process; clone3, whose flags a filter cannot read, answers ENOSYS so that
// libc falls back to clone, whose flags it can.
#include <fcntl.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "core/subprocess.h"
#include "sandbox/sandbox.h"

namespace kpilot {
namespace {

// Never needed by a kernel, a torch model or a harness; each is a way out of the sandbox or into
// another process or the kernel.
constexpr const char* kDenied[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "pidfd_send_signal",
    "kcmp",
    "mount",
    "umount2",
    "unshare",
    "setns",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "open_by_handle_at",
    "name_to_handle_at",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "iopl",
    "ioperm",
    "lookup_dcookie",
};
// Calls that change the file tree other than by opening a file: which arguments name a path it
// changes, and the directory descriptor each is relative to (-1: the working directory).
struct PathChange {
  const char* name;
  int path[2];   // argument indexes; -1: none
  int dirfd[2];  // argument indexes of their directory descriptors; -1: AT_FDCWD
};
constexpr PathChange kPathChanges[] = {
    {"mkdir", {0, -1}, {-1, -1}},    {"mkdirat", {1, -1}, {0, -1}},  {"rmdir", {0, -1}, {-1, -1}},
    {"unlink", {0, -1}, {-1, -1}},   {"unlinkat", {1, -1}, {0, -1}}, {"rename", {0, 1}, {-1, -1}},
    {"renameat", {1, 3}, {0, 2}},    {"renameat2", {1, 3}, {0, 2}},  {"link", {1, -1}, {-1, -1}},
    {"linkat", {3, -1}, {2, -1}},    {"symlink", {1, -1}, {-1, -1}}, {"symlinkat", {2, -1}, {1, -1}},
    {"truncate", {0, -1}, {-1, -1}}, {"mknod", {0, -1}, {-1, -1}},   {"mknodat", {1, -1}, {0, -1}},
};
constexpr int kNamespaceFlags[] = {CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET,
                                   CLONE_NEWIPC, CLONE_NEWUTS,  CLONE_NEWCGROUP};

std::string FamilyName(uint64_t family) {
  switch (family) {
    case AF_INET:
      return "AF_INET";
    case AF_INET6:
      return "AF_INET6";
    case AF_NETLINK:
      return "AF_NETLINK";
    case AF_PACKET:
      return "AF_PACKET";
    case AF_UNIX:
      return "AF_UNIX";
    default:
      return "family " + std::to_string(family);
  }
}

bool Descends(pid_t pid, pid_t ancestor) {
  for (int depth = 0; pid > 1 && depth < 64; ++depth) {
    if (pid == ancestor) return true;
    pid = ParentPid(pid);
  }
  return false;
}

// A one-byte message with room for one descriptor (SCM_RIGHTS): the listener's hand-over from
// the confined child to its supervisor.
struct FdMessage {
  char byte = 'L';
  iovec io{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  FdMessage() {
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
  }
  FdMessage(const FdMessage&) = delete;  // msg points into this object
  FdMessage& operator=(const FdMessage&) = delete;
};

bool SendFd(int sock, int fd) {
  FdMessage m;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  return sendmsg(sock, &m.msg, MSG_NOSIGNAL) == 1;
}

int ReceiveFd(int sock) {
  FdMessage m;
  if (recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC) != 1) return -1;
  cmsghdr* c = CMSG_FIRSTHDR(&m.msg);
  if (!c || c->cmsg_type != SCM_RIGHTS) return -1;
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  return fd;
}

// A filter context freed on every path.
struct FilterContext {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  ~FilterContext() {
    if (ctx) seccomp_release(ctx);
  }
};

}  // namespace

Status Sandbox::InstallFilterAndSend() {
  FilterContext f;
  if (!f.ctx) return Status::Internal("sandbox: seccomp_init failed");
  seccomp_attr_set(f.ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  const uint64_t self = static_cast<uint64_t>(getpid());
  int rc = 0;
  auto add = [&](uint32_t action, const char* name, unsigned n, const scmp_arg_cmp* cmp) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return;  // not on this architecture
    int r = seccomp_rule_add_array(f.ctx, action, nr, n, cmp);
    if (r != 0 && rc == 0) rc = r;
  };
  for (const char* name : kDenied) add(SCMP_ACT_NOTIFY, name, 0, nullptr);
  for (int flag : kNamespaceFlags) {
    scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, static_cast<uint64_t>(flag), static_cast<uint64_t>(flag));
    add(SCMP_ACT_NOTIFY, "clone", 1, &c);
  }
  add(SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, nullptr);
  // Opening for writing goes to the supervisor, which lets it through inside the writable folders
  // and records it elsewhere. openat2's flags sit in memory a filter cannot read: ENOSYS, and libc
  // and Python use openat.
  for (uint64_t flag : {uint64_t{O_WRONLY}, uint64_t{O_RDWR}, uint64_t{O_CREAT}, uint64_t{O_TRUNC}}) {
    scmp_arg_cmp open_flags = SCMP_A1(SCMP_CMP_MASKED_EQ, flag, flag);
    add(SCMP_ACT_NOTIFY, "open", 1, &open_flags);
    scmp_arg_cmp openat_flags = SCMP_A2(SCMP_CMP_MASKED_EQ, flag, flag);
    add(SCMP_ACT_NOTIFY, "openat", 1, &openat_flags);
  }
  add(SCMP_ACT_NOTIFY, "creat", 0, nullptr);
  for (const PathChange& c : kPathChanges) add(SCMP_ACT_NOTIFY, c.name, 0, nullptr);
  add(SCMP_ACT_ERRNO(ENOSYS), "openat2", 0, nullptr);
  // Sockets: AF_UNIX always; the internet families and netlink (name resolution) with the network.
  for (uint64_t family = 0; family < 64; ++family) {
    if (family == AF_UNIX) continue;
    if (spec_.network && (family == AF_INET || family == AF_INET6 || family == AF_NETLINK)) continue;
    scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, family);
    add(SCMP_ACT_NOTIFY, "socket", 1, &c);
  }
  scmp_arg_cmp large = SCMP_A0(SCMP_CMP_GE, 64);
  add(SCMP_ACT_NOTIFY, "socket", 1, &large);
  // Signals: to itself directly; anything else is decided by the supervisor, which knows the
  // sandbox's processes.
  scmp_arg_cmp not_self = SCMP_A0(SCMP_CMP_NE, self);
  for (const char* name : {"kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"})
    add(SCMP_ACT_NOTIFY, name, 1, &not_self);
  add(SCMP_ACT_NOTIFY, "tkill", 0, nullptr);
  if (rc != 0)
    return Status::Internal("sandbox: building the syscall filter failed: " + std::string(std::strerror(-rc)));
  if (int r = seccomp_load(f.ctx); r != 0)
    return Status::Internal("sandbox: loading the syscall filter failed: " + std::string(std::strerror(-r)));
  int listener = seccomp_notify_fd(f.ctx);
  const bool sent = listener >= 0 && SendFd(channel_[1], listener);
  if (listener >= 0) close(listener);
  close(channel_[1]);
  channel_[1] = -1;
  // Without a listener every filtered call fails with ENOSYS: still denied, only unrecorded.
  if (!sent) return Status::Internal("sandbox: could not hand the syscall filter's listener to the supervisor");
  return Status::Ok();
}

void Sandbox::AdoptChild(pid_t child) {
  child_ = child;
  if (channel_[1] >= 0) close(channel_[1]);
  channel_[1] = -1;
  if (channel_[0] < 0) return;
  pollfd p{channel_[0], POLLIN, 0};
  if (poll(&p, 1, 10000) == 1) listener_ = ReceiveFd(channel_[0]);
  close(channel_[0]);
  channel_[0] = -1;
  report_.syscall_filter = listener_ >= 0;
  if (!report_.syscall_filter && spec_.syscall_filter)
    report_.warnings.push_back(
        "the confined process installed no syscall filter (it ended before, or seccomp "
        "user notification is not supported here)");
}

Sandbox::Answer Sandbox::Decide(pid_t caller, int nr, const uint64_t args[6]) const {
  char* resolved = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
  const std::string name = resolved ? resolved : "syscall " + std::to_string(nr);
  std::free(resolved);
  if (name == "socket") return {false, EPERM, "socket(" + FamilyName(args[0]) + ")"};
  if (name == "clone") return {false, EPERM, "clone with namespace flags"};
  if (name == "ptrace")
    return {false, EPERM,
            "ptrace(request " + std::to_string(args[0]) + ", pid " + std::to_string(static_cast<int>(args[1])) + ")"};
  if (name == "open" || name == "openat" || name == "creat") {
    // Opened for writing: fine in the writable folders; elsewhere the view refuses it anyway
    // (read-only, or not the sandbox user's), and the attempt is recorded.
    const bool at = name == "openat";
    const std::string path = CallerPath(caller, at ? static_cast<int>(args[0]) : AT_FDCWD, args[at ? 1 : 0]);
    if (path.empty() || Writable(path)) return {true, 0, ""};
    return {false, EACCES, "open(" + path + ") for writing, outside the sandbox's writable folders"};
  }
  for (const PathChange& c : kPathChanges) {
    if (name != c.name) continue;
    for (int k = 0; k < 2; ++k) {
      if (c.path[k] < 0) continue;
      const int dirfd = c.dirfd[k] < 0 ? AT_FDCWD : static_cast<int>(args[c.dirfd[k]]);
      const std::string path = CallerPath(caller, dirfd, args[c.path[k]]);
      if (!path.empty() && !Writable(path))
        return {false, EACCES, name + "(" + path + "), outside the sandbox's writable folders"};
    }
    return {true, 0, ""};
  }
  const bool signal =
      name == "kill" || name == "tgkill" || name == "tkill" || name == "rt_sigqueueinfo" || name == "rt_tgsigqueueinfo";
  if (!signal) return {false, EPERM, name};
  const int target = static_cast<int>(args[0]);
  const int sig = static_cast<int>(name == "tgkill" ? args[2] : args[1]);
  bool ours = false;
  // Inside a PID namespace of its own, the kernel already confines signals to the sandbox.
  if (report_.pid_namespace)
    ours = true;
  else if (target == 0 || target == static_cast<int>(caller))
    ours = true;
  else if (target > 0)
    ours = Descends(target, child_);
  else if (target < -1)
    ours = Descends(-target, child_) || -target == getpgrp();
  if (ours) return {true, 0, ""};
  return {
      false, EPERM,
      name + "(pid " + std::to_string(target) + ", signal " + std::to_string(sig) + "): not a process of the sandbox"};
}

std::string Sandbox::CallerPath(pid_t caller, int dirfd, uint64_t address) const {
  const std::string proc = "/proc/" + std::to_string(caller);
  int mem = open((proc + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (mem < 0) return "";
  std::string path;
  char chunk[256];
  while (path.size() < 4096) {
    ssize_t n = pread(mem, chunk, sizeof(chunk), static_cast<off_t>(address + path.size()));
    if (n <= 0) break;
    const size_t len = strnlen(chunk, static_cast<size_t>(n));
    path.append(chunk, len);
    if (len < static_cast<size_t>(n)) break;
  }
  close(mem);
  if (path.empty()) return "";
  std::filesystem::path p(path);
  if (p.is_relative()) {
    std::error_code ec;
    const auto base =
        std::filesystem::read_symlink(dirfd == AT_FDCWD ? proc + "/cwd" : proc + "/fd/" + std::to_string(dirfd), ec);
    if (ec) return "";
    p = base / p;
  }
  return p.lexically_normal().string();
}

bool Sandbox::Writable(const std::string& path) const {
  // Devices (/dev/null, the GPU's) and the process's own /proc files are the kernel's to refuse;
  // names there are the caller's (/proc/self is not ours), so they are not resolved here.
  for (const char* dir : {"/dev", "/proc"})
    if (PathIsUnder(path, dir)) return true;
  std::error_code ec;
  const std::string real = std::filesystem::weakly_canonical(path, ec).string();
  const std::string& p = ec ? path : real;
  for (const char* dir : kScratchFolders)
    if (PathIsUnder(p, dir)) return true;
  for (const auto& dir : spec_.keep_writable)
    if (PathIsUnder(p, std::filesystem::absolute(dir, ec).lexically_normal().string())) return true;
  return false;
}

void Sandbox::AnswerSyscalls() {
  if (listener_ < 0) return;
  seccomp_notif* req = nullptr;
  seccomp_notif_resp* resp = nullptr;
  if (seccomp_notify_alloc(&req, &resp) != 0) return;
  for (;;) {
    pollfd p{listener_, POLLIN, 0};
    if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN)) break;
    std::memset(req, 0, sizeof(*req));
    if (seccomp_notify_receive(listener_, req) != 0) break;  // the caller died meanwhile
    uint64_t args[6];
    for (int i = 0; i < 6; ++i) args[i] = req->data.args[i];
    const Answer answer = Decide(static_cast<pid_t>(req->pid), req->data.nr, args);
    // What Decide read of the caller (a path) is only its own if the call is still pending.
    if (seccomp_notify_id_valid(listener_, req->id) != 0) continue;
    resp->id = req->id;
    resp->val = 0;
    resp->error = answer.allow ? 0 : -answer.error;
    resp->flags = answer.allow ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0;
    seccomp_notify_respond(listener_, resp);
    if (answer.allow) continue;
    ++report_.denied_count;
    if (report_.denied.size() < SandboxReport::kMaxDenied) report_.denied.push_back(answer.what);
  }
  seccomp_notify_free(req, resp);
}

}  // namespace kpilot
