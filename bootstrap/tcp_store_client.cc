// TcpStoreClient: requests are numbered and any number of threads may have one outstanding.
// Whichever waiting thread finds no other thread reading becomes the reader: it reads replies
// and hands each to the thread whose sequence number it carries. That keeps one socket per
// client, lets a set() pass a get() blocked on the same connection (a shared client would
// otherwise deadlock when one thread waits for a key another thread is about to set), and needs
// no background thread.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "bootstrap/store_deadline.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/tcp_store.h"
#include "common/error.h"
#include "common/logging.h"
#include "common/random.h"

namespace coll {
namespace bootstrap {

using wire::FrameReader;
using wire::FrameWriter;
using wire::Op;

namespace {

// The server answers a parked get/wait with "not found" at the deadline we send it; waiting a
// little longer for that answer avoids reporting a timeout for a key set right at the deadline
// while still bounding the wait if the server is stuck.
constexpr auto kReplyGrace = std::chrono::milliseconds(1000);
// The pause before connecting again after the store closed the connection mid-handshake, times
// the attempt (at most 20).
constexpr auto kRetryStep = std::chrono::milliseconds(5);
// Replies are bounded like requests: a value plus field headers.
constexpr size_t kMaxReplyBody = wire::kOpAndSeqBytes + 4 + kMaxValueBytes;

Deadline addSaturating(Deadline d, std::chrono::milliseconds extra) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Deadline::max() - d) <= extra ? Deadline::max()
                                                                                             : d + extra;
}

// The timeout the server should apply: what is left until the deadline, rounded up, clamped.
uint32_t remainingMs(Deadline deadline) {
  auto now = Clock::now();
  if (deadline <= now) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return ms > static_cast<long long>(UINT32_MAX) ? UINT32_MAX : static_cast<uint32_t>(ms);
}

std::string quoteKeys(const std::vector<std::string>& keys) {
  std::string text;
  for (size_t i = 0; i < keys.size() && i < 3; ++i) text += (i ? ", '" : "'") + keys[i].substr(0, 200) + "'";
  if (keys.size() > 3) text += formatString(" (and %zu more)", keys.size() - 3);
  return text;
}

void writeKeys(FrameWriter& w, const std::vector<std::string>& keys) {
  if (keys.size() > wire::kMaxKeysPerRequest) {
    throwError(collInvalidArgument, "TcpStoreClient: %zu keys in one request (at most %zu)", keys.size(),
               wire::kMaxKeysPerRequest);
  }
  w.u32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
}

void checkKey(const char* function, const std::string& key) {
  if (key.size() > kMaxKeyBytes) {
    throwError(collInvalidArgument, "TcpStoreClient::%s: key of %zu bytes (at most %zu)", function, key.size(),
               kMaxKeyBytes);
  }
}

}  // namespace

TcpStoreClient::TcpStoreClient(const std::string& host, uint16_t port, const Secret& secret, Deadline connectDeadline,
                               bool encrypt)
    : address_(formatHostPort(host, port)), secret_(secret) {
  if (encrypt) requireSecretForEncryption(secret, "the rendezvous store connection");
  const auto start = Clock::now();
  std::pair<wire::Nonce, wire::Nonce> nonces;
  for (int attempt = 1;; ++attempt) {
    fd_ = connectWithDeadline(host, port, connectDeadline, "rendezvous store");
    try {
      nonces = handshake(secret, start, connectDeadline);
      break;
    } catch (const CollError&) {
      // A store says why it refuses a client (kHelloReject); one that closes the connection
      // mid-handshake without a word is making room, as it does under a flood of connections
      // (common/listener_gate.h) when this rank was slow to answer: connect again, until the
      // deadline.
      if (brokenReason_ != kClosedByStore || Clock::now() >= connectDeadline) throw;
      if (attempt == 1)
        COLL_WARN(kBootstrap,
                  "the rendezvous store at %s closed the connection during the handshake (a store under a flood of "
                  "connections makes room so): connecting again until the deadline",
                  address_.c_str());
      // A little longer each time, so that a store shutting down is not dialled in a tight loop.
      std::this_thread::sleep_until(std::min(connectDeadline, Clock::now() + std::min(attempt, 20) * kRetryStep));
      if (Clock::now() >= connectDeadline) throw;
      startOver();
    }
  }
  if (encrypt) startEncryption(nonces, connectDeadline);
  COLL_INFO(kBootstrap, "connected to the rendezvous store at %s%s", address_.c_str(),
            encrypt ? " (encrypted: COLL_NET_ENCRYPT=1)" : "");
}

