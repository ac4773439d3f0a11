#include "core/sha256.h"

#include <openssl/evp.h>

#include <cstdint>

namespace kpilot {
namespace {

std::string ToHex(const unsigned char* d, unsigned n) {
  static const char* kHex = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (unsigned i = 0; i < n; ++i) {
    out[2 * i] = kHex[d[i] >> 4];
    out[2 * i + 1] = kHex[d[i] & 15];
  }
  return out;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr);
  return ToHex(md, n);
}

Sha256Builder::Sha256Builder() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}

Sha256Builder::~Sha256Builder() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

Sha256Builder& Sha256Builder::Add(std::string_view part) {
  uint64_t len = part.size();
  auto* ctx = static_cast<EVP_MD_CTX*>(ctx_);
  EVP_DigestUpdate(ctx, &len, sizeof(len));
  EVP_DigestUpdate(ctx, part.data(), part.size());
  return *this;
}

std::string Sha256Builder::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &n);
  return ToHex(md, n);
}

}  // namespace kpilot
