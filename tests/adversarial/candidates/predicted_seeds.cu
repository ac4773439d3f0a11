// Exploit (answers precomputed for predicted seeds): never reads its inputs. It regenerates them
// on the device with kpilot's own input generator (public: splitmix64 over seed, input index and
// element index; normal a, uniform b as the vadd task declares) for the seeds it predicts the
// correctness trials use (1, 2, 3, in order, for each workload) and writes their sum.
// Expected: incorrect — every evaluation draws its seeds from the system's CSPRNG and shows them
// only with the verdict.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

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

__device__ unsigned long long Mix(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
__device__ double Uniform01(unsigned long long h) { return (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

__global__ void Predicted(unsigned long long seed, float* c, int64_t n) {
  const unsigned long long base_a = Mix(seed ^ Mix(0 + 0x6b70696cull));
  const unsigned long long base_b = Mix(seed ^ Mix(1 + 0x6b70696cull));
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const unsigned long long ha = Mix(base_a ^ static_cast<unsigned long long>(i));
    const double a = sqrt(-2.0 * log(Uniform01(ha))) * cospi(2.0 * Uniform01(Mix(ha)));  // normal(0, 1)
    const double b = -1.0 + 2.0 * Uniform01(Mix(base_b ^ static_cast<unsigned long long>(i)));  // uniform(-1, 1)
    c[i] = static_cast<float>(a) + static_cast<float>(b);
  }
}

namespace {
int calls = 0;
}

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
  if (a == nullptr || b == nullptr) return 1;  // never read beyond this
  const unsigned long long seed = 1 + (calls++ % 3);
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  Predicted<<<static_cast<unsigned>(blocks), 256, 0, s>>>(seed, c, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
