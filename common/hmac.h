// HMAC-SHA256, the one cryptographic primitive libcollective uses: the rendezvous store and the
// socket transport authenticate every connection with a challenge-response over it, so that the
// job's secret never crosses the wire (docs/security.md).
//
// It comes from the system's OpenSSL libcrypto, loaded at run time (dlopen, when libcollective is
// loaded: see hmac.cc for why not later) rather than linked: building needs no OpenSSL headers
// (GPU images often lack them), and a machine without libcrypto fails only when a connection has
// to be authenticated. The symbols used (EVP_sha256, HMAC) exist unchanged in OpenSSL 1.1 and 3.x.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace coll {

using Digest256 = std::array<uint8_t, 32>;

struct ByteView {
  const void* data;
  size_t size;
};

// HMAC-SHA256 of the concatenation of `message` under `key`. Throws collSystemError, with what to
// install, when libcrypto cannot be loaded.
Digest256 hmacSha256(ByteView key, std::initializer_list<ByteView> message);

// Compares in time independent of where the first difference is, so that answer timing reveals
// nothing about how much of a forged proof was right.
bool equalInConstantTime(const uint8_t* a, const uint8_t* b, size_t size);

}  // namespace coll
