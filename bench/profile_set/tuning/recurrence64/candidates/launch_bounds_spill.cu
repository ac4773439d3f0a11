// BAD ON PURPOSE (tuning set): the reference's kernel (ring.cuh) with __launch_bounds__(256, 8)
// added "for occupancy". 8 resident blocks of 256 threads leave 65536 / 2048 = 32 registers per
// thread, but the ring alone is 64 live floats: ptxas spills about half of it to local memory
// (~650 bytes each way per thread), and every one of the 128 smoothing steps reloads and
// re-stores the spilled values (LDL/STL in the hot loop). Expected: register spills.
#include "../ring.cuh"

__global__ void __launch_bounds__(kRingThreads, 8) RingSmooth(const float* __restrict__ x, float* __restrict__ y,
                                                              int64_t n) {
  RingSmoothColumn(x, y, n);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  return LaunchRing(RingSmooth, inputs, num_inputs, outputs, num_outputs, num_scalars, stream);
}
