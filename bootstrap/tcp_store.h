// The TCP rendezvous store: one TcpStoreServer (in the process that created the unique id, or
// rank 0 of a launcher-started job) and a TcpStoreClient per rank. The wire format is in
// store_protocol.h; the security model (a per-job secret checked on every connection) is in
// bootstrap/README.md.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "bootstrap/store.h"
#include "bootstrap/store_protocol.h"
#include "common/record_layer.h"
#include "common/socket.h"

namespace coll {
namespace bootstrap {

// Serves the store from one background thread that polls every client; nothing blocks that
// thread, so one slow or hostile client cannot stall the others.
class TcpStoreServer {
 public:
  // Bounds how many connections peers can make the server hold.
  static constexpr size_t kMaxClients = 4096;

  // Listens on bindHost:port (port 0: an ephemeral port; bindHost "" or "0.0.0.0"/"::": every
  // interface). Throws collSystemError when the address cannot be bound.
  TcpStoreServer(const std::string& bindHost, uint16_t port, const Secret& secret);
  // Serves on a socket that already listens (bound earlier, so that peers could learn its address
  // before the server was needed: a communicator's meeting point for collCommShrink).
  TcpStoreServer(Fd listener, const Secret& secret);
  // Stops the thread and closes every connection; clients then see EOF.
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  uint16_t port() const { return port_; }
  // From any thread: the server stops as soon as no authenticated client is connected (at once if
  // none is). A unique id's server is told so when the communicator made from it in this process
  // is gone; the other ranks' communicators keep their connections until they are gone too.
  void endWhenIdle();
  // Whether the thread has ended (endWhenIdle) and closed every socket: the object only waits to
  // be destroyed, which then joins at once.
  bool finished() const { return finished_.load(); }

 private:
  class Loop;  // the thread's state, in tcp_store_server.cc
  uint16_t port_ = 0;
  Fd wakeFd_;  // an eventfd written by the destructor to end the thread's poll()
  std::unique_ptr<Loop> loop_;
  std::atomic<bool> stopRequested_{false};  // by the destructor
  std::atomic<bool> endWhenIdle_{false};
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

// A connection to a TcpStoreServer. Thread-safe: several threads may call it at once, and a
// blocked get() on one thread does not delay a set() on another (requests are numbered and
// replies matched, so they need not arrive in order).
class TcpStoreClient : public Store {
 public:
  // Bounds set, add and check, which the server answers at once unless it is stuck.
  static constexpr std::chrono::milliseconds kDefaultRequestTimeout{300000};

  // Connects (retrying until connectDeadline while nobody listens) and presents the secret; with
  // `encrypt` (COLL_NET_ENCRYPT by default), every frame after that is a sealed record
  // (store_protocol.h). Throws collTimeout when no store answers in time, collInvalidUsage when
  // the store rejects the secret or `encrypt` has no secret to work with, collRemoteError when
  // it closes the connection.
  TcpStoreClient(const std::string& host, uint16_t port, const Secret& secret, Deadline connectDeadline,
                 bool encrypt = encryptionRequested());
  ~TcpStoreClient() override;
  TcpStoreClient(const TcpStoreClient&) = delete;
  TcpStoreClient& operator=(const TcpStoreClient&) = delete;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key, Deadline deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;
  void wait(const std::vector<std::string>& keys, Deadline deadline) override;
  bool check(const std::vector<std::string>& keys) override;
  std::string localAddress() const override { return localAddressOf(fd_.get()).host(); }
  Secret secret() const override { return secret_; }
  void setOnDisconnect(const std::string& key, const Bytes& value) override;

  void setRequestTimeout(std::chrono::milliseconds timeout) { requestTimeoutMs_ = timeout.count(); }
  const std::string& address() const { return address_; }  // "host:port"

 private:
  struct Reply {
    uint8_t op = 0;
    Bytes body;  // the fields after op and seq
  };
  struct Slot {
    bool done = false;
    Reply reply;
  };
  // Numbers the request, sends it and waits for its reply until replyDeadline; false on
  // timeout. Throws collRemoteError when the connection is lost; `what` names the call.
  bool roundTrip(wire::FrameWriter& request, Deadline replyDeadline, const std::string& what, Reply* reply);
  // roundTrip for requests the server answers at once (a timeout means the server is stuck).
  Reply request(wire::FrameWriter& request, const std::string& what);
  // Returns both hello nonces, which the record keys come from.
  std::pair<wire::Nonce, wire::Nonce> handshake(const Secret& secret, Clock::time_point start, Deadline deadline);
  // kEncrypt, after the handshake: the store's reply is the first record opened.
  void startEncryption(const std::pair<wire::Nonce, wire::Nonce>& nonces, Deadline deadline);
  // Reads what the socket has (waiting until the deadline) and hands complete replies to their
  // slots. Called by one thread at a time (the "reader"). False on timeout.
  bool readAndDispatch(Deadline deadline);
  void markBroken(const std::string& reason);  // mutex_ held
  // Forgets a connection the store closed during the handshake, to connect again.
  void startOver();
  // brokenReason_ when the store closed the connection (EOF, reset).
  static constexpr const char* kClosedByStore = "closed the connection";
  [[noreturn]] void throwBroken(const std::string& what);
  [[noreturn]] void throwUnexpected(const std::string& what, uint8_t op);

  Fd fd_;
  std::string address_;
  Secret secret_;
  std::atomic<long long> requestTimeoutMs_{kDefaultRequestTimeout.count()};
  std::mutex sendMutex_;  // one frame at a time on the socket
  // Under encryption (set during the handshake, before any other thread calls): seal_ under
  // sendMutex_, so that records are numbered in the order they go out; open_ by the reader.
  std::unique_ptr<RecordCipher> seal_;
  std::unique_ptr<RecordCipher> open_;
  std::mutex mutex_;  // guards everything below
  std::condition_variable cv_;
  uint32_t nextSeq_ = 1;
  std::unordered_map<uint32_t, Slot*> slots_;
  bool readerActive_ = false;
  std::string brokenReason_;  // set once the stream is unusable (EOF, malformed reply, partial send)
  Bytes rx_;                  // bytes received and not yet parsed; touched only by the reader
};

}  // namespace bootstrap
}  // namespace coll
