// AES-256-GCM, the authenticated encryption of the record layer (record_layer.h), through
// libcrypto's EVP interface (loaded at run time: libcrypto.h). One object holds one direction's
// key schedule, so that a record costs a nonce change and the cipher's work, not a key setup.
// The entry points used (EVP_aes_256_gcm, EVP_CIPHER_CTX_new/_free/_ctrl, EVP_Encrypt* and
// EVP_Decrypt* _Init_ex/_Update/_Final_ex) exist unchanged in OpenSSL 1.1 and 3.x.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/hmac.h"

namespace coll {

class Aes256Gcm {
 public:
  static constexpr size_t kKeyBytes = 32;
  static constexpr size_t kNonceBytes = 12;
  static constexpr size_t kTagBytes = 16;
  enum class Use { kSeal, kOpen };

  // Throws collSystemError when libcrypto is missing or refuses the key.
  Aes256Gcm(Use use, const uint8_t key[kKeyBytes]);
  ~Aes256Gcm();
  Aes256Gcm(const Aes256Gcm&) = delete;
  Aes256Gcm& operator=(const Aes256Gcm&) = delete;

  // Encrypts the concatenation of `pieces` into `out` (as many bytes) and writes the tag, which
  // also covers `aad`. `out` may be where the pieces are.
  void seal(const uint8_t nonce[kNonceBytes], ByteView aad, const ByteView* pieces, size_t count, uint8_t* out,
            uint8_t tag[kTagBytes]);
  // Decrypts `size` bytes at `data` in place and checks `tag` over them and `aad`. False when the
  // tag does not match: the bytes at `data` are then garbage and must not be used.
  bool open(const uint8_t nonce[kNonceBytes], ByteView aad, uint8_t* data, size_t size, const uint8_t tag[kTagBytes]);

 private:
  Use use_;
  void* context_ = nullptr;  // an EVP_CIPHER_CTX
};

}  // namespace coll
