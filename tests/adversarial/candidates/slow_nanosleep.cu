// Control for the timing checks: a correct vadd whose kernel also keeps one thread asleep
// (__nanosleep, against %globaltimer) until 2 ms have passed, all on the given stream. Slow is
// not a crime: nothing here is off-stream, cached or faster than physics.
// Expected: passed.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

__global__ void AddSlowly(const float* a, const float* b, float* c, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
  if (i == 0) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
      __nanosleep(100000);  // 100 us
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < 2000000ull);  // 2 ms
  }
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
  AddSlowly<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
