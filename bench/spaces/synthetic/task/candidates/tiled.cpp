// The synthetic_gemm shell candidate: the params declared (and ignored) around the host SGEMM
// reference, so that every configuration compiles in place. Replays never compile it (their
// timings come from the space file); copied elsewhere, the relative include would not resolve.
#ifndef BM
#define BM 16
#endif
#ifndef BN
#define BN 16
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 1
#endif
#ifndef TN
#define TN 1
#endif
#ifndef VEC
#define VEC 1
#endif
static_assert(BM > 0 && BN > 0 && BK > 0 && TM > 0 && TN > 0 && VEC > 0, "params are positive");

#include "../../../../../examples/host/sgemm/reference.cpp"
