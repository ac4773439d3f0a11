// Standalone check of a transpose candidate's kpilot_launch under compute-sanitizer: the candidate
// source is included with its params as macros (-DCANDIDATE="path" -DTILE=.. -DBLOCK_ROWS=..
// -DVEC=..), every shape on the command line is transposed from buffers of exactly its size (so
// memcheck sees any access outside them), and the result is compared element by element.
// `+N` after a shape (e.g. 1024x12+1) offsets both pointers by N floats, to take the unaligned
// path. Built and run by bench/transpose_check.sh.
#include CANDIDATE

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

bool Check(int64_t rows, int64_t cols, int offset) {
  const int64_t n = rows * cols;
  std::vector<float> x(n), y(n, -1.0f);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 16777216);
  float *dx = nullptr, *dy = nullptr;
  if (cudaMalloc(&dx, (n + offset) * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&dy, (n + offset) * sizeof(float)) != cudaSuccess) {
    std::printf("FAIL %lldx%lld+%d: cudaMalloc\n", (long long)rows, (long long)cols, offset);
    return false;
  }
  cudaMemcpy(dx + offset, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(dy, 0xff, (n + offset) * sizeof(float));
  kpilot_tensor in{}, out{};
  in.data = dx + offset;
  in.dtype = KPILOT_F32;
  in.rank = 2;
  in.shape[0] = rows, in.shape[1] = cols, in.strides[0] = cols, in.strides[1] = 1;
  in.name = "x";
  out = in;
  out.data = dy + offset;
  out.shape[0] = cols, out.shape[1] = rows, out.strides[0] = rows;
  out.name = "y";
  const int rc = kpilot_launch(&in, 1, &out, 1, nullptr, 0, nullptr);
  const cudaError_t err = cudaDeviceSynchronize();
  cudaMemcpy(y.data(), dy + offset, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  int64_t wrong = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) wrong += y[c * rows + r] != x[r * cols + c];
  const bool ok = rc == 0 && err == cudaSuccess && wrong == 0;
  std::printf("%s %lldx%lld+%d: launch %d, %s, %lld wrong\n", ok ? "ok" : "FAIL", (long long)rows, (long long)cols,
              offset, rc, cudaGetErrorString(err), (long long)wrong);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    long long rows = 0, cols = 0;
    int offset = 0;
    if (std::sscanf(argv[i], "%lldx%lld+%d", &rows, &cols, &offset) < 2) {
      std::fprintf(stderr, "%s: expected ROWSxCOLS[+OFFSET]\n", argv[i]);
      return 2;
    }
    ok = Check(rows, cols, offset) && ok;
  }
  return ok ? 0 : 1;
}
