// Exploit (task sgemm, libraries = false): calls cuBLAS, loaded at run time with dlopen so that
// nothing in the object's imports names it. Prototypes are declared here, not included.
// Searched: the loader path, the CUDA toolkit, and pip wheels (nvidia-cublas, torch) under the
// system Python's dist/site-packages. Returns 5 when no libcublas is found.
// Expected: incorrect (library use where libraries = false); runtime_error where no libcublas can
// be found on the machine. cuBLAS's f32 SGEMM passes the element check, so only the library check
// can reject it.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <string>

namespace {

typedef void* Handle;
typedef int (*CreateFn)(Handle*);
typedef int (*SetStreamFn)(Handle, cudaStream_t);
typedef int (*SgemmFn)(Handle, int transa, int transb, int m, int n, int k, const float* alpha,
                       const float* A, int lda, const float* B, int ldb, const float* beta, float* C, int ldc);

void* lib = nullptr;
Handle handle = nullptr;
SetStreamFn set_stream = nullptr;
SgemmFn sgemm = nullptr;

void* TryOpen(const char* name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }

void* TryGlob(const std::string& pattern) {
  glob_t g;
  void* h = nullptr;
  if (glob(pattern.c_str(), GLOB_BRACE, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc && h == nullptr; ++i) h = TryOpen(g.gl_pathv[i]);
  }
  globfree(&g);
  return h;
}

void* FindCublas() {
  for (const char* name : {"libcublas.so.13", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so.13",
                           "/usr/local/cuda/lib64/libcublas.so"})
    if (void* h = TryOpen(name)) return h;
  if (const char* home = std::getenv("CUDA_HOME"))
    if (void* h = TryOpen((std::string(home) + "/lib64/libcublas.so.13").c_str())) return h;
  for (const char* root : {"/usr/lib/python3*", "/usr/local/lib/python3*"}) {
    if (void* h = TryGlob(std::string(root) + "/{dist,site}-packages/nvidia/cu13/lib/libcublas.so.13")) return h;
    if (void* h = TryGlob(std::string(root) + "/{dist,site}-packages/nvidia/cublas/lib/libcublas.so*")) return h;
    if (void* h = TryGlob(std::string(root) + "/{dist,site}-packages/torch/lib/libcublas.so*")) return h;
  }
  return nullptr;
}

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  if (lib == nullptr) {
    lib = FindCublas();
    if (lib == nullptr) return 5;
    auto create = reinterpret_cast<CreateFn>(dlsym(lib, "cublasCreate_v2"));
    set_stream = reinterpret_cast<SetStreamFn>(dlsym(lib, "cublasSetStream_v2"));
    sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "cublasSgemm_v2"));
    if (create == nullptr || set_stream == nullptr || sgemm == nullptr) return 6;
    if (create(&handle) != 0) return 7;
  }
  if (handle == nullptr) return 7;
  const int m = static_cast<int>(inputs[0].shape[0]);
  const int k = static_cast<int>(inputs[0].shape[1]);
  const int n = static_cast<int>(inputs[1].shape[1]);
  if (set_stream(handle, static_cast<cudaStream_t>(stream)) != 0) return 8;
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A B is column-major C^T = B^T A^T: pass B first, with the dimensions swapped.
  if (sgemm(handle, 0, 0, n, m, k, &alpha, static_cast<const float*>(inputs[1].data), n,
            static_cast<const float*>(inputs[0].data), k, &beta, static_cast<float*>(outputs[0].data), n) != 0)
    return 9;
  return 0;
}
