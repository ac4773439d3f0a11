// The cuda backend's sweep (kpilot sweep): many candidate objects in one process, each checked
// and timed against the baseline exactly like a single candidate (CheckWorkload, TimeWorkload),
// so a configuration costs its check and timing loop, not a process, a context and a calibration.
#include <cuda_runtime_api.h>

#include "runner/sweep.h"
#include "runner/worker_cuda.h"

namespace kpilot {
RunResult CudaWorker::RunSweep() {
  // Setup opened the request's candidate_object too; the sweep swaps its own objects in.
  const RunResult setup = result_;
  SweepLog log(req_.sweep_objects);
  const size_t n = req_.sweep_objects.size();
  for (size_t i = 0; i < n && !log.stopped(); ++i) {
    const std::string& path = req_.sweep_objects[i];
    report_.Phase("sweep", "object " + std::to_string(i + 1) + "/" + std::to_string(n) + " " + path);
    result_ = RunResult{};
    result_.calibration = setup.calibration;  // the physical floor of TimeWorkload
    trace_json_ = nlohmann::json::array();
    library_use_.clear();
    auto object = KernelObject::Open(path, "candidate");
    bool ok = object.ok();
    if (!ok) {
      Finish("runtime_error", object.status().message());
    } else {
      candidate_ = std::move(object).value();
      for (size_t w = 0; ok && w < req_.workloads.size(); ++w) ok = CheckWorkload(req_.workloads[w]);
      if (ok && req_.time) {
        result_.phase = "timing";
        for (size_t w = 0; ok && w < req_.workloads.size(); ++w)
          ok = !req_.workloads[w].timed || TimeWorkload(req_.workloads[w]);
      }
    }
    if (ok) {
      result_.phase = "done";
      Finish("passed", "every output matched the reference on every workload and seed");
    }
    if (!library_use_.empty()) result_.details["library_use"] = library_use_;
    log.Add(i, result_);
    if (result_.status == "error") {
      log.Stop(i, result_.message);
    } else if (std::string sticky = StickyError(); !sticky.empty()) {
      log.Stop(i, "it left the CUDA context unusable (" + sticky + "); the rest need a fresh process");
    } else if (!library_use_.empty()) {
      // Libraries stay loaded: later objects would be charged with this one's use.
      log.Stop(i, "it brought in a vendor library; the rest need a fresh process");
    }
  }
  result_ = log.Finish(setup);
  return result_;
}

}  // namespace kpilot
