// HMAC-SHA256: the rendezvous store and the socket transport authenticate every connection with a
// challenge-response over it, so that the job's secret never crosses the wire, and the record
// layer derives its keys with HKDF over it (docs/security.md).
//
// It comes from the system's OpenSSL libcrypto, loaded at run time (libcrypto.h; when
// libcollective is loaded: see hmac.cc for why not later). The symbols used (EVP_sha256, HMAC)
// exist unchanged in OpenSSL 1.1 and 3.x.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace coll {

using Digest256 = std::array<uint8_t, 32>;

struct ByteView {
  const void* data;
  size_t size;
};

// HMAC-SHA256 of the concatenation of `message` under `key`. Throws collSystemError, with what to
// install, when libcrypto cannot be loaded.
Digest256 hmacSha256(ByteView key, std::initializer_list<ByteView> message);

// RFC 5869's HKDF with HMAC-SHA256: a key of `length` bytes (at most 255 * 32) extracted from
// `inputKey` with `salt` and expanded for the purpose that `info` names.
std::vector<uint8_t> hkdfSha256(ByteView salt, ByteView inputKey, ByteView info, size_t length);

// Compares in time independent of where the first difference is, so that answer timing reveals
// nothing about how much of a forged proof was right.
bool equalInConstantTime(const uint8_t* a, const uint8_t* b, size_t size);

}  // namespace coll
