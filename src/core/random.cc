#include "core/random.h"

#include <random>

namespace kpilot {

uint64_t SecureRandom64() {
  thread_local std::random_device csprng;
  return (static_cast<uint64_t>(csprng()) << 32) | csprng();
}

}  // namespace kpilot