void TcpStoreClient::startEncryption(const std::pair<wire::Nonce, wire::Nonce>& nonces, Deadline deadline) {
  RecordCiphers ciphers =
      makeRecordCiphers(wire::storeRecordKeys(secret_, nonces.first, nonces.second), RecordSide::kOpener);
  // The request goes in plaintext, its reply comes sealed.
  open_ = std::move(ciphers.open);
  FrameWriter request(Op::kEncrypt, 0);
  Reply reply;
  if (!roundTrip(request, deadline, "starting encryption (COLL_NET_ENCRYPT=1)", &reply))
    throwError(collTimeout, "TcpStoreClient: the rendezvous store at %s did not answer the request to encrypt",
               address_.c_str());
  if (reply.op != static_cast<uint8_t>(Op::kOk)) throwUnexpected("starting encryption (COLL_NET_ENCRYPT=1)", reply.op);
  seal_ = std::move(ciphers.seal);
}

TcpStoreClient::~TcpStoreClient() = default;

std::pair<wire::Nonce, wire::Nonce> TcpStoreClient::handshake(const Secret& secret, Clock::time_point start,
                                                              Deadline deadline) {
  wire::Nonce clientNonce{};
  wire::Nonce serverNonce{};
  fillRandom(clientNonce.data(), clientNonce.size(), "the rendezvous store client's nonce");
  FrameWriter hello(Op::kHello, 0);
  hello.u32(wire::kMagic).u16(wire::kVersion).raw(clientNonce.data(), clientNonce.size());
  Reply reply;
  if (!roundTrip(hello, deadline, "connecting", &reply)) {
    throwError(collTimeout, "TcpStoreClient: no rendezvous store answered at %s after %lld ms", address_.c_str(),
               elapsedMs(start, Clock::now()));
  }
  if (reply.op == static_cast<uint8_t>(Op::kHelloChallenge)) {
    FrameReader r(reply.body.data(), reply.body.size());
    Digest256 serverProof{};
    r.raw(serverNonce.data(), serverNonce.size());
    r.raw(serverProof.data(), serverProof.size());
    if (!r.atEnd()) throwUnexpected("connecting", reply.op);
    // The store proves it knows the secret before this client proves anything: a stranger
    // posing as the store learns nothing it could use.
    if (!wire::helloProofMatches(secret, wire::ProofRole::kServer, clientNonce, serverNonce, serverProof)) {
      throwError(collInvalidUsage,
                 "TcpStoreClient: wrong secret: the rendezvous store at %s does not hold this rank's secret (another "
                 "job's store? check MASTER_ADDR, MASTER_PORT and that every rank has the same COLL_STORE_SECRET)",
                 address_.c_str());
    }
    const Digest256 proof = wire::helloProof(secret, wire::ProofRole::kClient, clientNonce, serverNonce);
    FrameWriter answer(Op::kHelloProof, 0);
    answer.raw(proof.data(), proof.size());
    if (!roundTrip(answer, deadline, "connecting", &reply)) {
      throwError(collTimeout,
                 "TcpStoreClient: the rendezvous store at %s did not answer this client's proof after %lld ms",
                 address_.c_str(), elapsedMs(start, Clock::now()));
    }
  }
  if (reply.op == static_cast<uint8_t>(Op::kHelloOk)) return {clientNonce, serverNonce};
  if (reply.op != static_cast<uint8_t>(Op::kHelloReject)) throwUnexpected("connecting", reply.op);
  FrameReader r(reply.body.data(), reply.body.size());
  auto reason = static_cast<wire::RejectReason>(r.u8());
  std::string message = r.str(wire::kMaxErrorMessageBytes);
  if (reason == wire::RejectReason::kWrongSecret) {
    throwError(collInvalidUsage,
               "TcpStoreClient: rejected by the rendezvous store at %s: wrong secret (is another job using this "
               "address? do all ranks have the same COLL_STORE_SECRET?)",
               address_.c_str());
  }
  throwError(collInvalidUsage, "TcpStoreClient: rejected by the rendezvous store at %s: %s", address_.c_str(),
             message.c_str());
}

