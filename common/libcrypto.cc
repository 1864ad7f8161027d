#include "common/libcrypto.h"

#include <dlfcn.h>

#include <mutex>

#include "common/error.h"

namespace coll {
namespace {

struct Libcrypto {
  void* handle = nullptr;
  std::string loadError;  // why it could not be loaded, or ""
};

const Libcrypto& libcrypto() {
  static Libcrypto lib;
  static std::once_flag once;
  std::call_once(once, [] {
    // Versioned names first: the unversioned one exists only where the -dev package is installed.
    for (const char* name : {"libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so"}) {
      lib.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib.handle != nullptr) return;
    }
    const char* why = dlerror();
    lib.loadError = why != nullptr ? why : "not found";
  });
  return lib;
}

}  // namespace

void* libcryptoSymbol(const char* name) {
  const Libcrypto& lib = libcrypto();
  return lib.handle != nullptr ? dlsym(lib.handle, name) : nullptr;
}

void requireLibcrypto(const char* purpose, const char* symbol) {
  const Libcrypto& lib = libcrypto();
  if (lib.handle != nullptr && dlsym(lib.handle, symbol) != nullptr) return;
  const std::string why = lib.handle == nullptr ? lib.loadError : std::string("it lacks ") + symbol;
  throwError(collSystemError,
             "%s needs OpenSSL's libcrypto (libcrypto.so.3), which could not be used (%s): install it "
             "(Debian/Ubuntu: apt install libssl3; RHEL: dnf install openssl-libs)",
             purpose, why.c_str());
}

}  // namespace coll
