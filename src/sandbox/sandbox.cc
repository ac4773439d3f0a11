// The sandbox's namespaces, filesystem view and user (the syscall filter is in syscall_filter.cc).
#include "sandbox/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace kpilot {
namespace fs = std::filesystem;
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Writes `text` to a /proc file of this process (uid_map, gid_map, setgroups).
bool WriteProcFile(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

int SetMountAttr(const std::string& path, uint64_t set, uint64_t clear, bool recursive) {
  mount_attr attr{};
  attr.attr_set = set;
  attr.attr_clr = clear;
  return mount_setattr(AT_FDCWD, path.c_str(), recursive ? AT_RECURSIVE : 0, &attr, sizeof(attr));
}

// Every mount point of this namespace, from /proc/self/mountinfo (the fallback for kernels
// without mount_setattr: each is remounted read-only on its own).
std::vector<std::string> MountPoints() {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if (fields >> id >> parent >> dev >> root >> point) out.push_back(point);
  }
  return out;
}

}  // namespace

bool PathIsUnder(const std::string& path, const std::string& dir) {
  if (path == dir) return true;
  std::string prefix = dir.back() == '/' ? dir : dir + "/";
  return path.rfind(prefix, 0) == 0;
}

SandboxSpec DefaultSandboxSpec() { return SandboxSpec{}; }

Result<SandboxSpec> ApplySandboxOverride(SandboxSpec spec, const char* env_value, bool* enabled) {
  *enabled = true;
  if (!env_value || !*env_value) return spec;
  std::string value = env_value;
  if (value == "none") {
    *enabled = false;
    return spec;
  }
  std::set<std::string> on;
  std::istringstream words(value);
  for (std::string w; std::getline(words, w, ',');) {
    if (w.empty()) continue;
    static const std::set<std::string> kKnown = {"all", "pid", "net", "mount", "user", "seccomp"};
    if (!kKnown.count(w))
      return Status::InvalidInput("KPILOT_SANDBOX=" + value + ": unknown part '" + w +
                                  "' (use none, all, or a comma list of pid, net, mount, user, seccomp)");
    on.insert(w);
  }
  if (on.count("all")) return spec;
  spec.pid_namespace = spec.pid_namespace && on.count("pid");
  if (!on.count("net")) spec.network = true;
  spec.mount_namespace = on.count("mount") > 0;
  spec.drop_user = on.count("user") > 0;
  spec.syscall_filter = on.count("seccomp") > 0;
  return spec;
}

nlohmann::json ToJson(const SandboxReport& r) {
  return {{"enabled", r.enabled},
          {"pid_namespace", r.pid_namespace},
          {"net_namespace", r.net_namespace},
          {"mount_namespace", r.mount_namespace},
          {"syscall_filter", r.syscall_filter},
          {"user_namespace", r.user_namespace},
          {"user", r.user},
          {"uid", r.uid},
          {"warnings", r.warnings},
          {"denied", r.denied},
          {"denied_count", r.denied_count}};
}

SandboxReport SandboxReportFromJson(const nlohmann::json& j) {
  SandboxReport r;
  if (!j.is_object()) return r;
  r.enabled = j.value("enabled", false);
  r.pid_namespace = j.value("pid_namespace", false);
  r.net_namespace = j.value("net_namespace", false);
  r.mount_namespace = j.value("mount_namespace", false);
  r.syscall_filter = j.value("syscall_filter", false);
  r.user_namespace = j.value("user_namespace", false);
  r.user = j.value("user", "");
  r.uid = j.value("uid", -1);
  if (j.contains("warnings") && j["warnings"].is_array())
    for (const auto& w : j["warnings"])
      if (w.is_string()) r.warnings.push_back(w.get<std::string>());
  if (j.contains("denied") && j["denied"].is_array())
    for (const auto& d : j["denied"])
      if (d.is_string()) r.denied.push_back(d.get<std::string>());
  r.denied_count = j.value("denied_count", static_cast<int>(r.denied.size()));
  return r;
}

std::string SandboxSummary(const SandboxReport& r) {
  if (!r.enabled) return "off";
  std::vector<std::string> ns;
  if (r.pid_namespace) ns.push_back("pid");
  if (r.net_namespace) ns.push_back("net");
  if (r.mount_namespace) ns.push_back("mount");
  if (r.user_namespace) ns.push_back("user");
  std::string s;
  for (size_t i = 0; i < ns.size(); ++i) s += (i ? ", " : "") + ns[i];
  s = ns.empty() ? "no namespaces" : s + " namespace" + (ns.size() > 1 ? "s" : "");
  s += r.user.empty() ? "; own uid" : "; user " + r.user;
  s += r.syscall_filter ? "; syscall filter" : "; no syscall filter";
  return s;
}

