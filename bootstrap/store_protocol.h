// The wire format between TcpStoreClient and TcpStoreServer.
//
// Every message is a frame: a little-endian u32 body length, then the body: u8 opcode, u32
// sequence number, then the opcode's fields (integers little-endian; strings and byte arrays as a
// u32 length then the bytes). The client numbers its requests and the server echoes the number in
// the reply, so that replies can arrive out of order (a blocked get does not hold up a set on
// the same connection) and a reply to a request the client gave up on is recognised and dropped.
//
// A connection starts with a mutual challenge-response that proves knowledge of the job's secret
// without sending it (a captured exchange cannot be replayed: each side's proof covers the
// other's fresh nonce):
//   client: kHello        magic, version, client nonce (32 random bytes)
//   server: kHelloChallenge  server nonce, server proof = HMAC(secret, "server" label, nonces)
//   client: checks the server's proof (a store that does not know the secret is refused), then
//           kHelloProof   client proof = HMAC(secret, "client" label, nonces)
//   server: kHelloOk, or kHelloReject and closes.
// A client under COLL_NET_ENCRYPT=1 then sends kEncrypt, and from the server's reply on every
// frame in both directions is a sealed record (record_layer.h): the u32 length (body plus
// authentication tag, authenticated with them), the body encrypted, then the 16-byte tag. The
// keys come from the secret and both hello nonces, so they are the connection's alone; that the
// reply opens proves the store derived them too. The store encrypts every connection whose client
// asks: ranks that differ on the setting are refused by every rank at init (src/comm_init.cc).
// Readers here never trust a length: every field is checked against what remains in the frame
// and against its own maximum before anything is allocated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "common/hmac.h"
#include "common/record_layer.h"

namespace coll {
namespace bootstrap {
namespace wire {

constexpr uint32_t kMagic = 0x54534c43;  // "CLST" in little-endian bytes
constexpr uint16_t kVersion = 2;  // 2: challenge-response (1 sent the secret itself)
constexpr size_t kHeaderBytes = 4;
constexpr size_t kOpAndSeqBytes = 5;
using Nonce = std::array<uint8_t, 32>;
// A hello body is exactly 1 + 4 + 4 + 2 + 32 bytes and a proof's is shorter; anything bigger
// before authentication is an unauthenticated peer trying to make the server buffer data.
constexpr size_t kHelloBodyBytes = kOpAndSeqBytes + 4 + 2 + sizeof(Nonce);
constexpr size_t kProofBodyBytes = kOpAndSeqBytes + sizeof(Digest256);
constexpr size_t kMaxUnauthenticatedBodyBytes = kHelloBodyBytes;
static_assert(kProofBodyBytes <= kMaxUnauthenticatedBodyBytes, "a proof fits the unauthenticated limit");
constexpr size_t kMaxKeysPerRequest = 65536;
// The largest legitimate body: a set of the largest key and value, plus field headers.
constexpr size_t kMaxBodyBytes = kOpAndSeqBytes + 8 + kMaxKeyBytes + kMaxValueBytes;
constexpr size_t kMaxErrorMessageBytes = 1024;
// What one connection may leave behind for its close (kSetOnClose): a few small notices.
constexpr size_t kMaxOnCloseKeysPerClient = 1024;
constexpr size_t kMaxOnCloseValueBytes = 4096;

enum class Op : uint8_t {
  // client -> server
  kHello = 1,  // u32 magic, u16 version, 32-byte client nonce
  kSet = 2,    // str key, bytes value                         -> kOk
  kGet = 3,    // u32 timeoutMs, str key                        -> kValue | kNotFound (after timeoutMs)
  kAdd = 4,    // str key, i64 delta                            -> kCounter | kError
  kCheck = 5,  // u32 n, n x str key                            -> kCheckResult
  kWait = 6,   // u32 timeoutMs, u32 n, n x str key             -> kOk | kNotFound (after timeoutMs)
  kHelloProof = 7,  // 32-byte client proof                     -> kHelloOk | kHelloReject
  kSetOnClose = 8,  // str key, bytes value: set when this connection closes, unless set by then -> kOk | kError
  // rank -> rank, on the bootstrap all-gather's links (rank_link.h), after the same hello
  kRankIntro = 9,    // u32 rank, u32 nranks, 16-byte listener token          -> kHelloOk | kHelloReject
  kRankRecords = 10, // str tag, u32 round, u32 first rank, u32 n, n x bytes record
  kEncrypt = 11,     // (nothing): every later frame both ways is a sealed record  -> kOk, sealed
  // server -> client
  kHelloOk = 64,
  kHelloReject = 65,  // u8 RejectReason, str message
  kOk = 66,
  kValue = 67,  // bytes value
  kNotFound = 68,
  kCounter = 69,      // i64 new value
  kCheckResult = 70,  // u8 0|1
  kError = 71,        // str message
  kHelloChallenge = 72,  // 32-byte server nonce, 32-byte server proof
};

enum class RejectReason : uint8_t { kWrongSecret = 1, kVersionMismatch = 2 };

// Builds one frame. The length prefix is filled in by finish().
class FrameWriter {
 public:
  FrameWriter(Op op, uint32_t seq);
  FrameWriter& u8(uint8_t v);
  FrameWriter& u16(uint16_t v);
  FrameWriter& u32(uint32_t v);
  FrameWriter& i64(int64_t v);
  FrameWriter& raw(const void* data, size_t size);
  FrameWriter& str(const std::string& s);
  FrameWriter& bytes(const Bytes& b);
  // The client numbers a request only once it is about to send it.
  void setSeq(uint32_t seq);
  Bytes finish();

