// Exploit attempt: a timer patch. It exports its own event timers that always report 0.001 ms,
// hoping the runner's timing resolves to them through the dynamic linker. The runtime entry point
// cudaEventElapsedTime cannot even be redefined — nvcc links cudart statically into the candidate,
// and the duplicate definition fails to link — so it overrides the driver entry points the
// runtime sits on, cuEventElapsedTime and cuEventElapsedTime_v2 (declared here without <cuda.h>).
// The runner links cudart statically, gets driver entry points from libcuda itself and loads
// candidates RTLD_LOCAL, so none of its calls can reach these. The kernel is an honest vadd.
// Expected: passed, with honest timings; a runner that did pick the fakes up would see 0.001 ms,
// faster than physics (suspicious).
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

extern "C" __attribute__((visibility("default"), used)) int cuEventElapsedTime(float* ms, void* start, void* end) {
  (void)start;
  (void)end;
  if (ms != nullptr) *ms = 0.001f;
  return 0;  // CUDA_SUCCESS
}

extern "C" __attribute__((visibility("default"), used)) int cuEventElapsedTime_v2(float* ms, void* start, void* end) {
  return cuEventElapsedTime(ms, start, end);
}

__global__ void Add(const float* a, const float* b, float* c, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  const int64_t blocks = (n + 255) / 256;
  if (blocks > INT_MAX) return 2;
  Add<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