Result<SandboxUser> FindSandboxUser() {
  SandboxUser u;
  for (const char* name : {"kpilot-sandbox", "nobody"}) {
    passwd pw{};
    passwd* found = nullptr;
    char buf[4096];
    if (getpwnam_r(name, &pw, buf, sizeof(buf), &found) != 0 || !found) continue;
    u.name = name;
    u.uid = found->pw_uid;
    u.gid = found->pw_gid;
    if (u.name != "kpilot-sandbox")
      u.warning =
          "the kpilot-sandbox user is missing, so candidates run as nobody, which other programs may share: "
          "run scripts/setup.sh as root to create it";
    return u;
  }
  return Status::NotFound("neither a kpilot-sandbox nor a nobody user exists: run scripts/setup.sh as root");
}

std::unique_ptr<Sandbox> Sandbox::Disabled() { return std::unique_ptr<Sandbox>(new Sandbox()); }

Sandbox::~Sandbox() {
  for (int fd : {channel_[0], channel_[1], listener_, inherited_})
    if (fd >= 0) close(fd);
}

std::unique_ptr<Sandbox> Sandbox::Enter(const SandboxSpec& spec) {
  std::unique_ptr<Sandbox> box(new Sandbox());
  box->spec_ = spec;
  SandboxReport& r = box->report_;
  r.enabled = true;
  const bool root = geteuid() == 0;
  if (!spec.inherit_file.empty()) {
    // Before the view hides its folder. Created readable and writable by all: the sandbox user
    // and other kpilot processes share it (an flock needs no write access, but make it usable).
    box->inherited_ = open(spec.inherit_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (box->inherited_ < 0) {
      box->inherited_ = open(spec.inherit_file.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
      if (box->inherited_ >= 0) fchmod(box->inherited_, 0666);
    }
    if (box->inherited_ < 0) r.warnings.push_back(Errno("could not open " + spec.inherit_file));
  }
  if (spec.drop_user && root) {
    auto user = FindSandboxUser();
    if (user.ok()) {
      box->user_ = *user;
      r.user = user->name;
      r.uid = static_cast<int>(user->uid);
      if (!user->warning.empty()) r.warnings.push_back(user->warning);
    } else {
      r.warnings.push_back(user.status().message());
    }
  } else if (spec.drop_user) {
    r.warnings.push_back("kpilot runs as uid " + std::to_string(geteuid()) +
                         ", not root, so candidates keep that uid: run kpilot as root for a sandbox user of their own");
  }
  if (r.user.empty()) {
    passwd* self = getpwuid(geteuid());
    r.user = self ? self->pw_name : std::to_string(geteuid());
    r.uid = static_cast<int>(geteuid());
  }

  int flags = 0;
  if (spec.mount_namespace) flags |= CLONE_NEWNS;
  if (!spec.network) flags |= CLONE_NEWNET;
  if (spec.pid_namespace) flags |= CLONE_NEWPID;
  if (flags && !root) {
    // Unprivileged: a user namespace grants the rights to make the others. This process becomes
    // root inside it, mapped to the caller's uid outside.
    const uid_t uid = geteuid();
    const gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER) == 0) {
      r.user_namespace = true;
      WriteProcFile("/proc/self/setgroups", "deny");
      if (!WriteProcFile("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n") ||
          !WriteProcFile("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n"))
        r.warnings.push_back(Errno("the user namespace's id maps could not be written"));
    } else {
      r.warnings.push_back(Errno("no user namespace (so no other namespaces either) for a non-root kpilot"));
      flags = 0;
    }
  }
  if (flags & CLONE_NEWNS) {
    if (unshare(CLONE_NEWNS) == 0) {
      r.mount_namespace = true;
      box->SetUpView(spec);
    } else {
      r.warnings.push_back(Errno("no mount namespace: the candidate sees the filesystem as kpilot does"));
    }
  }
  if (flags & CLONE_NEWNET) {
    r.net_namespace = unshare(CLONE_NEWNET) == 0;
    if (!r.net_namespace) r.warnings.push_back(Errno("no network namespace"));
  }
  if (flags & CLONE_NEWPID) {
    r.pid_namespace = unshare(CLONE_NEWPID) == 0;
    if (!r.pid_namespace) r.warnings.push_back(Errno("no PID namespace"));
  }
  if (spec.syscall_filter) {
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, box->channel_) != 0)
      r.warnings.push_back(Errno("no syscall filter (socketpair)"));
  }
  return box;
}

