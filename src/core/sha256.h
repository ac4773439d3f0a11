// SHA-256 digests (OpenSSL libcrypto), as lowercase hex.
#pragma once

#include <string>
#include <string_view>

namespace kpilot {

std::string Sha256Hex(std::string_view data);

// Incremental hashing for keys built from several parts. Each part is length-prefixed, so
// ("ab","c") and ("a","bc") hash differently.
class Sha256Builder {
 public:
  Sha256Builder();
  ~Sha256Builder();
  Sha256Builder(const Sha256Builder&) = delete;
  Sha256Builder& operator=(const Sha256Builder&) = delete;
  Sha256Builder& Add(std::string_view part);
  std::string HexDigest();  // finishes the hash; the builder must not be used afterwards

 private:
  void* ctx_;  // EVP_MD_CTX*
};

}  // namespace kpilot
