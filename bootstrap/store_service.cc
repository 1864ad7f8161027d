#include "bootstrap/store_service.h"

#include <algorithm>

#include "common/error.h"
#include "common/logging.h"
#include "common/random.h"

namespace coll {
namespace bootstrap {

using wire::FrameReader;
using wire::FrameWriter;
using wire::Op;

namespace {

void requireEnd(const FrameReader& r, uint8_t op) {
  if (!r.atEnd()) throw ProtocolError(formatString("malformed '%s' request", wire::opName(op)));
}

size_t entryBytes(const std::pair<std::string, Bytes>& entry) { return entry.first.size() + entry.second.size(); }

std::vector<std::string> readKeys(FrameReader& r) {
  uint32_t n = r.u32();
  if (n > wire::kMaxKeysPerRequest) throw ProtocolError(formatString("%u keys in one request", n));
  std::vector<std::string> keys;
  // The reader fails at the first key past the frame's end, so n cannot force a big allocation.
  for (uint32_t i = 0; i < n && r.ok(); ++i) keys.push_back(r.str(kMaxKeyBytes));
  return keys;
}

}  // namespace

bool StoreService::authenticated(ConnId conn) const {
  auto it = clients_.find(conn);
  return it != clients_.end() && it->second.stage == Stage::kAuthenticated;
}

bool StoreService::encrypted(ConnId conn) const {
  auto it = clients_.find(conn);
  return it != clients_.end() && it->second.ciphers.open != nullptr;
}

bool StoreService::handleFrame(ConnId conn, const std::string& peer, const uint8_t* body, size_t size,
                               std::vector<Outgoing>* out) {
  const size_t first = out->size();
  bool keep = true;
  auto client = clients_.find(conn);
  if (client != clients_.end() && client->second.ciphers.open != nullptr) {
    Bytes record(wire::kHeaderBytes + size);
    for (size_t i = 0; i < wire::kHeaderBytes; ++i) record[i] = static_cast<uint8_t>(size >> (8 * i));
    std::copy(body, body + size, record.begin() + wire::kHeaderBytes);
    if (!wire::openRecord(*client->second.ciphers.open, record.data(), record.size()))
      throw ProtocolError("a record that failed authentication (altered, replayed or reordered on the way)");
    keep = handlePlainFrame(conn, peer, record.data() + wire::kHeaderBytes, size - kRecordTagBytes, out);
  } else {
    keep = handlePlainFrame(conn, peer, body, size, out);
  }
  sealFrom(first, out);
  return keep;
}

void StoreService::sealFrom(size_t first, std::vector<Outgoing>* out) {
  for (size_t i = first; i < out->size(); ++i) {
    auto client = clients_.find((*out)[i].conn);
    if (client != clients_.end() && client->second.ciphers.seal != nullptr)
      wire::sealRecord(*client->second.ciphers.seal, &(*out)[i].frame);
  }
}

bool StoreService::handlePlainFrame(ConnId conn, const std::string& peer, const uint8_t* body, size_t size,
                                    std::vector<Outgoing>* out) {
  FrameReader r(body, size);
  uint8_t op = r.u8();
  uint32_t seq = r.u32();
  const auto client = clients_.find(conn);
  const Stage stage = client != clients_.end() ? client->second.stage : Stage::kAwaitingHello;
  if (stage == Stage::kAwaitingHello) {
    if (op != static_cast<uint8_t>(Op::kHello)) {
      throw ProtocolError(formatString("first frame is '%s', not hello", wire::opName(op)));
    }
    return handleHello(conn, peer, r, seq, out);
  }
  if (stage == Stage::kAwaitingProof) {
    if (op != static_cast<uint8_t>(Op::kHelloProof)) {
      throw ProtocolError(formatString("'%s' before the hello's proof", wire::opName(op)));
    }
    return handleProof(conn, peer, r, seq, out);
  }
  handleRequest(conn, op, seq, r, out);
  return true;
}

std::string StoreService::refusalMessage(StoreTable::WriteResult result, ConnId conn, const std::string& key) {
  const std::string shownKey = key.substr(0, 200);
  if (result == StoreTable::WriteResult::kNotACounter) {
    return "the value of key '" + shownKey + "' is not a decimal counter, or adding the delta overflows int64";
  }
  if (result == StoreTable::WriteResult::kOverShare) {
    return formatString("this client's share of the rendezvous store is used up: it holds %zu bytes, one client may "
                        "hold %zu (COLL_STORE_MAX_CLIENT_BYTES); key '%s' was not written",
                        table_.bytesOf(conn), table_.maxBytesPerOwner(), shownKey.c_str());
  }
  if (Clock::now() >= nextFullWarning_) {
    COLL_WARN(kBootstrap, "rendezvous store %s: full (%zu of %zu bytes, COLL_STORE_MAX_BYTES); refusing writes",
              name_.c_str(), table_.storedBytes(), table_.maxBytes());
    nextFullWarning_ = Clock::now() + std::chrono::seconds(10);
  }
  return formatString("the rendezvous store is full: it holds %zu bytes, its limit is %zu (COLL_STORE_MAX_BYTES); "
                      "key '%s' was not written",
                      table_.storedBytes(), table_.maxBytes(), shownKey.c_str());
}

bool StoreService::handleHello(ConnId conn, const std::string& peer, FrameReader& r, uint32_t seq,
                               std::vector<Outgoing>* out) {
  uint32_t magic = r.u32();
  uint16_t version = r.u16();
  wire::Nonce clientNonce{};
  r.raw(clientNonce.data(), clientNonce.size());
  if (!r.atEnd()) throw ProtocolError("malformed hello");
  if (magic != wire::kMagic) throw ProtocolError(formatString("not a libcollective client (magic 0x%08x)", magic));
  if (version != wire::kVersion) {
    return reject(conn, peer, seq, wire::RejectReason::kVersionMismatch,
                  formatString("client speaks protocol version %u, this store speaks %u", version, wire::kVersion),
                  out);
  }
  Client& client = clients_[conn];
  client.clientNonce = clientNonce;
  fillRandom(client.serverNonce.data(), client.serverNonce.size(), "the rendezvous store's challenge");
  client.stage = Stage::kAwaitingProof;
  const Digest256 proof = wire::helloProof(secret_, wire::ProofRole::kServer, clientNonce, client.serverNonce);
  out->push_back({conn, FrameWriter(Op::kHelloChallenge, seq)
                            .raw(client.serverNonce.data(), client.serverNonce.size())
                            .raw(proof.data(), proof.size())
                            .finish()});
  return true;
}

bool StoreService::handleProof(ConnId conn, const std::string& peer, FrameReader& r, uint32_t seq,
                               std::vector<Outgoing>* out) {
  Digest256 proof{};
  r.raw(proof.data(), proof.size());
  if (!r.atEnd()) throw ProtocolError("malformed hello proof");
  Client& client = clients_[conn];
  if (!wire::helloProofMatches(secret_, wire::ProofRole::kClient, client.clientNonce, client.serverNonce, proof)) {
    return reject(conn, peer, seq, wire::RejectReason::kWrongSecret, "wrong secret", out);
  }
  client.stage = Stage::kAuthenticated;
  out->push_back({conn, FrameWriter(Op::kHelloOk, seq).finish()});
  return true;
}

bool StoreService::reject(ConnId conn, const std::string& peer, uint32_t seq, wire::RejectReason reason,
                          const std::string& message, std::vector<Outgoing>* out) {
  lastRejection_ = formatString("rejected %s: %s (is another job using this address?)", peer.c_str(), message.c_str());
  out->push_back({conn, FrameWriter(Op::kHelloReject, seq).u8(static_cast<uint8_t>(reason)).str(message).finish()});
  return false;
}

void StoreService::handleRequest(ConnId conn, uint8_t op, uint32_t seq, FrameReader& r, std::vector<Outgoing>* out) {
  std::vector<StoreTable::WaiterId> ready;
  switch (static_cast<Op>(op)) {
    case Op::kSet: {
      std::string key = r.str(kMaxKeyBytes);
      Bytes value = r.bytes(kMaxValueBytes);
      requireEnd(r, op);
      const StoreTable::WriteResult written = table_.set(key, std::move(value), &ready, conn);
      if (written == StoreTable::WriteResult::kOk) {
        out->push_back({conn, FrameWriter(Op::kOk, seq).finish()});
      } else {
        out->push_back({conn, FrameWriter(Op::kError, seq).str(refusalMessage(written, conn, key)).finish()});
      }
      break;
    }
    case Op::kGet: {
      uint32_t timeoutMs = r.u32();
      std::string key = r.str(kMaxKeyBytes);
      requireEnd(r, op);
      if (const Bytes* value = table_.find(key)) {
        out->push_back({conn, FrameWriter(Op::kValue, seq).bytes(*value).finish()});
      } else {
        park(conn, seq, {key}, timeoutMs, true, out);
      }
      break;
    }
    case Op::kAdd: {
      std::string key = r.str(kMaxKeyBytes);
      int64_t delta = r.i64();
      requireEnd(r, op);
      int64_t result = 0;
      const StoreTable::WriteResult added = table_.add(key, delta, &result, &ready, conn);
      if (added == StoreTable::WriteResult::kOk) {
        out->push_back({conn, FrameWriter(Op::kCounter, seq).i64(result).finish()});
      } else {
        out->push_back({conn, FrameWriter(Op::kError, seq).str(refusalMessage(added, conn, key)).finish()});
      }
      break;
    }
    case Op::kCheck: {
      std::vector<std::string> keys = readKeys(r);
      requireEnd(r, op);
      out->push_back({conn, FrameWriter(Op::kCheckResult, seq).u8(table_.hasAll(keys) ? 1 : 0).finish()});
      break;
    }
    case Op::kWait: {
      uint32_t timeoutMs = r.u32();
      std::vector<std::string> keys = readKeys(r);
      requireEnd(r, op);
      if (table_.hasAll(keys)) {
        out->push_back({conn, FrameWriter(Op::kOk, seq).finish()});
      } else {
        park(conn, seq, keys, timeoutMs, false, out);
      }
      break;
    }
    case Op::kSetOnClose: {
      std::string key = r.str(kMaxKeyBytes);
      Bytes value = r.bytes(wire::kMaxOnCloseValueBytes);
      requireEnd(r, op);
      auto& onClose = clients_[conn].onClose;
      // A long-lived process registers once per communicator it makes: past the cap the oldest
      // registration (most likely a communicator long destroyed) makes room.
      if (onClose.size() >= wire::kMaxOnCloseKeysPerClient) {
        table_.release(conn, entryBytes(onClose.front()));
        onClose.erase(onClose.begin());
      }
      // Kept outside the table until the close, but held against the same limits.
      const StoreTable::WriteResult reserved = table_.reserve(conn, key.size() + value.size());
      if (reserved != StoreTable::WriteResult::kOk) {
        out->push_back({conn, FrameWriter(Op::kError, seq).str(refusalMessage(reserved, conn, key)).finish()});
        break;
      }
      onClose.emplace_back(std::move(key), std::move(value));
      out->push_back({conn, FrameWriter(Op::kOk, seq).finish()});
      break;
    }
    case Op::kEncrypt: {
      requireEnd(r, op);
      Client& client = clients_[conn];
      if (client.ciphers.open != nullptr) throw ProtocolError("a second 'encrypt' request");
      // The reply is the first sealed record (sealFrom): the client learns that the store
      // derived the same keys by opening it.
      const RecordKeys keys = wire::storeRecordKeys(secret_, client.clientNonce, client.serverNonce);
      client.ciphers = makeRecordCiphers(keys, RecordSide::kAccepter);
      out->push_back({conn, FrameWriter(Op::kOk, seq).finish()});
      break;
    }
    default:
      throw ProtocolError(formatString("unknown or unexpected opcode %u", static_cast<unsigned>(op)));
  }
  // The requester's own reply goes first, then the requests its set or add completed.
  for (auto id : ready) answer(id, true, out);
}

void StoreService::park(ConnId conn, uint32_t seq, const std::vector<std::string>& keys, uint32_t timeoutMs, bool isGet,
                        std::vector<Outgoing>* out) {
  if (timeoutMs == 0) {
    out->push_back({conn, FrameWriter(Op::kNotFound, seq).finish()});
    return;
  }
  Client& client = clients_[conn];
  if (client.waiters.size() >= kMaxWaitersPerClient) throw ProtocolError("too many pending get/wait requests");
  auto id = table_.addWaiter(keys, Clock::now() + std::chrono::milliseconds(timeoutMs));
  parked_[id] = Parked{conn, seq, isGet, isGet ? keys.front() : std::string()};
  client.waiters.push_back(id);
}

void StoreService::answer(StoreTable::WaiterId id, bool found, std::vector<Outgoing>* out) {
  auto it = parked_.find(id);
  if (it == parked_.end()) return;
  Parked p = std::move(it->second);
  parked_.erase(it);
  auto client = clients_.find(p.conn);
  if (client != clients_.end()) {
    auto& ids = client->second.waiters;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
  }
  if (!found) {
    out->push_back({p.conn, FrameWriter(Op::kNotFound, p.seq).finish()});
  } else if (p.isGet) {
    out->push_back({p.conn, FrameWriter(Op::kValue, p.seq).bytes(*table_.find(p.key)).finish()});
  } else {
    out->push_back({p.conn, FrameWriter(Op::kOk, p.seq).finish()});
  }
}

void StoreService::expire(Deadline now, std::vector<Outgoing>* out) {
  const size_t first = out->size();
  for (auto id : table_.takeExpired(now)) answer(id, false, out);
  sealFrom(first, out);
}

void StoreService::disconnect(ConnId conn, std::vector<Outgoing>* out) {
  auto it = clients_.find(conn);
  if (it == clients_.end()) return;
  for (auto id : it->second.waiters) {
    table_.removeWaiter(id);
    parked_.erase(id);
  }
  std::vector<std::pair<std::string, Bytes>> onClose = std::move(it->second.onClose);
  clients_.erase(it);
  for (const auto& entry : onClose) table_.release(conn, entryBytes(entry));
  table_.forgetOwner(conn);
  // The notices were reserved, so they fit now; they belong to no one left. One already set
  // stays: the first rank to go is the cause, later ones failed because of it.
  std::vector<StoreTable::WaiterId> ready;
  for (auto& [key, value] : onClose)
    if (table_.find(key) == nullptr) table_.set(key, std::move(value), &ready);
  const size_t first = out->size();
  for (auto id : ready) answer(id, true, out);
  sealFrom(first, out);
}

}  // namespace bootstrap
}  // namespace coll
