// A loaded candidate, reference or baseline shared object.
//
// The handle is deliberately never dlclose'd: a candidate may leave threads running in a library
// it pulled in (OpenMP's thread pool keeps spinning after a parallel region), and unloading that
// library under them crashes the process. The process exit releases everything; a runner that
// serves many requests (kpilot-runner --serve) keeps every candidate it loaded.
#pragma once

#include <memory>
#include <set>
#include <string>

#define KPILOT_NO_ABI_EXPORT
#include "kpilot/kernel.h"
#include <vector>

#include "core/status.h"
#include "runner/protocol.h"

namespace kpilot {

class KernelObject {
 public:
  // Loads `path` (RTLD_NOW | RTLD_LOCAL), checks `kpilot_abi_version()` against
  // KPILOT_ABI_VERSION and resolves `kpilot_launch`. The error says what is wrong and how to fix
  // it: unloadable object (dlerror), missing entry symbol (with a hint when only a C++-mangled
  // one exists), missing or mismatched ABI version. `role` ("candidate", …) names it in messages.
  static Result<KernelObject> Open(const std::string& path, const std::string& role);

  kpilot_launch_fn launch() const { return launch_; }

 private:
  void* handle_ = nullptr;  // never closed, see above
  kpilot_launch_fn launch_ = nullptr;
};

// The names of every shared object loaded into this process (dl_iterate_phdr): what dlopen was
// given for objects loaded by path.
std::set<std::string> LoadedObjects();

// The ABI descriptor of a row-major tensor at `data` (borrowing spec's name).
kpilot_tensor MakeTensor(const RunTensor& spec, void* data);
// The ABI scalars of a workload, in the task's order (borrowing the request's names).
std::vector<kpilot_scalar> MakeScalars(const RunRequest& req, const RunWorkload& w);

}  // namespace kpilot