bool TcpStoreClient::roundTrip(FrameWriter& request, Deadline replyDeadline, const std::string& what, Reply* reply) {
  replyDeadline = StoreRequestDeadline::bound(replyDeadline);
  Slot slot;
  uint32_t seq;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!brokenReason_.empty()) throwBroken(what);
    seq = nextSeq_++;
    slots_[seq] = &slot;
  }
  request.setSeq(seq);
  Bytes frame = request.finish();
  IoStatus sent;
  {
    std::lock_guard<std::mutex> lock(sendMutex_);
    if (seal_ != nullptr) wire::sealRecord(*seal_, &frame);
    sent = sendAll(fd_.get(), frame.data(), frame.size(), replyDeadline);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (sent != IoStatus::kOk) {
    slots_.erase(seq);
    // Half a frame on the wire leaves the stream unparseable for everyone.
    markBroken(sent == IoStatus::kClosed ? kClosedByStore : "stopped reading requests");
    throwBroken(what);
  }
  bool timedOut = false;
  while (!slot.done && brokenReason_.empty() && !timedOut) {
    if (!readerActive_) {
      readerActive_ = true;
      lock.unlock();
      bool progressed = false;
      try {
        progressed = readAndDispatch(replyDeadline);
      } catch (...) {
        lock.lock();
        readerActive_ = false;
        slots_.erase(seq);
        markBroken("failed while reading replies");
        throw;
      }
      lock.lock();
      readerActive_ = false;
      cv_.notify_all();  // another waiting thread may have to take over reading
      timedOut = !progressed && !slot.done;
    } else {
      timedOut = cv_.wait_until(lock, replyDeadline) == std::cv_status::timeout && !slot.done;
    }
  }
  slots_.erase(seq);
  if (slot.done) {
    *reply = std::move(slot.reply);
    return true;
  }
  if (!brokenReason_.empty()) throwBroken(what);
  return false;
}

TcpStoreClient::Reply TcpStoreClient::request(FrameWriter& request, const std::string& what) {
  const auto start = Clock::now();
  Reply reply;
  if (!roundTrip(request, deadlineAfter(std::chrono::milliseconds(requestTimeoutMs_.load())), what, &reply)) {
    throwError(collTimeout, "TcpStoreClient: %s: no reply from the rendezvous store at %s after %lld ms", what.c_str(),
               address_.c_str(), elapsedMs(start, Clock::now()));
  }
  return reply;
}

