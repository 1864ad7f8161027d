// The record layer that COLL_NET_ENCRYPT=1 puts under the socket transport and the rendezvous
// store (docs/security.md): each record is sealed with AES-256-GCM (aead.h) under a key that
// belongs to one connection and one direction, with a 96-bit nonce counted up from zero, so that
// no (key, nonce) pair is ever used twice and a record replayed, dropped or reordered fails
// authentication at the receiver, which counts the same way. A counter that would wrap fails the
// connection instead.
//
// Keys come from HKDF-SHA256 over a key derived from the job's secret, salted with both ends'
// fresh handshake nonces, for a purpose (`label`) and a direction: a new connection of the same
// pair gets new keys, and the two directions of one connection never share one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/aead.h"

namespace coll {

using RecordKey = std::array<uint8_t, Aes256Gcm::kKeyBytes>;
constexpr size_t kRecordTagBytes = Aes256Gcm::kTagBytes;

// The two keys of one connection: from the side that opened it (the client, the dialler) to
// the side that accepted it, and back.
struct RecordKeys {
  RecordKey opener;
  RecordKey accepter;
};

// `secret` is the job's secret or a key derived from it alone; the nonces are the two ends'
// fresh handshake nonces (32 bytes each); `label` names the protocol, so that the store and the
// socket transport never derive the same keys.
RecordKeys deriveRecordKeys(const std::array<uint8_t, 32>& secret, const char* label, const uint8_t openerNonce[32],
                            const uint8_t accepterNonce[32]);

// One direction of a connection: seals (or opens) its records in order.
class RecordCipher {
 public:
  // `firstRecord` lets tests start near the end of the counter.
  RecordCipher(Aes256Gcm::Use use, const RecordKey& key, uint64_t firstRecord = 0);

  // Seals the next record: encrypts the pieces into `out` and writes its tag; `header` is
  // authenticated, not encrypted. Throws collRemoteError once the counter is spent.
  void seal(ByteView header, const ByteView* pieces, size_t count, uint8_t* out, uint8_t tag[kRecordTagBytes]);
  // Opens the next record in place. False, and the record counts as used, when it was not sealed
  // by the other end as the next record of this direction (altered, replayed, reordered, or from
  // another connection); the connection must then be closed.
  bool open(ByteView header, uint8_t* data, size_t size, const uint8_t tag[kRecordTagBytes]);
  uint64_t recordsUsed() const { return next_; }

 private:
  void nextNonce(uint8_t nonce[Aes256Gcm::kNonceBytes]);
  Aes256Gcm aead_;
  uint64_t next_;
};

// A connection's pair of ciphers as one side holds them.
struct RecordCiphers {
  std::unique_ptr<RecordCipher> seal;
  std::unique_ptr<RecordCipher> open;
};
enum class RecordSide { kOpener, kAccepter };
RecordCiphers makeRecordCiphers(const RecordKeys& keys, RecordSide side);

// COLL_NET_ENCRYPT from the environment (0 when unset); throws collInvalidUsage for anything but
// 0/1 (or true/false, yes/no, on/off).
bool encryptionRequested();

// Throws collInvalidUsage naming COLL_NET_ENCRYPT and what is missing when `secret` is all zeros
// (a job run with COLL_STORE_ALLOW_NO_SECRET=1, or a store without a secret): keys derived from
// a secret everyone knows would protect nothing. `where` names the connection for the message.
void requireSecretForEncryption(const std::array<uint8_t, 32>& secret, const char* where);

}  // namespace coll
