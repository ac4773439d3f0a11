// kpilot calibrate: the GPU's measured ceilings, once per GPU, cached in the store. Every cuda
// evaluation reads them from there (and measures the small set it needs when they are missing).
#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "core/fs.h"
#include "core/subprocess.h"
#include "runner/protocol.h"

namespace kpilot::cli {

std::string CalibrationKey(const GpuInfo& g) {
  return fmt::format("calibration/v1/{}/driver {}/{} SMs/{} MHz", g.name, g.driver_version, g.sm_count,
                     g.sm_clock_khz / 1000);
}

Calibration LoadCalibration(Store* store, const GpuInfo& gpu, nlohmann::json* full) {
  Calibration c;
  if (!store) return c;
  auto v = store->GetValue(CalibrationKey(gpu));
  if (!v.ok() || !v->has_value()) return c;
  nlohmann::json j = nlohmann::json::parse(**v, nullptr, false);
  if (j.is_discarded()) return c;
  c.gpu = j.value("gpu", "");
  c.dram_bytes_per_s = j.value("dram_bytes_per_s", 0.0);
  c.fp32_flops_per_s = j.value("fp32_flops_per_s", 0.0);
  if (full) *full = j;
  return c;
}

Status SaveCalibration(Store& store, const GpuInfo& gpu, const Calibration& c, const nlohmann::json& details) {
  nlohmann::json j = details.is_object() ? details : nlohmann::json::object();
  j["gpu"] = c.gpu;
  j["dram_bytes_per_s"] = c.dram_bytes_per_s;
  j["fp32_flops_per_s"] = c.fp32_flops_per_s;
  return store.PutValue(CalibrationKey(gpu), j.dump());
}

namespace {

void Print(const nlohmann::json& c, const std::string& where) {
  auto tb = [](double v) { return fmt::format("{:.2f} TB/s", v / 1e12); };
  auto tf = [](double v) { return fmt::format("{:.1f} TFLOP/s", v / 1e12); };
  std::cout << "gpu          " << c.value("gpu", "") << "\n";
  std::cout << "DRAM         " << tb(c.value("dram_bytes_per_s", 0.0)) << " (device-to-device copy, read + write)\n";
  if (c.contains("l2_bytes_per_s"))
    std::cout << "L2           " << tb(c["l2_bytes_per_s"].get<double>()) << " (reads)\n";
  std::cout << "FP32         " << tf(c.value("fp32_flops_per_s", 0.0)) << " (FFMA)\n";
  if (c.contains("mma_sync_flops_per_s"))
    for (auto it = c["mma_sync_flops_per_s"].begin(); it != c["mma_sync_flops_per_s"].end(); ++it)
      std::cout << fmt::format("{:<12} {} (mma.sync; wgmma on Hopper reaches more)\n", it.key(), tf(it->get<double>()));
  if (c.contains("launch_device_us"))
    std::cout << fmt::format("launch       {:.2f} µs per queued kernel, {:.2f} µs host per launch call\n",
                             c["launch_device_us"].get<double>(), c["launch_host_us"].get<double>());
  if (c.contains("sm_count"))
    std::cout << fmt::format("device       {} SMs, L2 {:.0f} MiB, {} KiB shared per SM, {} registers per SM\n",
                             c["sm_count"].get<int>(), c.value("l2_bytes", 0.0) / (1 << 20),
                             c.value("shared_per_sm", 0) / 1024, c.value("registers_per_sm", 0));
  std::cout << "stored       " << where << "\n";
}

}  // namespace

void AddCalibrateCommand(CLI::App& app, int* exit_code) {
  struct Args {
    std::string store_dir = ".kpilot";
    int device = 0;
    bool force = false;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("calibrate", "Measure this GPU's ceilings (DRAM, L2, FP32, tensor cores, launch)");
  cmd->add_option("--store", a->store_dir, "Store folder")->capture_default_str();
  cmd->add_option("--device", a->device, "CUDA device index")->capture_default_str();
  cmd->add_flag("--force", a->force, "Measure again even if the store has this GPU's values");
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->callback([a, exit_code]() {
    auto found = GpuAtIndex(SystemGpuProbe(), a->device);
    if (!found.ok()) {
      *exit_code = Fail(found.status().WithContext("kpilot calibrate measures an NVIDIA GPU"));
      return;
    }
    const GpuInfo& gpu = *found;
    auto store = Store::Open(a->store_dir);
    if (!store.ok()) {
      *exit_code = Fail(store.status());
      return;
    }
    nlohmann::json cached;
    Calibration c = LoadCalibration(store->get(), gpu, &cached);
    if (!a->force && c.valid() && cached.contains("mma_sync_flops_per_s")) {
      if (a->json)
        std::cout << cached.dump(2) << "\n";
      else
        Print(cached, (*store)->dir().string() + " (cached; --force measures again)");
      *exit_code = kExitOk;
      return;
    }
    auto dir = TempDir::Create("kpilot-calibrate-");
    if (!dir.ok()) {
      *exit_code = Fail(dir.status());
      return;
    }
    RunRequest req;
    req.backend = Backend::kCuda;
    req.calibrate_only = true;
    req.device = a->device;
    req.time = false;
    req.timeout_s = 300;
    Status w = WriteFileAtomic(dir->path() / "request.json", ToJson(req).dump());
    if (!w.ok()) {
      *exit_code = Fail(w);
      return;
    }
    if (!a->json) std::cerr << "kpilot: calibrating " << gpu.name << " …\n";
    ProcessSpec spec;
    spec.argv = {RunnerPath().string(), "--request", (dir->path() / "request.json").string()};
    spec.cwd = dir->path();
    spec.env = ScrubbedEnvironment();
    spec.timeout_s = 330;
    auto run = SystemProcessRunner().Run(spec);
    if (!run.ok()) {
      *exit_code = Fail(run.status().WithContext("starting kpilot-runner"));
      return;
    }
    auto result = RunResultFromJson(nlohmann::json::parse(run->out, nullptr, false));
    if (!result.ok() || result->status != "passed") {
      *exit_code = Fail(Status::Internal(
          "calibration failed: " + (result.ok() ? result->message : run->Describe() + " " + Tail(run->err, 500))));
      return;
    }
    nlohmann::json details = result->details.value("calibration", nlohmann::json::object());
    Status s = SaveCalibration(**store, gpu, result->calibration, details);
    if (!s.ok()) {
      *exit_code = Fail(s);
      return;
    }
    details["gpu"] = result->calibration.gpu;
    if (a->json)
      std::cout << details.dump(2) << "\n";
    else
      Print(details, (*store)->dir().string());
    for (const auto& warning : result->warnings) std::cerr << "warning: " << warning << "\n";
    *exit_code = kExitOk;
  });
}

}  // namespace kpilot::cli
