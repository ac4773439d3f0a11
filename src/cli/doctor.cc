// kpilot doctor [--json]: what this machine offers kpilot, and how to get what is missing.
#include <dlfcn.h>

#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "device/device.h"
#include "sandbox/sandbox.h"
#include "toolchain/toolchain.h"

namespace kpilot::cli {
namespace {

// The isolation candidates get here (every backend has the same spec): kpilot-runner runs
// /bin/true in that sandbox and reports what was in force (docs/threat-model.md).
nlohmann::json ProbeSandbox(std::string* line) {
  auto dir = TempDir::Create("kpilot-doctor-");
  if (!dir.ok()) return {{"error", dir.status().message()}};
  SandboxSpec spec = DefaultSandboxSpec();
  spec.keep_writable = {dir->path().string()};
  (void)WriteFileAtomic(dir->path() / "sandbox.json", ToJson(spec).dump());
  ProcessSpec p;
  p.argv = {RunnerPath().string(), "--sandbox", (dir->path() / "sandbox.json").string(), "--", "true"};
  p.timeout_s = 30;
  auto r = SystemProcessRunner().Run(p);
  std::optional<SandboxReport> report = r.ok() ? FindSandboxReport(r->err) : std::nullopt;
  if (!report) {
    *line = "could not be probed (" + (r.ok() ? r->Describe(30) : r.status().message()) + ")";
    return {{"error", *line}};
  }
  *line = SandboxSummary(*report);
  for (const auto& w : report->warnings) *line += "\n" + std::string(21, ' ') + "warning: " + w;
  return ToJson(*report);
}

struct Check {
  std::string name;
  bool found = false;
  std::string detail;   // version or path when found, why not when missing
  std::string enables;  // what kpilot does with it
  std::string get_it;   // how to get it when missing
};

bool CanDlopen(const char* lib) {
  void* h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

Check PythonTorch() {
  Check c{"python3 + torch", false, "", "KernelBench and flashinfer-bench tasks (PyTorch references)",
          "install PyTorch for python3 (pip install torch) or pass --python"};
  if (FindOnPath("python3").empty()) {
    c.detail = "python3 not found";
    return c;
  }
  ProcessSpec spec;
  spec.argv = {"python3", "-c", "import torch; print(torch.__version__, torch.cuda.is_available())"};
  spec.timeout_s = 60;
  auto r = SystemProcessRunner().Run(spec);
  if (r.ok() && r->Succeeded()) {
    c.found = true;
    c.detail = "torch " + FirstLine(r->out);
  } else {
    c.detail = "python3 has no torch";
  }
  return c;
}

std::string CudaToolDir() {
  std::string nvcc = FindOnPath("nvcc");
  if (!nvcc.empty()) return std::filesystem::path(nvcc).parent_path().string();
  return "/usr/local/cuda/bin";
}

}  // namespace

void AddDoctorCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("doctor", "Show what this machine offers kpilot (compilers, GPUs, profilers)");
  auto json_out = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "Print JSON");
  cmd->callback([json_out, exit_code]() {
    std::vector<Check> checks;
    std::string nvcc = NvccVersion();
    checks.push_back({"nvcc", !nvcc.empty(), nvcc.empty() ? "not found" : nvcc,
                      "compiling .cu candidates (cuda backend)",
                      "install the CUDA toolkit and put its bin/ on PATH (or set CUDA_HOME)"});
    std::string gxx = GxxVersion();
    checks.push_back({"g++", !gxx.empty(), gxx.empty() ? "not found" : gxx, "compiling .cpp candidates (host backend)",
                      "apt-get install g++"});
    std::string cuobjdump = FindCuobjdump();
    checks.push_back({"cuobjdump", !cuobjdump.empty(), cuobjdump.empty() ? "not found" : cuobjdump,
                      "SASS of compiled kernels (static profile)",
                      "run scripts/setup-venv.sh (PyPI nvidia-cuda-cuobjdump) or install the CUDA toolkit"});
    auto cutlass = FindCutlass(DefaultToolSearch());
    checks.push_back({"CUTLASS/CuTe", cutlass.has_value(),
                      cutlass ? cutlass->version + " at " + cutlass->include.string() : "not found",
                      "CuTe and CUTLASS headers on CUDA candidates' include path",
                      "run scripts/setup-venv.sh (PyPI nvidia-cutlass), or set KPILOT_CUTLASS to a CUTLASS checkout"});
    std::string nvdisasm = FindOnPath("nvdisasm");
    if (nvdisasm.empty() && !cuobjdump.empty()) {
      auto sibling = std::filesystem::path(cuobjdump).parent_path() / "nvdisasm";
      if (std::filesystem::exists(sibling)) nvdisasm = sibling.string();
    }
    checks.push_back({"nvdisasm", !nvdisasm.empty(), nvdisasm.empty() ? "not found" : nvdisasm,
                      "control-flow and register detail of SASS",
                      "run scripts/setup-venv.sh (PyPI nvidia-cuda-nvdisasm) or install the CUDA toolkit"});
    std::string ncu = FindOnPath("ncu");
    checks.push_back({"ncu", !ncu.empty(), ncu.empty() ? "not found" : ncu, "hardware counters (kernel profile)",
                      "install Nsight Compute and put ncu on PATH"});
    bool nvml = CanDlopen("libnvidia-ml.so.1");
    checks.push_back({"NVML", nvml, nvml ? "libnvidia-ml.so.1" : "not found", "energy per call, GPU processes",
                      "comes with the NVIDIA driver"});
    bool cupti = CanDlopen("libcupti.so") || CanDlopen("libcupti.so.13") || CanDlopen("libcupti.so.12") ||
                 std::filesystem::exists(std::filesystem::path(CudaToolDir()).parent_path() / "extras/CUPTI/lib64");
    checks.push_back({"CUPTI", cupti, cupti ? "present" : "not found", "launch traces (kernels on every stream)",
                      "comes with the CUDA toolkit (extras/CUPTI)"});
    checks.push_back(PythonTorch());
    // Slurm's client commands (docs/slurm.md); the cluster itself answers only when asked for an allocation.
    std::string sbatch = FindOnPath("sbatch");
    std::string slurm_version = sbatch.empty() ? "" : Trim(ToolVersionOutput(SystemProcessRunner(), sbatch));
    std::string slurm_detail = "not found";
    if (!sbatch.empty())
      slurm_detail = slurm_version.empty()
                         ? sbatch + " (sbatch --version failed: no cluster config here? set SLURM_CONF)"
                         : slurm_version + " (" + sbatch + ")";
    checks.push_back({"Slurm", !sbatch.empty() && !FindOnPath("srun").empty(), slurm_detail,
                      "--executor slurm and --compile-on slurm: evaluations and compiles on a cluster",
                      "apt-get install slurm-client with the cluster's slurm.conf, or name the commands in the "
                      "[slurm] config (docs/slurm.md)"});

    std::string why_none;
    std::vector<GpuInfo> gpus = SystemGpuProbe().List(&why_none);
    std::string host_line;
    const nlohmann::json probed = ProbeSandbox(&host_line);
    const std::string& cuda_line = host_line;
    nlohmann::json sandbox = {{"host_and_torch_cpu", probed}, {"cuda_and_torch_gpu", probed}};

    if (*json_out) {
      nlohmann::json j;
      j["tools"] = nlohmann::json::array();
      for (const auto& c : checks)
        j["tools"].push_back({{"name", c.name},
                              {"found", c.found},
                              {"detail", c.detail},
                              {"enables", c.enables},
                              {"how_to_get", c.found ? "" : c.get_it}});
      j["gpus"] = nlohmann::json::array();
      for (const auto& g : gpus)
        j["gpus"].push_back({{"index", g.index},
                             {"name", g.name},
                             {"sm_count", g.sm_count},
                             {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
                             {"arch", g.Arch()},
                             {"memory_bytes", g.memory_bytes},
                             {"sm_clock_mhz", g.sm_clock_khz / 1000},
                             {"memory_clock_mhz", g.memory_clock_khz / 1000},
                             {"l2_bytes", g.l2_bytes},
                             {"driver", g.driver_version}});
      if (gpus.empty()) j["gpus_none_reason"] = why_none;
      j["sandbox"] = sandbox;
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << "GPUs:\n";
      if (gpus.empty()) std::cout << "  none (" << why_none << ") — the cuda backend needs an NVIDIA GPU\n";
      for (const auto& g : gpus)
        std::cout << fmt::format(
            "  [{}] {} — {} SMs, compute capability {}.{} ({}), {:.1f} GiB, SM {} MHz, "
            "memory {} MHz, L2 {:.0f} MiB, driver {}\n",
            g.index, g.name, g.sm_count, g.cc_major, g.cc_minor, g.Arch(), g.memory_bytes / double(1ll << 30),
            g.sm_clock_khz / 1000, g.memory_clock_khz / 1000, g.l2_bytes / double(1 << 20), g.driver_version);
      std::cout << "Tools:\n";
      for (const auto& c : checks) {
        std::cout << fmt::format("  {:<16} {:<8} {}\n", c.name, c.found ? "ok" : "missing", c.detail);
        std::cout << fmt::format("  {:<16} {:<8} enables: {}\n", "", "", c.enables);
        if (!c.found) std::cout << fmt::format("  {:<16} {:<8} get it: {}\n", "", "", c.get_it);
      }
      std::cout << "Sandbox for candidate code (docs/threat-model.md):\n";
      std::cout << fmt::format("  {:<18} {}\n", "host, torch (CPU)", host_line);
      std::cout << fmt::format("  {:<18} {}\n", "cuda, torch (GPU)", cuda_line);
    }
    *exit_code = kExitOk;
  });
}

}  // namespace kpilot::cli
