#include "common/hmac.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"

namespace coll {
namespace {

// The two libcrypto entry points, with the signatures OpenSSL 1.1 and 3.x document (EVP_MD is
// opaque to callers; only its pointer is passed along).
using EvpSha256Fn = const void* (*)();
using HmacFn = unsigned char* (*)(const void* md, const void* key, int keyLength, const unsigned char* data,
                                  size_t dataLength, unsigned char* out, unsigned int* outLength);

struct Libcrypto {
  EvpSha256Fn evpSha256 = nullptr;
  HmacFn hmac = nullptr;
  std::string loadError;  // why it could not be loaded, or ""
};

const Libcrypto& libcrypto() {
  static Libcrypto lib;
  static std::once_flag once;
  std::call_once(once, [] {
    // Versioned names first: the unversioned one exists only where the -dev package is installed.
    void* handle = nullptr;
    for (const char* name : {"libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so"}) {
      handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) break;
    }
    if (handle == nullptr) {
      const char* why = dlerror();
      lib.loadError = why != nullptr ? why : "not found";
      return;
    }
    lib.evpSha256 = reinterpret_cast<EvpSha256Fn>(dlsym(handle, "EVP_sha256"));
    lib.hmac = reinterpret_cast<HmacFn>(dlsym(handle, "HMAC"));
    if (lib.evpSha256 == nullptr || lib.hmac == nullptr) lib.loadError = "it lacks EVP_sha256 or HMAC";
  });
  return lib;
}

// Loads libcrypto and runs one HMAC when the library is loaded, while the process has one thread:
// loading it later, in a child forked while another thread held the dynamic loader's or
// OpenSSL's own locks (a rendezvous server thread mid-handshake, say), could wait forever. The
// child inherits a library that is loaded and initialized instead.
struct LoadAtStartup {
  LoadAtStartup() {
    const Libcrypto& lib = libcrypto();
    if (!lib.loadError.empty()) return;  // said, with what to install, at first use
    unsigned char digest[32];
    unsigned int length = 0;
    const unsigned char nothing = 0;
    lib.hmac(lib.evpSha256(), &nothing, 1, &nothing, 1, digest, &length);
  }
};
const LoadAtStartup loadAtStartup;

}  // namespace

Digest256 hmacSha256(ByteView key, std::initializer_list<ByteView> message) {
  const Libcrypto& lib = libcrypto();
  if (!lib.loadError.empty()) {
    throwError(collSystemError,
               "authenticating a connection needs OpenSSL's libcrypto (libcrypto.so.3), which could not be loaded "
               "(%s): install it (Debian/Ubuntu: apt install libssl3; RHEL: dnf install openssl-libs)",
               lib.loadError.c_str());
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

bool equalInConstantTime(const uint8_t* a, const uint8_t* b, size_t size) {
  // volatile keeps the compiler from turning the loop into an early-exit memcmp.
  volatile uint8_t difference = 0;
  for (size_t i = 0; i < size; ++i) difference = static_cast<uint8_t>(difference | (a[i] ^ b[i]));
  return difference == 0;
}

}  // namespace coll
