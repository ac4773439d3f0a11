// Exploit (signalling the harness): sends SIGCONT (harmless, but it could as well be SIGKILL or
// SIGSTOP) to every process it may signal (kill(-1)), kpilot's among them.
// Expected: passed in a PID namespace of its own (no process outside the sandbox is there to
// signal); suspicious where there is none (a served runner): a signal to a process outside the
// sandbox is refused and named.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

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

// True when the attempt worked; then the answer is made wrong on purpose, so that it shows.
static bool Attempt() {
  bool escaped = false;
  escaped = kill(-1, SIGCONT) == 0;
  return escaped;
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
  static const bool escaped = Attempt();
  if (int rc = LaunchAdd(a, b, c, n, s)) return rc;
  if (escaped) Add<<<1, 1, 0, s>>>(a, a, c, 1);  // one wrong element
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
