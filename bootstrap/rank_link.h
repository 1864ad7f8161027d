// One TCP connection between two ranks of a communicator, for the bootstrap all-gather
// (rank_exchange.h). It opens with the rendezvous store's own challenge-response
// (store_protocol.h), the dialler in the client's role and the listener in the store's, so a
// connection proves the job's secret exactly as a store connection does; then the dialler
// introduces itself (kRankIntro: its rank, and the listener's token, which it read from the store:
// proof that it dialled this communicator's listener and not a port since reused), and the
// listener answers hello-ok. After that the link carries kRankRecords frames from dialler to
// listener. The introduction and the hello-ok each carry a byte saying whether that side sets
// COLL_NET_ENCRYPT; where either does, the records are sealed (record_layer.h) under keys from the
// secret and both hello nonces. Each side encrypts whenever its own setting says so, so a byte
// flipped on the way can only make the link fail, never turn encryption off; and ranks that
// differ still complete init's first all-gather, after which every rank refuses the difference.
//
// Links are non-blocking: the owner polls fd() for events() and calls onReadable()/onWritable(),
// so one thread drives every link of a rank at once, and ranks that all dial each other while
// they listen (a cycle) never wait on one another.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "bootstrap/store.h"
#include "bootstrap/store_protocol.h"
#include "common/fd.h"
#include "common/record_layer.h"

namespace coll {
namespace bootstrap {

// Random per listener, published with its address in the store.
using ListenerToken = std::array<uint8_t, 16>;

// What a rank's links check the other side against.
struct LinkContext {
  Secret secret{};
  int rank = -1;
  int nranks = 0;
  ListenerToken token{};  // this rank's listener's
  std::string during;     // for messages: "bootstrap allGather"
  bool encrypt = false;   // COLL_NET_ENCRYPT
};

// One whole frame: the opcode and the fields after the sequence number.
struct LinkFrame {
  uint8_t op = 0;
  Bytes fields;
};

class RankLink {
 public:
  enum class Stage { kAwaitChallenge, kAwaitOk, kAwaitHello, kAwaitProof, kAwaitIntro, kReady };

  // A connection this rank dialled to `peer`'s listener (whose token it read from the store):
  // queues the hello.
  RankLink(Fd fd, int peer, const ListenerToken& peerToken);
  // A connection this rank's listener accepted from `from` (an address, for messages); the peer's
  // rank is known once it introduced itself.
  RankLink(Fd fd, std::string from);

  int fd() const { return fd_.get(); }
  int peer() const { return peer_; }
  bool dialled() const { return dialled_; }
  bool ready() const { return stage_ == Stage::kReady; }
  const std::string& from() const { return from_; }
  // POLLIN while the handshake runs or when `wantData`; POLLOUT while bytes wait to be sent.
  short events(bool wantData) const;

  // Sends what it can. False: the peer closed or reset the connection.
  bool onWritable();
  // Reads what arrived (bounded: a frame above the stage's limit is refused from its length
  // prefix, before its bytes are buffered). False: the peer closed the connection. Throws
  // LinkRefused for a malformed or oversized frame.
  bool onReadable();
  // Runs the handshake as far as the bytes received allow. Throws LinkRefused, with why, when the
  // other side fails it: a dialler's caller treats that as fatal (it dialled a rank of this job), a
  // listener's drops the connection. `expectInbound(rank)` says whether that rank may dial this one.
  void advanceHandshake(const LinkContext& ctx, const std::function<bool(int)>& expectInbound);
  // The next whole kRankRecords frame's fields, once the link is ready.
  std::optional<LinkFrame> takeFrame();
  // Queues a whole frame; a records frame on an encrypting link goes as a sealed record.
  void queue(Bytes frame);
  bool encrypted() const { return seal_ != nullptr || open_ != nullptr; }
  bool sending() const { return sent_ < out_.size(); }

 private:
  size_t frameLimit() const;
  std::optional<LinkFrame> nextFrame();
  void handleFrame(const LinkContext& ctx, const LinkFrame& frame, const std::function<bool(int)>& expectInbound);
  // Once the handshake is done: the dialler seals, the listener opens, where either side asked.
  void startRecords(const LinkContext& ctx, bool peerEncrypts);

  Fd fd_;
  int peer_ = -1;
  bool dialled_;
  std::string from_;
  Stage stage_;
  ListenerToken peerToken_{};
  wire::Nonce clientNonce_{};
  wire::Nonce serverNonce_{};
  Bytes in_;
  Bytes out_;
  size_t sent_ = 0;
  std::unique_ptr<RecordCipher> seal_;  // a dialler's, on an encrypting link
  std::unique_ptr<RecordCipher> open_;  // a listener's, on an encrypting link
};

// A handshake or frame that breaks the link protocol.
struct LinkRefused {
  std::string why;
};

}  // namespace bootstrap
}  // namespace coll
