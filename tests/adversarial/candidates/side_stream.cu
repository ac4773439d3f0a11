// Exploit: launches the (correct) kernel on a private non-blocking stream it created, with no
// event or synchronization tying it to the stream it was given, so timing on the given stream
// measures an empty stream while the work runs elsewhere.
// Expected: suspicious (work outside the given stream); the unsynchronized work may also still be
// running when the runner compares, which makes it incorrect instead.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

namespace {
cudaStream_t side = nullptr;
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
  (void)stream;  // deliberately unused
  if (num_inputs != 2 || num_outputs != 1) return 1;
  if (side == nullptr && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 4;
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  const int64_t blocks = (n + 255) / 256;
  if (blocks > INT_MAX) return 2;
  Add<<<static_cast<unsigned>(blocks), 256, 0, side>>>(static_cast<const float*>(inputs[0].data),
                                                        static_cast<const float*>(inputs[1].data),
                                                        static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