void Sandbox::SetUpView(const SandboxSpec& spec) {
  SandboxReport& r = report_;
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    r.warnings.push_back(Errno("the mount namespace could not be made private"));
    r.mount_namespace = false;
    return;
  }
  // The working folder, by name: the process's own reference to it stays in the old (read-only)
  // view, so it is entered again once the view is built.
  std::error_code cwd_ec;
  const std::string cwd = fs::current_path(cwd_ec).string();
  // Descriptors of the kept folders, taken before anything covers them.
  struct Keep {
    std::string path;
    bool writable;
    int fd;
  };
  std::vector<Keep> keeps;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& p : pass == 0 ? spec.keep_read_only : spec.keep_writable) {
      int fd = open(p.c_str(), O_PATH | O_CLOEXEC);
      if (fd < 0) {
        r.warnings.push_back(Errno("kept folder " + p));
        continue;
      }
      keeps.push_back({fs::absolute(p).lexically_normal().string(), pass == 1, fd});
    }

  // Everything read-only, then the writable and hiding layers on top.
  if (SetMountAttr("/", MOUNT_ATTR_RDONLY, 0, /*recursive=*/true) != 0) {
    for (const auto& point : MountPoints())
      mount(nullptr, point.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr);
  }
  std::vector<std::string> hidden_dirs;
  for (const auto& h : spec.hide) {
    struct stat st {};
    if (h.empty() || h == "/" || lstat(h.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (mount("tmpfs", h.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") == 0)
        hidden_dirs.push_back(h);
      else
        r.warnings.push_back(Errno("could not hide " + h));
    } else if (mount("/dev/null", h.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      r.warnings.push_back(Errno("could not hide " + h));
    }
  }
  for (const char* dir : kScratchFolders) {
    if (access(dir, F_OK) != 0) continue;
    if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=4g") != 0)
      r.warnings.push_back(Errno(std::string("no private ") + dir));
  }
  for (const auto& k : keeps) {
    std::error_code ec;
    fs::create_directories(k.path, ec);  // inside a fresh or hiding tmpfs; the rest exists
    const std::string from = "/proc/self/fd/" + std::to_string(k.fd);
    if (mount(from.c_str(), k.path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
        SetMountAttr(k.path, k.writable ? 0 : MOUNT_ATTR_RDONLY, k.writable ? MOUNT_ATTR_RDONLY : 0, false) != 0)
      r.warnings.push_back(Errno("could not keep " + k.path));
    close(k.fd);
  }
  for (const auto& h : hidden_dirs) SetMountAttr(h, MOUNT_ATTR_RDONLY, 0, false);
  if (!cwd_ec && chdir(cwd.c_str()) != 0)
    r.warnings.push_back(Errno("the working folder " + cwd + " is not in the view"));
  // Without a PID namespace of its own the child shares this one's processes: a /proc that
  // shows it only those of its own uid (root, the supervisor, still sees all).
  if (!spec.pid_namespace && mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") != 0)
    r.warnings.push_back(Errno("no private /proc (other processes stay visible)"));
}

bool Sandbox::MountNamespaceProc() {
  if (!report_.pid_namespace) return true;
  if (unshare(CLONE_NEWNS) != 0) return false;
  mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
  return mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") == 0;
}

void Sandbox::CloseInherited() {
  if (inherited_ >= 0) close(inherited_);
  inherited_ = -1;
  if (channel_[1] >= 0) close(channel_[1]);
  channel_[1] = -1;
}

void Sandbox::ClearScratch() {
  if (!report_.mount_namespace) return;
  std::vector<std::string> kept;
  for (const auto* list : {&spec_.keep_read_only, &spec_.keep_writable})
    for (const auto& k : *list) kept.push_back(fs::absolute(k).lexically_normal().string());
  // Removes what is under `dir`, except the kept folders and the folders on the way to them.
  std::function<void(const fs::path&)> clear = [&](const fs::path& dir) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string p = entry.path().string();
      bool on_way = false, is_kept = false;
      for (const auto& k : kept) {
        if (k == p)
          is_kept = true;
        else if (PathIsUnder(k, p))
          on_way = true;
      }
      if (is_kept) continue;
      if (on_way)
        clear(entry.path());
      else
        fs::remove_all(entry.path(), ec);
    }
  };
  for (const char* dir : kScratchFolders)
    if (access(dir, F_OK) == 0) clear(dir);
}

void Sandbox::ResetDenied() {
  report_.denied.clear();
  report_.denied_count = 0;
}

Status Sandbox::ConfineChild() {
  if (!report_.enabled) return Status::Ok();
  if (channel_[0] >= 0) close(channel_[0]);
  channel_[0] = -1;
  if (inherited_ >= 0 && spec_.inherit_fd >= 0) {
    if (dup2(inherited_, spec_.inherit_fd) < 0) return Status::Internal(Errno("sandbox: dup2 of the inherited file"));
    close(inherited_);
    inherited_ = -1;
  }
  if (geteuid() == 0 && !report_.user_namespace && spec_.drop_user && user_.uid != 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(user_.gid, user_.gid, user_.gid) != 0 ||
        setresuid(user_.uid, user_.uid, user_.uid) != 0)
      return Status::Internal(Errno("sandbox: could not switch to user " + user_.name));
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Status::Internal(Errno("sandbox: no_new_privs"));
  if (spec_.syscall_filter && channel_[1] >= 0) return InstallFilterAndSend();
  return Status::Ok();
}

}  // namespace kpilot
