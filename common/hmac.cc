#include "common/hmac.h"

#include <algorithm>
#include <vector>

#include "common/error.h"
#include "common/libcrypto.h"

namespace coll {
namespace {

// The two libcrypto entry points, with the signatures OpenSSL 1.1 and 3.x document (EVP_MD is
// opaque to callers; only its pointer is passed along).
using EvpSha256Fn = const void* (*)();
using HmacFn = unsigned char* (*)(const void* md, const void* key, int keyLength, const unsigned char* data,
                                  size_t dataLength, unsigned char* out, unsigned int* outLength);

struct HmacEntryPoints {
  EvpSha256Fn evpSha256 = reinterpret_cast<EvpSha256Fn>(libcryptoSymbol("EVP_sha256"));
  HmacFn hmac = reinterpret_cast<HmacFn>(libcryptoSymbol("HMAC"));
};

const HmacEntryPoints& entryPoints() {
  static const HmacEntryPoints points;
  return points;
}

// Loads libcrypto and runs one HMAC when the library is loaded, while the process has one thread:
// loading it later, in a child forked while another thread held the dynamic loader's or
// OpenSSL's own locks (a rendezvous server thread mid-handshake, say), could wait forever. The
// child inherits a library that is loaded and initialized instead.
struct LoadAtStartup {
  LoadAtStartup() {
    const HmacEntryPoints& lib = entryPoints();
    if (lib.evpSha256 == nullptr || lib.hmac == nullptr) return;  // said, with what to install, at first use
    unsigned char digest[32];
    unsigned int length = 0;
    const unsigned char nothing = 0;
    lib.hmac(lib.evpSha256(), &nothing, 1, &nothing, 1, digest, &length);
  }
};
const LoadAtStartup loadAtStartup;

}  // namespace

Digest256 hmacSha256(ByteView key, std::initializer_list<ByteView> message) {
  const HmacEntryPoints& lib = entryPoints();
  if (lib.evpSha256 == nullptr || lib.hmac == nullptr) {
    requireLibcrypto("authenticating a connection", "EVP_sha256");
    requireLibcrypto("authenticating a connection", "HMAC");
  }
  std::vector<unsigned char> joined;
  for (const ByteView& part : message) {
    const auto* bytes = static_cast<const unsigned char*>(part.data);
    joined.insert(joined.end(), bytes, bytes + part.size);
  }
  Digest256 digest{};
  unsigned int length = 0;
  if (lib.hmac(lib.evpSha256(), key.data, static_cast<int>(key.size), joined.data(), joined.size(), digest.data(),
               &length) == nullptr ||
      length != digest.size()) {
    throwError(collSystemError, "libcrypto's HMAC-SHA256 failed (returned %u bytes)", length);
  }
  return digest;
}

std::vector<uint8_t> hkdfSha256(ByteView salt, ByteView inputKey, ByteView info, size_t length) {
  if (length > 255 * sizeof(Digest256))
    throwError(collInternalError, "hkdfSha256: %zu bytes asked, at most %zu", length, 255 * sizeof(Digest256));
  const Digest256 pseudoRandomKey = hmacSha256(salt, {inputKey});
  std::vector<uint8_t> key;
  Digest256 block{};
  for (uint8_t counter = 1; key.size() < length; ++counter) {
    const ByteView previous{block.data(), counter == 1 ? 0 : block.size()};
    block = hmacSha256({pseudoRandomKey.data(), pseudoRandomKey.size()}, {previous, info, {&counter, 1}});
    key.insert(key.end(), block.begin(), block.begin() + std::min(block.size(), length - key.size()));
  }
  return key;
}

bool equalInConstantTime(const uint8_t* a, const uint8_t* b, size_t size) {
  // volatile keeps the compiler from turning the loop into an early-exit memcmp.
  volatile uint8_t difference = 0;
  for (size_t i = 0; i < size; ++i) difference = static_cast<uint8_t>(difference | (a[i] ^ b[i]));
  return difference == 0;
}

}  // namespace coll