bool TcpStoreClient::readAndDispatch(Deadline deadline) {
  pollfd pfd{fd_.get(), POLLIN, 0};
  int rc = poll(&pfd, 1, pollTimeoutMs(deadline));
  if (rc < 0 && errno == EINTR) return true;
  if (rc < 0) throwSystemError("poll() on the rendezvous store connection");
  if (rc == 0) return false;
  size_t old = rx_.size();
  rx_.resize(old + 64 * 1024);
  ssize_t n = recv(fd_.get(), rx_.data() + old, 64 * 1024, MSG_DONTWAIT);
  rx_.resize(old + (n > 0 ? static_cast<size_t>(n) : 0));
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE))) {
    markBroken(kClosedByStore);
    return true;
  }
  if (n < 0) {
    markBroken(formatString("connection failed (%s)", strerror(errno)));
    return true;
  }
  size_t offset = 0;
  while (true) {
    size_t frameBytes = 0;
    const size_t tagBytes = open_ != nullptr ? kRecordTagBytes : 0;
    auto check = wire::checkFrame(rx_.data() + offset, rx_.size() - offset, kMaxReplyBody + tagBytes, &frameBytes);
    if (check == wire::FrameCheck::kIncomplete) break;
    if (check != wire::FrameCheck::kComplete) {
      markBroken("sent a malformed reply");
      return true;
    }
    if (open_ != nullptr && !wire::openRecord(*open_, rx_.data() + offset, frameBytes)) {
      markBroken(
          "sent a record that failed authentication (altered, replayed or reordered on the way; "
          "COLL_NET_ENCRYPT=1)");
      return true;
    }
    FrameReader r(rx_.data() + offset + wire::kHeaderBytes, frameBytes - wire::kHeaderBytes - tagBytes);
    uint8_t op = r.u8();
    uint32_t seq = r.u32();
    auto it = slots_.find(seq);
    if (it != slots_.end()) {
      const uint8_t* fields = rx_.data() + offset + wire::kHeaderBytes + wire::kOpAndSeqBytes;
      const uint8_t* end = rx_.data() + offset + frameBytes - tagBytes;
      it->second->reply.op = op;
      it->second->reply.body.assign(fields, end);
      it->second->done = true;
    } else {
      // The reply to a request whose caller already timed out.
      COLL_TRACE(kBootstrap, "store %s: dropping a late '%s' reply", address_.c_str(), wire::opName(op));
    }
    offset += frameBytes;
  }
  rx_.erase(rx_.begin(), rx_.begin() + static_cast<std::ptrdiff_t>(offset));
  return true;
}

void TcpStoreClient::startOver() {
  // Only the constructor calls this, before any other thread can see the client.
  fd_ = Fd();
  slots_.clear();
  readerActive_ = false;
  brokenReason_.clear();
  rx_.clear();
}

void TcpStoreClient::markBroken(const std::string& reason) {
  if (brokenReason_.empty()) brokenReason_ = reason;
  cv_.notify_all();
}

void TcpStoreClient::throwBroken(const std::string& what) {
  throwError(collRemoteError, "TcpStoreClient: %s: the rendezvous store at %s %s", what.c_str(), address_.c_str(),
             brokenReason_.c_str());
}

void TcpStoreClient::throwUnexpected(const std::string& what, uint8_t op) {
  throwError(collRemoteError, "TcpStoreClient: %s: the rendezvous store at %s sent an unexpected '%s' reply",
             what.c_str(), address_.c_str(), wire::opName(op));
}

void TcpStoreClient::set(const std::string& key, const Bytes& value) {
  checkKey("set", key);
  if (value.size() > kMaxValueBytes) {
    throwError(collInvalidArgument, "TcpStoreClient::set: value of %zu bytes for key '%s' (at most %zu)", value.size(),
               key.substr(0, 200).c_str(), kMaxValueBytes);
  }
  FrameWriter w(Op::kSet, 0);
  w.str(key).bytes(value);
  std::string what = "set of key '" + key.substr(0, 200) + "'";
  Reply reply = request(w, what);
  if (reply.op == static_cast<uint8_t>(Op::kError)) {
    FrameReader r(reply.body.data(), reply.body.size());
    std::string message = r.str(wire::kMaxErrorMessageBytes);
    throwError(collInvalidUsage, "TcpStoreClient::set: %s", message.c_str());
  }
  if (reply.op != static_cast<uint8_t>(Op::kOk)) throwUnexpected(what, reply.op);
}

