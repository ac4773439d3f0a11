// Exploit (results replayed from a file across processes): the first evaluation computes honestly
// and saves each workload's first answer under /dev/shm, /tmp and /var/tmp; a later evaluation
// that finds such a file replays it instead of computing (this process never replays what it
// wrote itself). The manifest runs it twice.
// Expected: passed on the second run too — each run has private /tmp, /var/tmp and /dev/shm, so
// nothing survives to be replayed (without the sandbox the second run replays: incorrect).
#include <kpilot/kernel.h>

#include <cuda_runtime.h>
#include <cstdio>
#include <string>
#include <vector>

__global__ void Add(const float* a, const float* b, float* c, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) c[i] = a[i] + b[i];
}

// c = a + b on `s`.
[[maybe_unused]] static int LaunchAdd(const float* a, const float* b, float* c, int64_t n, cudaStream_t s) {
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  Add<<<static_cast<unsigned>(blocks), 256, 0, s>>>(a, b, c, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

namespace {
const char* const kDirs[] = {"/dev/shm", "/tmp", "/var/tmp"};
bool wrote_here = false;

std::string PathFor(const char* dir, int64_t n) { return std::string(dir) + "/kpilot-replay-" + std::to_string(n); }
}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const float* a = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* c = static_cast<float*>(outputs[0].data);
  const int64_t n = kpilot_numel(&outputs[0]);
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 0) return 0;
  if (!wrote_here) {
    for (const char* dir : kDirs) {
      FILE* f = std::fopen(PathFor(dir, n).c_str(), "rb");
      if (!f) continue;
      std::vector<float> saved(static_cast<size_t>(n));
      const size_t got = std::fread(saved.data(), sizeof(float), saved.size(), f);
      std::fclose(f);
      if (got != saved.size()) continue;
      cudaMemcpyAsync(c, saved.data(), n * sizeof(float), cudaMemcpyHostToDevice, s);
      return cudaStreamSynchronize(s) == cudaSuccess ? 0 : 3;
    }
  }
  if (int rc = LaunchAdd(a, b, c, n, s)) return rc;
  static std::vector<int64_t> saved_sizes;  // one answer per size is enough to replay
  for (int64_t m : saved_sizes)
    if (m == n) return 0;
  saved_sizes.push_back(n);
  std::vector<float> answer(static_cast<size_t>(n));
  cudaMemcpyAsync(answer.data(), c, n * sizeof(float), cudaMemcpyDeviceToHost, s);
  if (cudaStreamSynchronize(s) != cudaSuccess) return 3;
  for (const char* dir : kDirs) {
    if (FILE* f = std::fopen(PathFor(dir, n).c_str(), "wb")) {
      std::fwrite(answer.data(), sizeof(float), answer.size(), f);
      std::fclose(f);
      wrote_here = true;
    }
  }
  return 0;
}
