// What the rendezvous server does with a request, without any socket: authenticate the hello,
// run set/get/add/check/wait against the StoreTable, park blocking requests and answer them
// later. The network loop (tcp_store_server.cc) only moves bytes: it hands complete frames in
// and sends the replies this produces, which may be addressed to other connections (a set
// wakes other clients' gets).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "bootstrap/store.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/store_table.h"

namespace coll {
namespace bootstrap {

// A peer broke the protocol; the caller closes that connection and carries on.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class StoreService {
 public:
  using ConnId = uint64_t;
  // Bounds the requests one connection may park, so it cannot grow the waiter index forever.
  static constexpr size_t kMaxWaitersPerClient = 1024;

  struct Outgoing {
    ConnId conn;
    Bytes frame;
  };

  // maxClientBytes 0: COLL_STORE_MAX_CLIENT_BYTES, or its default share of maxStoredBytes.
  StoreService(const Secret& secret, std::string name, size_t maxStoredBytes = StoreTable::maxBytesFromEnv(),
               size_t maxClientBytes = 0)
      : secret_(secret),
        name_(std::move(name)),
        table_(maxStoredBytes,
               maxClientBytes != 0 ? maxClientBytes : StoreTable::maxBytesPerOwnerFromEnv(maxStoredBytes)) {}

  // Handles one frame body (after the length prefix) from `conn`, or, once the connection asked
  // for encryption (kEncrypt), one record's body and tag. Appends replies to *out, sealed where
  // they go to an encrypting connection.
  // Returns false when the connection must be closed once its replies are sent (rejected
  // hello; lastRejection() then says why, for the server's rate-limited log). Throws
  // ProtocolError for anything malformed.
  bool handleFrame(ConnId conn, const std::string& peer, const uint8_t* body, size_t size, std::vector<Outgoing>* out);
  bool authenticated(ConnId conn) const;
  const std::string& lastRejection() const { return lastRejection_; }
  // Answers "not found" to parked requests whose deadline has passed.
  void expire(Deadline now, std::vector<Outgoing>* out);
  // Whether `conn` asked for encryption: its frames are records from then on (one tag more).
  bool encrypted(ConnId conn) const;
  Deadline nextDeadline() const { return table_.nextDeadline(); }
  // Forgets a closed connection and its parked requests, and sets the keys it asked to be set
  // when it closed (which may answer other connections' parked requests: appended to *out).
  void disconnect(ConnId conn, std::vector<Outgoing>* out);

 private:
  enum class Stage { kAwaitingHello, kAwaitingProof, kAuthenticated };
  struct Client {
    Stage stage = Stage::kAwaitingHello;
    wire::Nonce clientNonce{};
    wire::Nonce serverNonce{};
    std::vector<StoreTable::WaiterId> waiters;
    std::vector<std::pair<std::string, Bytes>> onClose;  // kSetOnClose, oldest first; reserved in table_
    RecordCiphers ciphers;  // after kEncrypt
  };
  struct Parked {
    ConnId conn;
    uint32_t seq;
    bool isGet;
    std::string key;  // for get: whose value to send
  };

  bool handlePlainFrame(ConnId conn, const std::string& peer, const uint8_t* body, size_t size,
                        std::vector<Outgoing>* out);
  // Seals the frames from out[first] on that go to encrypting connections, in order.
  void sealFrom(size_t first, std::vector<Outgoing>* out);
  // The two steps of the challenge-response (store_protocol.h).
  bool handleHello(ConnId conn, const std::string& peer, wire::FrameReader& r, uint32_t seq,
                   std::vector<Outgoing>* out);
  bool handleProof(ConnId conn, const std::string& peer, wire::FrameReader& r, uint32_t seq,
                   std::vector<Outgoing>* out);
  bool reject(ConnId conn, const std::string& peer, uint32_t seq, wire::RejectReason reason,
              const std::string& message, std::vector<Outgoing>* out);
  void handleRequest(ConnId conn, uint8_t op, uint32_t seq, wire::FrameReader& r, std::vector<Outgoing>* out);
  void park(ConnId conn, uint32_t seq, const std::vector<std::string>& keys, uint32_t timeoutMs, bool isGet,
            std::vector<Outgoing>* out);
  void answer(StoreTable::WaiterId id, bool found, std::vector<Outgoing>* out);
  // The error a refused write gets: the table is full (and, at most every 10 s, a WARN says so),
  // the client's share is used up, or the value is not a counter.
  std::string refusalMessage(StoreTable::WriteResult result, ConnId conn, const std::string& key);

  Secret secret_;
  std::string name_;
  StoreTable table_;
  std::string lastRejection_;
  Deadline nextFullWarning_{};  // one WARN per interval while the table is full
  std::unordered_map<ConnId, Client> clients_;
  std::unordered_map<StoreTable::WaiterId, Parked> parked_;
};

}  // namespace bootstrap
}  // namespace coll