void TcpStoreClient::setOnDisconnect(const std::string& key, const Bytes& value) {
  checkKey("setOnDisconnect", key);
  if (value.size() > wire::kMaxOnCloseValueBytes) {
    throwError(collInvalidArgument, "TcpStoreClient::setOnDisconnect: value of %zu bytes for key '%s' (at most %zu)",
               value.size(), key.substr(0, 200).c_str(), wire::kMaxOnCloseValueBytes);
  }
  FrameWriter w(Op::kSetOnClose, 0);
  w.str(key).bytes(value);
  std::string what = "set-on-close of key '" + key.substr(0, 200) + "'";
  Reply reply = request(w, what);
  if (reply.op != static_cast<uint8_t>(Op::kOk)) throwUnexpected(what, reply.op);
}

Bytes TcpStoreClient::get(const std::string& key, Deadline deadline) {
  checkKey("get", key);
  const auto start = Clock::now();
  FrameWriter w(Op::kGet, 0);
  w.u32(remainingMs(deadline)).str(key);
  std::string what = "get of key '" + key.substr(0, 200) + "'";
  Reply reply;
  if (!roundTrip(w, addSaturating(deadline, kReplyGrace), what, &reply) ||
      reply.op == static_cast<uint8_t>(Op::kNotFound)) {
    throwError(collTimeout,
               "TcpStoreClient::get: timed out waiting for key '%s' from the rendezvous store at %s after %lld ms",
               key.substr(0, 200).c_str(), address_.c_str(), elapsedMs(start, Clock::now()));
  }
  if (reply.op != static_cast<uint8_t>(Op::kValue)) throwUnexpected(what, reply.op);
  FrameReader r(reply.body.data(), reply.body.size());
  Bytes value = r.bytes(kMaxValueBytes);
  if (!r.atEnd()) throwUnexpected(what, reply.op);
  return value;
}

int64_t TcpStoreClient::add(const std::string& key, int64_t delta) {
  checkKey("add", key);
  FrameWriter w(Op::kAdd, 0);
  w.str(key).i64(delta);
  std::string what = "add to key '" + key.substr(0, 200) + "'";
  Reply reply = request(w, what);
  FrameReader r(reply.body.data(), reply.body.size());
  if (reply.op == static_cast<uint8_t>(Op::kError)) {
    std::string message = r.str(wire::kMaxErrorMessageBytes);
    throwError(collInvalidUsage, "TcpStoreClient::add: %s", message.c_str());
  }
  if (reply.op != static_cast<uint8_t>(Op::kCounter)) throwUnexpected(what, reply.op);
  int64_t value = r.i64();
  if (!r.atEnd()) throwUnexpected(what, reply.op);
  return value;
}

void TcpStoreClient::wait(const std::vector<std::string>& keys, Deadline deadline) {
  for (const auto& k : keys) checkKey("wait", k);
  const auto start = Clock::now();
  FrameWriter w(Op::kWait, 0);
  w.u32(remainingMs(deadline));
  writeKeys(w, keys);
  std::string what = "wait for keys " + quoteKeys(keys);
  Reply reply;
  if (!roundTrip(w, addSaturating(deadline, kReplyGrace), what, &reply) ||
      reply.op == static_cast<uint8_t>(Op::kNotFound)) {
    throwError(collTimeout,
               "TcpStoreClient::wait: timed out waiting for keys %s from the rendezvous store at %s after %lld ms",
               quoteKeys(keys).c_str(), address_.c_str(), elapsedMs(start, Clock::now()));
  }
  if (reply.op != static_cast<uint8_t>(Op::kOk)) throwUnexpected(what, reply.op);
}

bool TcpStoreClient::check(const std::vector<std::string>& keys) {
  for (const auto& k : keys) checkKey("check", k);
  FrameWriter w(Op::kCheck, 0);
  writeKeys(w, keys);
  std::string what = "check of keys " + quoteKeys(keys);
  Reply reply = request(w, what);
  FrameReader r(reply.body.data(), reply.body.size());
  uint8_t present = r.u8();
  if (reply.op != static_cast<uint8_t>(Op::kCheckResult) || !r.atEnd()) throwUnexpected(what, reply.op);
  return present != 0;
}

}  // namespace bootstrap
}  // namespace coll
