#include "runner/kernel_object.h"

#include <dlfcn.h>
#include <link.h>

#include "core/fs.h"

namespace kpilot {

Result<KernelObject> KernelObject::Open(const std::string& path, const std::string& role) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* err = dlerror();
    return Status::InvalidInput("cannot load the " + role + " (" + path + "): " + (err ? err : "unknown dlopen error"));
  }
  KernelObject obj;
  obj.handle_ = h;
  dlerror();
  auto version_fn = reinterpret_cast<kpilot_abi_version_fn>(dlsym(h, "kpilot_abi_version"));
  if (!version_fn)
    return Status::InvalidInput("the " + role +
                                " does not export kpilot_abi_version(): include <kpilot/kernel.h> "
                                "in its source (the header defines it)");
  int version = version_fn();
  if (version != KPILOT_ABI_VERSION)
    return Status::InvalidInput("the " + role + " was built for candidate ABI version " + std::to_string(version) +
                                ", this runner expects " + std::to_string(KPILOT_ABI_VERSION) +
                                " — rebuild it against the kpilot/kernel.h shipped with this kpilot");
  obj.launch_ = reinterpret_cast<kpilot_launch_fn>(dlsym(h, "kpilot_launch"));
  if (!obj.launch_) {
    std::string hint =
        "define it as: KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs, "
        "const kpilot_tensor* outputs, int num_outputs, const kpilot_scalar* scalars, "
        "int num_scalars, void* stream)";
    auto bytes = ReadFile(path);
    if (bytes.ok() && bytes->find("kpilot_launch") != std::string::npos)
      hint = "a kpilot_launch symbol exists but not with C linkage (C++ name mangling?) or not exported; " + hint;
    return Status::InvalidInput("the " + role + " does not export kpilot_launch: " + hint);
  }
  return obj;
}

std::set<std::string> LoadedObjects() {
  std::set<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        if (info->dlpi_name && *info->dlpi_name) static_cast<std::set<std::string>*>(data)->insert(info->dlpi_name);
        return 0;
      },
      &names);
  return names;
}

kpilot_tensor MakeTensor(const RunTensor& spec, void* data) {
  kpilot_tensor t{};
  t.data = data;
  t.dtype = static_cast<int32_t>(spec.dtype);
  t.rank = static_cast<int32_t>(spec.shape.size());
  int64_t stride = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    t.shape[i] = spec.shape[static_cast<size_t>(i)];
    t.strides[i] = stride;
    stride *= spec.shape[static_cast<size_t>(i)];
  }
  t.name = spec.name.c_str();
  return t;
}

std::vector<kpilot_scalar> MakeScalars(const RunRequest& req, const RunWorkload& w) {
  std::vector<kpilot_scalar> out;
  for (size_t i = 0; i < req.scalars.size(); ++i) {
    kpilot_scalar s{};
    s.name = req.scalars[i].name.c_str();
    s.dtype = static_cast<int32_t>(req.scalars[i].dtype);
    if (IsFloat(req.scalars[i].dtype))
      s.value.f = w.scalar_values[i];
    else
      s.value.i = static_cast<int64_t>(w.scalar_values[i]);
    out.push_back(s);
  }
  return out;
}

}  // namespace kpilot
