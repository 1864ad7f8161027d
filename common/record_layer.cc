#include "common/record_layer.h"

#include <strings.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "common/error.h"
#include "common/hmac.h"

namespace coll {

RecordKeys deriveRecordKeys(const std::array<uint8_t, 32>& secret, const char* label, const uint8_t openerNonce[32],
                            const uint8_t accepterNonce[32]) {
  uint8_t salt[64];
  std::memcpy(salt, openerNonce, 32);
  std::memcpy(salt + 32, accepterNonce, 32);
  const std::string toAccepter = std::string(label) + ": opener to accepter";
  const std::string toOpener = std::string(label) + ": accepter to opener";
  RecordKeys keys{};
  for (auto* which : {&keys.opener, &keys.accepter}) {
    const std::string& info = which == &keys.opener ? toAccepter : toOpener;
    const std::vector<uint8_t> key =
        hkdfSha256({salt, sizeof(salt)}, {secret.data(), secret.size()}, {info.data(), info.size()}, which->size());
    std::memcpy(which->data(), key.data(), which->size());
  }
  return keys;
}

RecordCipher::RecordCipher(Aes256Gcm::Use use, const RecordKey& key, uint64_t firstRecord)
    : aead_(use, key.data()), next_(firstRecord) {}

void RecordCipher::nextNonce(uint8_t nonce[Aes256Gcm::kNonceBytes]) {
  // The last value is never used: past it the counter would start over and repeat nonces.
  if (next_ == std::numeric_limits<uint64_t>::max())
    throwError(collRemoteError,
               "an encrypted connection used all of its %llu record numbers; it is closed rather than reuse one",
               static_cast<unsigned long long>(next_));
  std::memset(nonce, 0, Aes256Gcm::kNonceBytes);
  for (int i = 0; i < 8; ++i) nonce[4 + i] = static_cast<uint8_t>(next_ >> (8 * i));
  ++next_;
}

void RecordCipher::seal(ByteView header, const ByteView* pieces, size_t count, uint8_t* out,
                        uint8_t tag[kRecordTagBytes]) {
  uint8_t nonce[Aes256Gcm::kNonceBytes];
  nextNonce(nonce);
  aead_.seal(nonce, header, pieces, count, out, tag);
}

bool RecordCipher::open(ByteView header, uint8_t* data, size_t size, const uint8_t tag[kRecordTagBytes]) {
  uint8_t nonce[Aes256Gcm::kNonceBytes];
  nextNonce(nonce);
  return aead_.open(nonce, header, data, size, tag);
}

RecordCiphers makeRecordCiphers(const RecordKeys& keys, RecordSide side) {
  const bool opener = side == RecordSide::kOpener;
  RecordCiphers ciphers;
  ciphers.seal = std::make_unique<RecordCipher>(Aes256Gcm::Use::kSeal, opener ? keys.opener : keys.accepter);
  ciphers.open = std::make_unique<RecordCipher>(Aes256Gcm::Use::kOpen, opener ? keys.accepter : keys.opener);
  return ciphers;
}

bool encryptionRequested() {
  const char* text = std::getenv("COLL_NET_ENCRYPT");
  if (text == nullptr || *text == '\0') return false;
  for (const char* yes : {"1", "true", "yes", "on"})
    if (strcasecmp(text, yes) == 0) return true;
  for (const char* no : {"0", "false", "no", "off"})
    if (strcasecmp(text, no) == 0) return false;
  throwError(collInvalidUsage, "environment variable COLL_NET_ENCRYPT=\"%s\" is not valid: expected 0 or 1", text);
}

void requireSecretForEncryption(const std::array<uint8_t, 32>& secret, const char* where) {
  for (uint8_t byte : secret)
    if (byte != 0) return;
  throwError(collInvalidUsage,
             "COLL_NET_ENCRYPT=1: %s has no job secret to derive its keys from (the secret is all zeros: "
             "COLL_STORE_SECRET is not set and COLL_STORE_ALLOW_NO_SECRET=1, or the store was made without one); "
             "set COLL_STORE_SECRET on every rank (collrun --new-secret makes one) or unset COLL_NET_ENCRYPT",
             where);
}

}  // namespace coll
