// The system toolchain's SASS: cuobjdump on a compiled object (ExtractSass), or on the cubin of a
// device-only compile run beside the full one (SassBeside).
#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "core/fs.h"
#include "toolchain/system_toolchain.h"

namespace kpilot::toolchain {
namespace {

constexpr double kCuobjdumpTimeoutS = 60;

// The device-only compile beside a full one: the same argv, with `-cubin` and the cubin as its
// output, and without `-shared` (nothing is linked). nvcc makes the same cubin either way: the
// SASS of both was byte for byte the same (row_softmax, nvcc 13.0).
std::vector<std::string> CubinCommand(std::vector<std::string> argv, const fs::path& cubin) {
  std::erase(argv, std::string("-shared"));
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "-o") argv[i + 1] = cubin.string();
  argv.insert(argv.begin() + 1, "-cubin");
  return argv;
}

// Runs `spec` (a cuobjdump -sass) and takes its output as the SASS when it succeeded and found
// a function; false leaves `out` as it was.
bool TakeSass(ProcessRunner& runner, const ProcessSpec& spec, CompileOutput& out) {
  auto r = runner.Run(spec);
  if (!r.ok() || !r->Succeeded() || r->out.find("Function : ") == std::string::npos) return false;
  out.sass = r->out;
  out.sass_status = "ok";
  return true;
}

// Whether `cuobjdump -xelf all` into one folder keeps every ELF that can hold kernels, from the
// `cuobjdump -lelf` listing ("ELF file    1: name.sm_90a.cubin"): all names differ, or there are
// two of one name (nvcc -shared's empty device-link ELF, then the kernels' one, which is kept).
bool ElfsExtractWhole(const std::string& listing) {
  std::vector<std::string> names;
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ELF file", 0) != 0) continue;
    auto colon = line.find(": ");
    if (colon != std::string::npos) names.push_back(line.substr(colon + 2));
  }
  if (names.empty()) return false;
  if (names.size() == 2 && names[0] == names[1]) return true;
  std::sort(names.begin(), names.end());
  return std::adjacent_find(names.begin(), names.end()) == names.end();
}

const char* const kNoCuobjdump =
    "unavailable: cuobjdump not found — run the setup script or install the "
    "nvidia-cuda-cuobjdump PyPI package";

}  // namespace

bool SassCoversKernels(const std::string& sass, const std::vector<KernelResources>& resources) {
  if (resources.empty()) return false;
  std::set<std::string> functions, kernels;
  for (const auto& f : ParseSass(sass)) functions.insert(f.name);
  for (const auto& k : resources) kernels.insert(k.mangled.empty() ? k.name : k.mangled);
  return functions == kernels;
}

void SystemToolchain::ExtractSass(const fs::path& object, CompileOutput& out,
                                  std::shared_ptr<const std::atomic<bool>> cancel, int nice) {
  std::string tool = FindCuobjdump(search_);
  if (tool.empty()) {
    out.sass_status = kNoCuobjdump;
    return;
  }
  ProcessSpec spec;
  spec.timeout_s = kCuobjdumpTimeoutS;
  spec.cancel = std::move(cancel);
  spec.nice = nice;
  // cuobjdump disassembles each ELF of an object at a fixed cost (0.3 s on the development
  // machine, 0.6 s on the H200's host), and nvcc -shared puts an empty device-link ELF first,
  // under the name of the kernels' one. Extracted into one folder, the kernels' ELF is the one
  // left: disassembling that alone halves the cost. Only for the layouts ElfsExtractWhole
  // accepts; the whole object is disassembled otherwise, and when the extract finds no function.
  std::error_code ec;
  const std::string absolute = fs::absolute(object, ec).string();
  spec.argv = {tool, "-lelf", absolute};
  auto listed = runner_.Run(spec);
  std::optional<TempDir> dir;
  if (listed.ok() && listed->Succeeded() && ElfsExtractWhole(listed->out))
    if (auto made = TempDir::Create("kpilot-sass-"); made.ok()) dir.emplace(std::move(*made));
  if (dir) {
    spec.argv = {tool, "-xelf", "all", absolute};
    spec.cwd = dir->path();
    auto extracted = runner_.Run(spec);
    std::vector<std::string> cubins;
    if (extracted.ok() && extracted->Succeeded())
      for (const auto& f : fs::directory_iterator(dir->path(), ec))
        if (f.path().extension() == ".cubin") cubins.push_back(f.path().filename().string());
    if (!cubins.empty()) {
      std::sort(cubins.begin(), cubins.end());
      spec.argv = {tool, "-sass"};
      spec.argv.insert(spec.argv.end(), cubins.begin(), cubins.end());
      if (TakeSass(runner_, spec, out)) return;
    }
    spec.cwd.reset();
  }
  if (spec.cancel && spec.cancel->load()) {
    out.sass_status = "unavailable: cancelled";
    return;
  }
  spec.argv = {tool, "-sass", object.string()};
  auto r = runner_.Run(spec);
  if (!r.ok()) {
    out.sass_status = "unavailable: " + r.status().message();
  } else if (!r->Succeeded()) {
    out.sass_status = "unavailable: " + tool + " -sass " + r->Describe(spec.timeout_s) + ": " + Tail(r->err, 300);
  } else {
    out.sass = r->out;
    out.sass_status = "ok";
  }
}

void SystemToolchain::SassBeside(const ProcessSpec& compile, const std::string& cuobjdump,
                                 std::shared_ptr<const std::atomic<bool>> stop, CompileOutput& out) {
  auto dir = TempDir::Create("kpilot-cubin-");
  if (!dir.ok()) {
    out.sass_status = "unavailable: " + dir.status().message();
    return;
  }
  const fs::path cubin = dir->path() / "device.cubin";
  ProcessSpec spec = compile;
  spec.argv = CubinCommand(compile.argv, cubin);
  spec.cancel = stop;
  auto built = runner_.Run(spec);
  if (!built.ok() || !built->Succeeded()) {
    out.sass_status = "unavailable: the device-only compile did not succeed";
    return;
  }
  ProcessSpec dump;
  dump.argv = {cuobjdump, "-sass", cubin.string()};
  dump.timeout_s = kCuobjdumpTimeoutS;
  dump.cancel = stop;
  dump.nice = compile.nice;
  if (!TakeSass(runner_, dump, out))
    out.sass_status = "unavailable: cuobjdump on the device-only compile's cubin did not succeed";
}

}  // namespace kpilot::toolchain
