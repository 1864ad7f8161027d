#include "bootstrap/store_protocol.h"

#include <cstring>

namespace coll {
namespace bootstrap {
namespace wire {

FrameWriter::FrameWriter(Op op, uint32_t seq) {
  buffer_.resize(kHeaderBytes);
  u8(static_cast<uint8_t>(op));
  u32(seq);
}

FrameWriter& FrameWriter::u8(uint8_t v) {
  buffer_.push_back(v);
  return *this;
}

FrameWriter& FrameWriter::u16(uint16_t v) {
  for (int i = 0; i < 2; ++i) buffer_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return *this;
}

FrameWriter& FrameWriter::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) buffer_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return *this;
}

FrameWriter& FrameWriter::i64(int64_t v) {
  uint64_t u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) buffer_.push_back(static_cast<uint8_t>(u >> (8 * i)));
  return *this;
}

FrameWriter& FrameWriter::raw(const void* data, size_t size) {
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  buffer_.insert(buffer_.end(), bytes, bytes + size);
  return *this;
}

FrameWriter& FrameWriter::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  return raw(s.data(), s.size());
}

FrameWriter& FrameWriter::bytes(const Bytes& b) {
  u32(static_cast<uint32_t>(b.size()));
  return raw(b.data(), b.size());
}

void FrameWriter::setSeq(uint32_t seq) {
  for (int i = 0; i < 4; ++i) buffer_[kHeaderBytes + 1 + i] = static_cast<uint8_t>(seq >> (8 * i));
}

Bytes FrameWriter::finish() {
  uint32_t body = static_cast<uint32_t>(buffer_.size() - kHeaderBytes);
  for (int i = 0; i < 4; ++i) buffer_[i] = static_cast<uint8_t>(body >> (8 * i));
  return std::move(buffer_);
}

bool FrameReader::take(size_t n) {
  if (!ok_ || n > size_ - offset_) {
    ok_ = false;
    return false;
  }
  return true;
}

uint8_t FrameReader::u8() {
  if (!take(1)) return 0;
  return data_[offset_++];
}

uint16_t FrameReader::u16() {
  if (!take(2)) return 0;
  uint16_t v = static_cast<uint16_t>(data_[offset_] | (data_[offset_ + 1] << 8));
  offset_ += 2;
  return v;
}

uint32_t FrameReader::u32() {
  if (!take(4)) return 0;
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(data_[offset_ + i]) << (8 * i);
  offset_ += 4;
  return v;
}

int64_t FrameReader::i64() {
  if (!take(8)) return 0;
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(data_[offset_ + i]) << (8 * i);
  offset_ += 8;
  return static_cast<int64_t>(v);
}

void FrameReader::raw(void* out, size_t size) {
  if (!take(size)) {
    memset(out, 0, size);
    return;
  }
  memcpy(out, data_ + offset_, size);
  offset_ += size;
}

std::string FrameReader::str(size_t maxBytes) {
  uint32_t n = u32();
  if (n > maxBytes) ok_ = false;
  if (!take(n)) return std::string();
  std::string s(reinterpret_cast<const char*>(data_ + offset_), n);
  offset_ += n;
  return s;
}

Bytes FrameReader::bytes(size_t maxBytes) {
  uint32_t n = u32();
  if (n > maxBytes) ok_ = false;
  if (!take(n)) return Bytes();
  Bytes b(data_ + offset_, data_ + offset_ + n);
  offset_ += n;
  return b;
}

FrameCheck checkFrame(const uint8_t* data, size_t size, size_t maxBody, size_t* frameBytes) {
  if (size < kHeaderBytes) return FrameCheck::kIncomplete;
  uint32_t body = 0;
  for (int i = 0; i < 4; ++i) body |= static_cast<uint32_t>(data[i]) << (8 * i);
  if (body < kOpAndSeqBytes) return FrameCheck::kTooSmall;
  if (body > maxBody) return FrameCheck::kTooLarge;
  if (size - kHeaderBytes < body) return FrameCheck::kIncomplete;
  *frameBytes = kHeaderBytes + body;
  return FrameCheck::kComplete;
}

Bytes encodeHello(const Nonce& clientNonce, uint32_t magic, uint16_t version) {
  return FrameWriter(Op::kHello, 0).u32(magic).u16(version).raw(clientNonce.data(), clientNonce.size()).finish();
}

Digest256 helloProof(const Secret& secret, ProofRole role, const Nonce& clientNonce, const Nonce& serverNonce) {
  static const char kServerLabel[] = "libcollective store v2: server proof";
  static const char kClientLabel[] = "libcollective store v2: client proof";
  const char* label = role == ProofRole::kServer ? kServerLabel : kClientLabel;
  return hmacSha256({secret.data(), secret.size()}, {{label, std::strlen(label)},
                                                     {clientNonce.data(), clientNonce.size()},
                                                     {serverNonce.data(), serverNonce.size()}});
}

bool helloProofMatches(const Secret& secret, ProofRole role, const Nonce& clientNonce, const Nonce& serverNonce,
                       const Digest256& proof) {
  const Digest256 expected = helloProof(secret, role, clientNonce, serverNonce);
  return equalInConstantTime(proof.data(), expected.data(), expected.size());
}

RecordKeys storeRecordKeys(const Secret& secret, const Nonce& clientNonce, const Nonce& serverNonce) {
  return deriveRecordKeys(secret, "libcollective store v2: records", clientNonce.data(), serverNonce.data());
}

void sealRecord(RecordCipher& cipher, Bytes* frame) {
  const size_t body = frame->size() - kHeaderBytes;
  const uint32_t length = static_cast<uint32_t>(body + kRecordTagBytes);
  for (int i = 0; i < 4; ++i) (*frame)[i] = static_cast<uint8_t>(length >> (8 * i));
  frame->resize(frame->size() + kRecordTagBytes);
  uint8_t* data = frame->data() + kHeaderBytes;
  const ByteView plain{data, body};
  cipher.seal({frame->data(), kHeaderBytes}, &plain, 1, data, data + body);
}

bool openRecord(RecordCipher& cipher, uint8_t* record, size_t recordBytes) {
  if (recordBytes < kHeaderBytes + kRecordTagBytes) return false;
  const size_t body = recordBytes - kHeaderBytes - kRecordTagBytes;
  uint8_t* data = record + kHeaderBytes;
  return cipher.open({record, kHeaderBytes}, data, body, data + body);
}

const char* opName(uint8_t op) {
  switch (static_cast<Op>(op)) {
    case Op::kHello:
      return "hello";
    case Op::kSet:
      return "set";
    case Op::kGet:
      return "get";
    case Op::kAdd:
      return "add";
    case Op::kCheck:
      return "check";
    case Op::kWait:
      return "wait";
    case Op::kHelloProof:
      return "hello proof";
    case Op::kSetOnClose:
      return "set-on-close";
    case Op::kRankIntro:
      return "rank-intro";
    case Op::kRankRecords:
      return "rank-records";
    case Op::kEncrypt:
      return "encrypt";
    case Op::kHelloOk:
      return "hello-ok";
    case Op::kHelloReject:
      return "hello-reject";
    case Op::kOk:
      return "ok";
    case Op::kValue:
      return "value";
    case Op::kNotFound:
      return "not-found";
    case Op::kCounter:
      return "counter";
    case Op::kCheckResult:
      return "check-result";
    case Op::kError:
      return "error";
    case Op::kHelloChallenge:
      return "hello-challenge";
  }
  return "unknown";
}

}  // namespace wire
}  // namespace bootstrap
}  // namespace coll
