#include "common/aead.h"

#include <limits>

#include "common/error.h"
#include "common/libcrypto.h"

namespace coll {
namespace {

// libcrypto's EVP types are opaque to callers: only their pointers are passed along.
using CipherFn = const void* (*)();
using ContextNewFn = void* (*)();
using ContextFreeFn = void (*)(void*);
using ContextCtrlFn = int (*)(void*, int, int, void*);
using InitFn = int (*)(void*, const void* cipher, void* engine, const unsigned char* key, const unsigned char* iv);
using UpdateFn = int (*)(void*, unsigned char* out, int* outLength, const unsigned char* in, int inLength);
using FinalFn = int (*)(void*, unsigned char* out, int* outLength);

// From OpenSSL's evp.h, the same values in 1.1 and 3.x.
constexpr int kCtrlGetTag = 0x10;  // EVP_CTRL_GCM_GET_TAG
constexpr int kCtrlSetTag = 0x11;  // EVP_CTRL_GCM_SET_TAG

// The entry points used, looked up once.
enum EntryPoint {
  kCipher,
  kContextNew,
  kContextFree,
  kContextCtrl,
  kEncryptInit,
  kEncryptUpdate,
  kEncryptFinal,
  kDecryptInit,
  kDecryptUpdate,
  kDecryptFinal,
  kEntryPoints
};
constexpr const char* kEntryPointNames[kEntryPoints] = {
    "EVP_aes_256_gcm",   "EVP_CIPHER_CTX_new",  "EVP_CIPHER_CTX_free", "EVP_CIPHER_CTX_ctrl", "EVP_EncryptInit_ex",
    "EVP_EncryptUpdate", "EVP_EncryptFinal_ex", "EVP_DecryptInit_ex",  "EVP_DecryptUpdate",   "EVP_DecryptFinal_ex"};

struct GcmEntryPoints {
  GcmEntryPoints() {
    for (int i = 0; i < kEntryPoints; ++i) {
      symbols[i] = libcryptoSymbol(kEntryPointNames[i]);
      if (symbols[i] == nullptr && missing == nullptr) missing = kEntryPointNames[i];
    }
  }
  void* symbols[kEntryPoints] = {};
  const char* missing = nullptr;  // the first entry point not found
};

const GcmEntryPoints& entryPoints() {
  static const GcmEntryPoints points;
  return points;
}

template <class Function>
Function entry(EntryPoint which) {
  return reinterpret_cast<Function>(entryPoints().symbols[which]);
}

void check(int ok, const char* what) {
  if (ok != 1) throwError(collSystemError, "libcrypto's AES-256-GCM failed in %s", what);
}

int checkedLength(size_t size) {
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()))
    throwError(collInternalError, "AES-256-GCM: %zu bytes in one call, more than libcrypto takes", size);
  return static_cast<int>(size);
}

// Sets a record's nonce and authenticates its header; returns the update step of the direction.
UpdateFn startRecord(void* context, Aes256Gcm::Use use, const uint8_t nonce[Aes256Gcm::kNonceBytes], ByteView aad) {
  const bool sealing = use == Aes256Gcm::Use::kSeal;
  const UpdateFn update = entry<UpdateFn>(sealing ? kEncryptUpdate : kDecryptUpdate);
  check(entry<InitFn>(sealing ? kEncryptInit : kDecryptInit)(context, nullptr, nullptr, nullptr, nonce),
        "setting a nonce");
  int length = 0;
  if (aad.size > 0)
    check(update(context, nullptr, &length, static_cast<const unsigned char*>(aad.data), checkedLength(aad.size)),
          "authenticating a header");
  return update;
}

// Seals one byte when the library is loaded, while the process has one thread, for the reason
// hmac.cc gives: a child forked later inherits a cipher already fetched and initialized, instead
// of initializing it under locks another thread of its parent may have held.
struct WarmUpAtStartup {
  WarmUpAtStartup() {
    if (entryPoints().missing != nullptr) return;  // said, with what to install, at first use
    try {
      const uint8_t key[Aes256Gcm::kKeyBytes] = {};
      const uint8_t nonce[Aes256Gcm::kNonceBytes] = {};
      uint8_t byte = 0, tag[Aes256Gcm::kTagBytes];
      const ByteView piece{&byte, 1};
      Aes256Gcm(Aes256Gcm::Use::kSeal, key).seal(nonce, {nullptr, 0}, &piece, 1, &byte, tag);
    } catch (const CollError&) {
      // Said again at first use.
    }
  }
};
const WarmUpAtStartup warmUpAtStartup;

}  // namespace

Aes256Gcm::Aes256Gcm(Use use, const uint8_t key[kKeyBytes]) : use_(use) {
  if (entryPoints().missing != nullptr)
    requireLibcrypto("encrypting a connection (COLL_NET_ENCRYPT)", entryPoints().missing);
  context_ = entry<ContextNewFn>(kContextNew)();
  if (context_ == nullptr) throwError(collSystemError, "libcrypto could not make an AES-256-GCM context");
  // The default nonce length of GCM is the 12 bytes used here.
  check(entry<InitFn>(use_ == Use::kSeal ? kEncryptInit : kDecryptInit)(context_, entry<CipherFn>(kCipher)(), nullptr,
                                                                        key, nullptr),
        "setting a key");
}

Aes256Gcm::~Aes256Gcm() {
  if (context_ != nullptr) entry<ContextFreeFn>(kContextFree)(context_);
}

void Aes256Gcm::seal(const uint8_t nonce[kNonceBytes], ByteView aad, const ByteView* pieces, size_t count, uint8_t* out,
                     uint8_t tag[kTagBytes]) {
  const UpdateFn update = startRecord(context_, Use::kSeal, nonce, aad);
  int length = 0;
  size_t written = 0;
  for (size_t i = 0; i < count; ++i) {
    if (pieces[i].size == 0) continue;
    check(update(context_, out + written, &length, static_cast<const unsigned char*>(pieces[i].data),
                 checkedLength(pieces[i].size)),
          "encrypting");
    // GCM is a stream mode: every byte in comes out at once.
    if (static_cast<size_t>(length) != pieces[i].size)
      throwError(collSystemError, "libcrypto's AES-256-GCM returned %d bytes for %zu", length, pieces[i].size);
    written += pieces[i].size;
  }
  check(entry<FinalFn>(kEncryptFinal)(context_, out + written, &length), "finishing a record");
  check(entry<ContextCtrlFn>(kContextCtrl)(context_, kCtrlGetTag, static_cast<int>(kTagBytes), tag), "reading the tag");
}

bool Aes256Gcm::open(const uint8_t nonce[kNonceBytes], ByteView aad, uint8_t* data, size_t size,
                     const uint8_t tag[kTagBytes]) {
  const UpdateFn update = startRecord(context_, Use::kOpen, nonce, aad);
  int length = 0;
  if (size > 0) check(update(context_, data, &length, data, checkedLength(size)), "decrypting");
  // SET_TAG takes a non-const pointer but only reads it.
  check(
      entry<ContextCtrlFn>(kContextCtrl)(context_, kCtrlSetTag, static_cast<int>(kTagBytes), const_cast<uint8_t*>(tag)),
      "setting the expected tag");
  return entry<FinalFn>(kDecryptFinal)(context_, data + size, &length) == 1;
}

}  // namespace coll
