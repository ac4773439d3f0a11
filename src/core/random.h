// Unpredictable numbers: what a candidate must not know in advance (input seeds, audited calls,
// drawn workload sizes, result tags).
#pragma once

#include <cstdint>

namespace kpilot {

// 64 bits from the system's CSPRNG (getrandom, through std::random_device).
uint64_t SecureRandom64();

}  // namespace kpilot