 private:
  Bytes buffer_;
};

// Reads fields from one frame body. A read past the end, or a length above its maximum, marks
// the reader failed and returns zeros; callers check ok()/atEnd() once after reading all fields.
class FrameReader {
 public:
  FrameReader(const uint8_t* body, size_t size) : data_(body), size_(size) {}
  uint8_t u8();
  uint16_t u16();
  uint32_t u32();
  int64_t i64();
  void raw(void* out, size_t size);
  std::string str(size_t maxBytes);
  Bytes bytes(size_t maxBytes);
  bool ok() const { return ok_; }
  // Every byte consumed and nothing failed: trailing garbage is as malformed as a short frame.
  bool atEnd() const { return ok_ && offset_ == size_; }

 private:
  bool take(size_t n);
  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
  bool ok_ = true;
};

enum class FrameCheck { kIncomplete, kComplete, kTooSmall, kTooLarge };

// Looks at the start of a receive buffer: whether a whole frame is there (then *frameBytes is
// header + body) or the length prefix is out of [kOpAndSeqBytes, maxBody].
FrameCheck checkFrame(const uint8_t* data, size_t size, size_t maxBody, size_t* frameBytes);

Bytes encodeHello(const Nonce& clientNonce, uint32_t magic = kMagic, uint16_t version = kVersion);

enum class ProofRole { kServer, kClient };
// What a side proves the secret with: HMAC-SHA256 under the secret of the role's label and both
// nonces. The labels differ, so a proof reflected back to its sender is worthless.
Digest256 helloProof(const Secret& secret, ProofRole role, const Nonce& clientNonce, const Nonce& serverNonce);
// Whether `proof` is that proof (compared in constant time).
bool helloProofMatches(const Secret& secret, ProofRole role, const Nonce& clientNonce, const Nonce& serverNonce,
                       const Digest256& proof);

// A store connection's record keys (kEncrypt): from the secret and both hello nonces.
RecordKeys storeRecordKeys(const Secret& secret, const Nonce& clientNonce, const Nonce& serverNonce);
// Turns a whole frame (length prefix included) into the next sealed record of `cipher`.
void sealRecord(RecordCipher& cipher, Bytes* frame);
// Opens a whole record (length prefix included, as checkFrame found it, with a maximum raised by
// kRecordTagBytes) in place: its frame body is then at record + kHeaderBytes, recordBytes -
// kHeaderBytes - kRecordTagBytes long. False when it is too short to hold a tag or does not
// authenticate as the next record; the connection must then be closed.
bool openRecord(RecordCipher& cipher, uint8_t* record, size_t recordBytes);

const char* opName(uint8_t op);

}  // namespace wire
}  // namespace bootstrap
}  // namespace coll
