// The cuda backend: setup (the GPU lock, the device, the objects, calibration), the buffers and
// calls every step uses, and the order of a run. The correctness trials live in
// correctness_cuda.cc, timing in timing_cuda.cc, profile-only requests in profile_cuda.cc.
#include "runner/worker_cuda.h"

#include <fcntl.h>
#include <link.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "runner/checks.h"

namespace kpilot {
namespace {

// The per-GPU timing lock: an flock on a file, held while one request runs (released by
// ~CudaWorker, or by the kernel when the process ends, however it ends). In the sandbox the lock's
// folder is hidden, and the supervisor passes the file opened at kGpuLockFd.
int AcquireGpuLock(const std::string& dir, int device, double* waited_s) {
  std::string path = dir + "/kpilot-gpu-" + std::to_string(device) + ".lock";
  int fd = -1;
  char target[4096];
  ssize_t n = readlink(("/proc/self/fd/" + std::to_string(kGpuLockFd)).c_str(), target, sizeof(target) - 1);
  if (n > 0 && std::string(target, static_cast<size_t>(n)) == path) fd = fcntl(kGpuLockFd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  auto t0 = std::chrono::steady_clock::now();
  while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  *waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return fd;
}

}  // namespace

CudaWorker::CudaWorker(const RunRequest& request, PhaseReporter& reporter, CudaDevice& device)
    : req_(request),
      report_(reporter),
      dev_(device),
      stream_(device.stream),
      tracer_(device.tracer),
      stream_id_(device.stream_id),
      nvml_(device.nvml),
      nvml_index_(device.nvml_index) {}

CudaWorker::~CudaWorker() {
  if (lock_fd_ >= 0) {
    // Explicitly: a descriptor duplicated from the inherited one shares its lock, which closing
    // this copy alone would not drop.
    flock(lock_fd_, LOCK_UN);
    close(lock_fd_);
  }
}

bool CudaWorker::Finish(const std::string& status, const std::string& message) {
  result_.status = status;
  result_.message = message;
  return false;
}

void CudaWorker::Mark(const std::string& what) { report_.Phase("mark", what); }

void CudaWorker::Stamp(const std::string& step) {
  timeline_[step] = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

bool CudaWorker::OpenDevice() {
  // Only the assigned GPU is visible to this process (and so to the candidate): CUDA reads
  // CUDA_VISIBLE_DEVICES at its first call, which is the one below, and numbers that GPU 0.
  const std::string visible = VisibleDeviceEntry(std::getenv("CUDA_VISIBLE_DEVICES"), req_.device);
  if (visible.empty())
    return Finish("error", "CUDA device " + std::to_string(req_.device) +
                               " is not among CUDA_VISIBLE_DEVICES=" + std::getenv("CUDA_VISIBLE_DEVICES"));
  setenv("CUDA_VISIBLE_DEVICES", visible.c_str(), 1);
  dev_.ordinal = 0;
  cudaError_t e = cudaSetDevice(dev_.ordinal);
  if (e == cudaSuccess) e = cudaFree(nullptr);  // creates the context
  if (e != cudaSuccess)
    return Finish("error", "cannot use CUDA device " + std::to_string(req_.device) + ": " + CudaErrorText(e));
  dev_.device = req_.device;
  stream_.emplace();
  cudaDeviceProp& prop = dev_.prop;
  cudaGetDeviceProperties(&prop, dev_.ordinal);
  char pci[32] = {0};
  cudaDeviceGetPCIBusId(pci, sizeof(pci), dev_.ordinal);
  int driver = 0;
  cudaDriverGetVersion(&driver);
  dev_.gpu = {{"name", prop.name},
              {"sm_count", prop.multiProcessorCount},
              {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
              {"l2_bytes", prop.l2CacheSize},
              {"memory_bytes", prop.totalGlobalMem},
              {"pci_bus_id", pci},
              {"driver", std::to_string(driver / 1000) + "." + std::to_string((driver % 1000) / 10)}};
  Stamp("context");

  auto nvml = Nvml::Open();
  if (nvml.ok()) {
    nvml_ = std::move(nvml).value();
    auto idx = nvml_->NvmlIndexForPciBusId(pci);
    if (idx.ok()) nvml_index_ = *idx;
    // "driver" above is the CUDA version the driver supports; this is the driver's own release.
    if (auto v = nvml_->DriverVersion(); v.ok()) dev_.gpu["driver_version"] = *v;
  } else {
    dev_.warnings.push_back("NVML unavailable (" + nvml.status().message() + "): no energy, no process list");
  }
  // KPILOT_NO_CUPTI=1 leaves CUPTI to a profiler (ncu) that needs it for itself. A profile-only
  // run needs no launch trace (and CUPTI's counters replay kernels without one).
  const char* no_cupti = std::getenv("KPILOT_NO_CUPTI");
  if (!req_.profile_only) {
    auto tracer = no_cupti && *no_cupti == '1'
                      ? Result<std::unique_ptr<CuptiTracer>>(Status::Unavailable("KPILOT_NO_CUPTI=1"))
                      : CuptiTracer::Start();
    if (tracer.ok()) {
      tracer_ = std::move(tracer).value();
      auto id = tracer_->StreamId(stream_->get());
      if (id.ok())
        stream_id_ = *id;
      else
        tracer_.reset();
    }
    if (!tracer_)
      dev_.warnings.push_back("CUPTI unavailable (" +
                              (tracer.ok() ? std::string("no stream id") : tracer.status().message()) +
                              "): no launch trace; side-stream work is judged by the host clock alone");
  }
  return true;
}

bool CudaWorker::OpenDeviceOnly() {
  double waited = 0;
  lock_fd_ = AcquireGpuLock(req_.lock_dir, req_.device, &waited);
  return OpenDevice();
}

bool CudaWorker::Setup() {
  result_.phase = "load";
  double waited = 0;
  lock_fd_ = AcquireGpuLock(req_.lock_dir, req_.device, &waited);
  // The supervisor's wall-clock limit starts at this first phase line, after the lock.
  report_.Phase("load", "");
  Stamp("gpu_lock");
  if (lock_fd_ < 0)
    result_.warnings.push_back("could not open the GPU lock file in " + req_.lock_dir +
                               "; another kpilot may time on this GPU at the same time");
  result_.details["gpu_lock_wait_s"] = waited;

  if (dev_.device < 0) {
    if (!OpenDevice()) return false;
  } else if (dev_.device != req_.device) {
    return Finish("error", "this runner serves CUDA device " + std::to_string(dev_.device) + ", not device " +
                               std::to_string(req_.device) + "; start another runner for it");
  } else {
    Stamp("context");
  }
  const cudaDeviceProp& prop = dev_.prop;
  sm_count_ = prop.multiProcessorCount;
  l2_bytes_ = prop.l2CacheSize;
  result_.details["gpu"] = dev_.gpu;
  for (const auto& w : dev_.warnings) result_.warnings.push_back(w);
  if (nvml_ && nvml_index_ >= 0) {
    auto procs = nvml_->ComputeProcesses(nvml_index_);
    if (procs.ok()) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& p : *procs) list.push_back({{"pid", p.pid}, {"name", p.name}, {"used_bytes", p.used_bytes}});
      result_.details["gpu_processes"] = list;
      // This process is one of them once its context exists.
      if (procs->size() > 1) {
        std::string names;
        for (const auto& p : *procs)
          names += (names.empty() ? "" : ", ") + std::to_string(p.pid) + (p.name.empty() ? "" : " " + p.name);
        result_.warnings.push_back("other processes use this GPU while kpilot times on it: " + names);
      }
    }
  }
  result_.details["cupti"] = tracer_ != nullptr;
  Stamp("nvml_and_trace");

  if (req_.calibrate_only) return Calibrate();
  auto ref = KernelObject::Open(req_.reference_object, "reference");
  if (!ref.ok()) return Finish("error", ref.status().message());
  reference_ = std::move(ref).value();
  auto base = KernelObject::Open(req_.baseline_object, "baseline");
  if (!base.ok()) return Finish("error", base.status().message());
  baseline_ = std::move(base).value();
  libraries_before_ = LoadedObjects();
  auto cand = KernelObject::Open(req_.candidate_object, "candidate");
  if (!cand.ok()) return Finish("runtime_error", cand.status().message());
  candidate_ = std::move(cand).value();
  Stamp("objects");

  if (req_.calibration.valid() || req_.profile_only) {
    result_.calibration = req_.calibration;
  } else {
    report_.Phase("calibrate", "");
    return MeasureBasicCalibration(prop);
  }
  return true;
}

bool CudaWorker::MeasureBasicCalibration(const cudaDeviceProp& prop) {
  Calibration c;
  c.gpu = std::string(prop.name) + " / driver " + result_.details["gpu"]["driver"].get<std::string>() + " / " +
          std::to_string(prop.multiProcessorCount) + " SMs";
  size_t bytes = std::min<size_t>(1ull << 30, prop.totalGlobalMem / 8);
  int e1 = DeviceMeasureCopyBandwidth(bytes, &c.dram_bytes_per_s, stream_->get());
  int e2 = e1 ? 0 : DeviceMeasureFp32Peak(sm_count_, &c.fp32_flops_per_s, stream_->get());
  if (e1 || e2)
    return Finish("error", "GPU calibration failed: " + CudaErrorText(static_cast<cudaError_t>(e1 ? e1 : e2)));
  result_.calibration = c;
  result_.calibration_measured = true;
  return true;
}

std::vector<kpilot_scalar> CudaWorker::Scalars(const RunWorkload& w) const { return MakeScalars(req_, w); }

Result<DeviceTensors> CudaWorker::MakeInputs(const RunWorkload& w, uint64_t seed) {
  DeviceTensors d;
  for (size_t i = 0; i < w.inputs.size(); ++i) {
    const RunTensor& in = w.inputs[i];
    int64_t n = Numel(in.shape);
    auto buf = DeviceBuffer::Allocate(static_cast<size_t>(n) * DTypeSize(in.dtype));
    if (!buf.ok()) return buf.status();
    int e = DeviceFillInit(in.dtype, in.init, seed, i, buf->get(), n, stream_->get());
    if (e) return Status::Internal("generating input " + in.name + ": " + CudaErrorText(static_cast<cudaError_t>(e)));
    d.tensors.push_back(MakeTensor(in, buf->get()));
    d.buffers.push_back(std::move(buf).value());
  }
  cudaError_t e = cudaStreamSynchronize(stream_->get());
  if (e != cudaSuccess) return Status::Internal("generating inputs: " + CudaErrorText(e));
  return d;
}

Result<DeviceTensors> CudaWorker::MakeOutputs(const RunWorkload& w, bool guarded) {
  DeviceTensors d;
  d.guarded = guarded;
  size_t pad = guarded ? kCanaryBytes : 0;
  for (const auto& out : w.outputs) {
    int64_t n = Numel(out.shape);
    size_t bytes = static_cast<size_t>(n) * DTypeSize(out.dtype);
    auto buf = DeviceBuffer::Allocate(bytes + 2 * pad);
    if (!buf.ok()) return buf.status();
    char* base = static_cast<char*>(buf->get());
    if (guarded) {
      cudaMemsetAsync(base, kCanaryByte, pad, stream_->get());
      cudaMemsetAsync(base + pad + bytes, kCanaryByte, pad, stream_->get());
    }
    int e = DevicePoison(out.dtype, base + pad, n, stream_->get());
    if (e) return Status::Internal("poisoning output " + out.name + ": " + CudaErrorText(static_cast<cudaError_t>(e)));
    d.tensors.push_back(MakeTensor(out, base + pad));
    d.buffers.push_back(std::move(buf).value());
  }
  cudaError_t e = cudaStreamSynchronize(stream_->get());
  if (e != cudaSuccess) return Status::Internal("preparing outputs: " + CudaErrorText(e));
  return d;
}

void CudaWorker::Call(kpilot_launch_fn fn, const DeviceTensors& in, const DeviceTensors& out,
                      const std::vector<kpilot_scalar>& scalars, std::string* error) {
  error->clear();
  // The candidate gets copies of the descriptors: one that repoints outputs[i].data at a buffer
  // of its own changes only its copy, and the checks still read the buffers kpilot allocated.
  std::vector<kpilot_tensor> in_copy = in.tensors, out_copy = out.tensors;
  std::vector<kpilot_scalar> scalar_copy = scalars;
  int rc = fn(in_copy.data(), static_cast<int>(in_copy.size()), out_copy.data(), static_cast<int>(out_copy.size()),
              scalar_copy.data(), static_cast<int>(scalar_copy.size()), stream_->get());
  cudaError_t launch = cudaGetLastError();
  cudaError_t sync = cudaDeviceSynchronize();  // also waits for work put anywhere else
  if (sync != cudaSuccess)
    *error = "CUDA error: " + CudaErrorText(sync);
  else if (launch != cudaSuccess)
    *error = "CUDA error after the call: " + CudaErrorText(launch);
  else if (rc != 0)
    *error = "returned status " + std::to_string(rc);
}

bool CudaWorker::Calibrate() {
  report_.Phase("calibrate", "");
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, dev_.ordinal);
  cudaStream_t s = stream_->get();
  nlohmann::json c;
  auto check = [&](int e, const char* what) {
    if (e) result_.warnings.push_back(std::string(what) + ": " + CudaErrorText(static_cast<cudaError_t>(e)));
    return e == 0;
  };
  if (!MeasureBasicCalibration(prop)) return false;
  double l2 = 0, launch_dev = 0, launch_host = 0;
  if (check(DeviceMeasureL2Bandwidth(l2_bytes_, sm_count_, &l2, s), "L2 bandwidth")) c["l2_bytes_per_s"] = l2;
  for (const char* kind : {"f16", "bf16", "tf32", "fp8-e4m3"}) {
    double rate = 0;
    int e = DeviceMeasureMmaPeak(kind, sm_count_, prop.major, prop.minor, &rate, s);
    if (e == static_cast<int>(cudaErrorNotSupported)) continue;
    if (check(e, (std::string("tensor ") + kind).c_str())) c["mma_sync_flops_per_s"][kind] = rate;
  }
  if (check(DeviceMeasureLaunchOverhead(&launch_dev, &launch_host, s), "launch overhead")) {
    c["launch_device_us"] = launch_dev;
    c["launch_host_us"] = launch_host;
  }
  c["dram_bytes_per_s"] = result_.calibration.dram_bytes_per_s;
  c["fp32_flops_per_s"] = result_.calibration.fp32_flops_per_s;
  c["sm_count"] = sm_count_;
  c["l2_bytes"] = l2_bytes_;
  c["shared_per_sm"] = prop.sharedMemPerMultiprocessor;
  c["shared_per_block_optin"] = prop.sharedMemPerBlockOptin;
  c["registers_per_sm"] = prop.regsPerMultiprocessor;
  c["max_threads_per_sm"] = prop.maxThreadsPerMultiProcessor;
  c["max_blocks_per_sm"] = prop.maxBlocksPerMultiProcessor;
  int sm_clock = 0, mem_clock = 0;
  cudaDeviceGetAttribute(&sm_clock, cudaDevAttrClockRate, dev_.ordinal);
  cudaDeviceGetAttribute(&mem_clock, cudaDevAttrMemoryClockRate, dev_.ordinal);
  c["sm_clock_mhz"] = sm_clock / 1000;
  c["memory_clock_mhz"] = mem_clock / 1000;
  result_.details["calibration"] = c;
  return true;
}

RunResult CudaWorker::Run() {
  if (!Setup()) return result_;
  if (!req_.sweep_objects.empty()) return RunSweep();
  if (req_.calibrate_only) {
    if (result_.status.empty()) Finish("passed", "calibrated");
    return result_;
  }
  if (req_.profile_only) {
    ProfileCandidate();
    return result_;
  }
  for (const auto& w : req_.workloads)
    if (!CheckWorkload(w)) return result_;
  Stamp("checks");
  if (req_.time) {
    result_.phase = "timing";
    for (const auto& w : req_.workloads)
      if (w.timed && !TimeWorkload(w)) return result_;
    Stamp("timing");
  }
  if (!library_use_.empty()) result_.details["library_use"] = library_use_;
  if (!trace_json_.empty()) result_.details["launch_trace"] = trace_json_;
  result_.phase = "done";
  if (result_.status.empty()) {
    result_.status = "passed";
    result_.message = "every output matched the reference on every workload and seed";
  }
  return result_;
}

RunResult RunCudaRequest(const RunRequest& request, PhaseReporter& reporter, CudaDevice& device) {
  CudaWorker worker(request, reporter, device);
  RunResult result = worker.Run();
  worker.Stamp("end");
  result.details["timeline_s"] = worker.timeline();
  return result;
}

RunResult RunCudaWorker(const RunRequest& request, PhaseReporter& reporter) {
  CudaDevice device;
  return RunCudaRequest(request, reporter, device);
}

}  // namespace kpilot
