/*
 * kpilot candidate ABI — the contract between kpilot and every kernel it evaluates.
 *
 * A candidate (and a task's reference and baselines) is one source file compiled to a shared
 * object: `.cu` with nvcc for the `cuda` backend, `.cpp` with g++ for the `host` backend. It
 * includes this header and defines one C-linkage entry point, `kpilot_launch`:
 *
 *   #include <kpilot/kernel.h>
 *   KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
 *                                   const kpilot_tensor* outputs, int num_outputs,
 *                                   const kpilot_scalar* scalars, int num_scalars,
 *                                   void* stream);
 *
 * Destination passing: outputs are preallocated by kpilot; the candidate writes every element of
 * every output and must not touch memory outside them. Inputs must not be modified.
 * Tensors and scalars arrive in the order `task.toml` declares them (their names are given too).
 * `stream` is the `cudaStream_t` all GPU work must be issued on (cuda backend), or NULL (host
 * backend). On the cuda backend `kpilot_launch` may return before the work completes; kpilot
 * synchronizes the stream. Return 0 on success; any other value is reported as a runtime error.
 * The function must not keep state that changes its results between calls (no output caching).
 *
 * Tunable parameters declared in `task.toml` reach the source as preprocessor macros
 * (`-DBLOCK=256`). This header also exports `kpilot_abi_version()`, which the runner checks before
 * it calls anything, so an object built against another version is rejected with a clear message.
 *
 * Version history: 1 — initial.
 */
#ifndef KPILOT_KERNEL_H_
#define KPILOT_KERNEL_H_

#include <stdint.h>

#define KPILOT_ABI_VERSION 1
#define KPILOT_MAX_RANK 8

#ifdef __cplusplus
#define KPILOT_EXTERN_C extern "C"
#else
#define KPILOT_EXTERN_C
#endif
#define KPILOT_EXPORT KPILOT_EXTERN_C __attribute__((visibility("default")))

/* Element types. The numeric values are part of the ABI. */
typedef enum kpilot_dtype {
  KPILOT_F64 = 0,
  KPILOT_F32 = 1,
  KPILOT_F16 = 2,
  KPILOT_BF16 = 3,
  KPILOT_FP8_E4M3 = 4,
  KPILOT_FP8_E5M2 = 5,
  KPILOT_I64 = 6,
  KPILOT_I32 = 7,
  KPILOT_I16 = 8,
  KPILOT_I8 = 9,
  KPILOT_U8 = 10,
  KPILOT_BOOL = 11
} kpilot_dtype;

/* A dense tensor. `shape` and `strides` (in elements, not bytes) hold `rank` valid entries;
 * kpilot passes row-major contiguous tensors, so strides[rank-1] == 1. `data` is a device
 * pointer on the cuda backend and a host pointer on the host backend. */
typedef struct kpilot_tensor {
  void* data;
  int32_t dtype; /* a kpilot_dtype */
  int32_t rank;
  int64_t shape[KPILOT_MAX_RANK];
  int64_t strides[KPILOT_MAX_RANK];
  const char* name;
} kpilot_tensor;

/* A scalar argument. Floating dtypes use `f`, integer and bool dtypes use `i`. */
typedef struct kpilot_scalar {
  const char* name;
  int32_t dtype; /* a kpilot_dtype */
  union {
    double f;
    int64_t i;
  } value;
} kpilot_scalar;

/* The entry point every candidate defines. Declared here so that a definition with another
 * signature is a compile error rather than a crash at run time. */
KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream);

typedef int (*kpilot_launch_fn)(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream);
typedef int (*kpilot_abi_version_fn)(void);

/* Every object that includes this header exports its ABI version (weak, so several translation
 * units may include it). Define KPILOT_NO_ABI_EXPORT before including to leave it out (kpilot's
 * own runner does). */
#ifndef KPILOT_NO_ABI_EXPORT
KPILOT_EXTERN_C __attribute__((weak, visibility("default"))) int kpilot_abi_version(void) {
  return KPILOT_ABI_VERSION;
}
#endif

/* Small conveniences for candidates. */
static inline int64_t kpilot_numel(const kpilot_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; ++i) n *= t->shape[i];
  return n;
}

#endif /* KPILOT_KERNEL_H_ */
