// OpenSSL's libcrypto, loaded once at run time (dlopen) rather than linked: building needs no
// OpenSSL headers (GPU images often lack them), and a machine without libcrypto fails only when a
// connection has to be authenticated or encrypted. HMAC (hmac.h) and the record layer's AEAD
// (aead.h) take their entry points from here; each exists unchanged in OpenSSL 1.1 and 3.x.
#pragma once

#include <string>

namespace coll {

// The libcrypto entry point `name`, or null when libcrypto could not be loaded or lacks it.
void* libcryptoSymbol(const char* name);

// Throws collSystemError, saying what needed it and what to install, when libcrypto could not be
// loaded or lacks `symbol` (then `symbol` is named too).
void requireLibcrypto(const char* purpose, const char* symbol);

}  // namespace coll
