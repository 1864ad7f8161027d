#include "bootstrap/rank_link.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/random.h"

namespace coll {
namespace bootstrap {

using wire::FrameReader;
using wire::FrameWriter;
using wire::Op;

namespace {

constexpr size_t kIntroBodyBytes = wire::kOpAndSeqBytes + 4 + 4 + sizeof(ListenerToken) + 1;
// What the listener may answer a dialler: a challenge, hello-ok, or a reject with its message.
constexpr size_t kListenerReplyBodyBytes = wire::kOpAndSeqBytes + 1 + 4 + wire::kMaxErrorMessageBytes;
// How much one onReadable() takes from the socket: the rest waits in the kernel (flow control).
constexpr size_t kReadChunkBytes = 256 << 10;

bool isConnectionLoss(int error) { return error == EPIPE || error == ECONNRESET || error == ENOTCONN; }

Bytes rejectFrame(const std::string& why) {
  return FrameWriter(Op::kHelloReject, 0)
      .u8(static_cast<uint8_t>(wire::RejectReason::kWrongSecret))
      .str(why.substr(0, wire::kMaxErrorMessageBytes))
      .finish();
}

}  // namespace

RankLink::RankLink(Fd fd, int peer, const ListenerToken& peerToken)
    : fd_(std::move(fd)), peer_(peer), dialled_(true), stage_(Stage::kAwaitChallenge), peerToken_(peerToken) {
  fillRandom(clientNonce_.data(), clientNonce_.size(), "a bootstrap link's nonce");
  queue(wire::encodeHello(clientNonce_));
}

RankLink::RankLink(Fd fd, std::string from)
    : fd_(std::move(fd)), dialled_(false), from_(std::move(from)), stage_(Stage::kAwaitHello) {}

short RankLink::events(bool wantData) const {
  short events = 0;
  if (stage_ != Stage::kReady || wantData) events |= POLLIN;
  if (sending()) events |= POLLOUT;
  return events;
}

void RankLink::queue(Bytes frame) {
  if (seal_ != nullptr) wire::sealRecord(*seal_, &frame);
  if (sent_ == out_.size()) {
    out_ = std::move(frame);
    sent_ = 0;
  } else {
    out_.insert(out_.end(), frame.begin(), frame.end());
  }
}

bool RankLink::onWritable() {
  while (sent_ < out_.size()) {
    ssize_t n = send(fd_.get(), out_.data() + sent_, out_.size() - sent_, MSG_NOSIGNAL);
    if (n > 0) {
      sent_ += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && isConnectionLoss(errno)) return false;
    throwSystemError("send() on a bootstrap link");
  }
  out_.clear();
  sent_ = 0;
  return true;
}

size_t RankLink::frameLimit() const {
  switch (stage_) {
    case Stage::kAwaitChallenge:
    case Stage::kAwaitOk:
      return kListenerReplyBodyBytes;
    case Stage::kAwaitHello:
    case Stage::kAwaitProof:
      return wire::kMaxUnauthenticatedBodyBytes;
    case Stage::kAwaitIntro:
      return kIntroBodyBytes;
    case Stage::kReady:
      break;
  }
  return wire::kMaxBodyBytes + (open_ != nullptr ? kRecordTagBytes : 0);
}

bool RankLink::onReadable() {
  // Take no more than the frame being read needs, plus a chunk: a peer cannot make this rank
  // buffer what it has not asked for.
  size_t frameBytes = 0;
  const wire::FrameCheck check = wire::checkFrame(in_.data(), in_.size(), frameLimit(), &frameBytes);
  if (check == wire::FrameCheck::kTooLarge || check == wire::FrameCheck::kTooSmall)
    throw LinkRefused{
        formatString("a frame whose length prefix is out of bounds for its stage (at most %zu bytes)", frameLimit())};
  if (check == wire::FrameCheck::kComplete) return true;
  // Through one scratch chunk per thread, so that a link holds only the bytes that arrived (a
  // communicator keeps its links open for later all-gathers: 2 log2(n) of them).
  thread_local std::vector<uint8_t> chunk(kReadChunkBytes);
  ssize_t n;
  do {
    n = recv(fd_.get(), chunk.data(), chunk.size(), 0);
  } while (n < 0 && errno == EINTR);
  if (n > 0) in_.insert(in_.end(), chunk.begin(), chunk.begin() + n);
  if (n == 0) return false;
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    if (isConnectionLoss(errno)) return false;
    throwSystemError("recv() on a bootstrap link");
  }
  if (wire::checkFrame(in_.data(), in_.size(), frameLimit(), &frameBytes) == wire::FrameCheck::kTooLarge)
    throw LinkRefused{formatString("a frame longer than its stage allows (at most %zu bytes)", frameLimit())};
  return true;
}

std::optional<LinkFrame> RankLink::nextFrame() {
  size_t frameBytes = 0;
  switch (wire::checkFrame(in_.data(), in_.size(), frameLimit(), &frameBytes)) {
    case wire::FrameCheck::kIncomplete:
      return std::nullopt;
    case wire::FrameCheck::kTooSmall:
    case wire::FrameCheck::kTooLarge:
      throw LinkRefused{formatString("a frame whose length prefix is out of bounds (at most %zu bytes)", frameLimit())};
    case wire::FrameCheck::kComplete:
      break;
  }
  size_t bodyEnd = frameBytes;
  if (open_ != nullptr) {
    if (!wire::openRecord(*open_, in_.data(), frameBytes))
      throw LinkRefused{"a record that failed authentication (altered, replayed or reordered on the way)"};
    bodyEnd -= kRecordTagBytes;
  }
  LinkFrame frame;
  frame.op = in_[wire::kHeaderBytes];
  const size_t fieldsAt = wire::kHeaderBytes + wire::kOpAndSeqBytes;
  frame.fields.assign(in_.begin() + static_cast<ptrdiff_t>(fieldsAt), in_.begin() + static_cast<ptrdiff_t>(bodyEnd));
  in_.erase(in_.begin(), in_.begin() + static_cast<ptrdiff_t>(frameBytes));
  if (in_.empty()) in_.shrink_to_fit();
  return frame;
}

std::optional<LinkFrame> RankLink::takeFrame() {
  if (stage_ != Stage::kReady) return std::nullopt;
  std::optional<LinkFrame> frame = nextFrame();
  if (frame && frame->op != static_cast<uint8_t>(Op::kRankRecords))
    throw LinkRefused{formatString("a '%s' frame where records were expected", wire::opName(frame->op))};
  return frame;
}

void RankLink::advanceHandshake(const LinkContext& ctx, const std::function<bool(int)>& expectInbound) {
  while (stage_ != Stage::kReady) {
    std::optional<LinkFrame> frame = nextFrame();
    if (!frame) return;
    handleFrame(ctx, *frame, expectInbound);
  }
}

void RankLink::handleFrame(const LinkContext& ctx, const LinkFrame& frame,
                           const std::function<bool(int)>& expectInbound) {
  FrameReader r(frame.fields.data(), frame.fields.size());
  auto refuse = [&](const std::string& why) {
    // Best effort: the dialler learns why before the connection closes.
    if (!dialled_) {
      queue(rejectFrame(why));
      onWritable();
    }
    throw LinkRefused{why};
  };
  const auto expectOp = [&](Op op) {
    if (frame.op != static_cast<uint8_t>(op))
      refuse(formatString("a '%s' frame where '%s' was expected", wire::opName(frame.op),
                          wire::opName(static_cast<uint8_t>(op))));
  };
  switch (stage_) {
    case Stage::kAwaitHello: {
      expectOp(Op::kHello);
      const uint32_t magic = r.u32();
      const uint16_t version = r.u16();
      r.raw(clientNonce_.data(), clientNonce_.size());
      if (!r.atEnd() || magic != wire::kMagic || version != wire::kVersion)
        refuse("a malformed hello or another version");
      fillRandom(serverNonce_.data(), serverNonce_.size(), "a bootstrap link's challenge");
      const Digest256 proof = wire::helloProof(ctx.secret, wire::ProofRole::kServer, clientNonce_, serverNonce_);
      queue(FrameWriter(Op::kHelloChallenge, 0)
                .raw(serverNonce_.data(), serverNonce_.size())
                .raw(proof.data(), proof.size())
                .finish());
      stage_ = Stage::kAwaitProof;
      return;
    }
    case Stage::kAwaitProof: {
      expectOp(Op::kHelloProof);
      Digest256 proof{};
      r.raw(proof.data(), proof.size());
      if (!r.atEnd() ||
          !wire::helloProofMatches(ctx.secret, wire::ProofRole::kClient, clientNonce_, serverNonce_, proof))
        refuse("wrong secret");
      stage_ = Stage::kAwaitIntro;
      return;
    }
    case Stage::kAwaitIntro: {
      expectOp(Op::kRankIntro);
      const int rank = static_cast<int>(r.u32());
      const int nranks = static_cast<int>(r.u32());
      ListenerToken token{};
      r.raw(token.data(), token.size());
      const bool diallerEncrypts = r.u8() != 0;
      if (!r.atEnd()) refuse("a malformed introduction");
      if (nranks != ctx.nranks || token != ctx.token)
        refuse(
            formatString("an introduction for another communicator (%d ranks, or another listener's token)", nranks));
      if (!expectInbound(rank)) refuse(formatString("rank %d is not expected to dial rank %d", rank, ctx.rank));
      peer_ = rank;
      queue(FrameWriter(Op::kHelloOk, 0).u8(ctx.encrypt ? 1 : 0).finish());
      startRecords(ctx, diallerEncrypts);
      stage_ = Stage::kReady;
      return;
    }
    case Stage::kAwaitChallenge: {
      if (frame.op == static_cast<uint8_t>(Op::kHelloReject)) break;
      expectOp(Op::kHelloChallenge);
      Digest256 proof{};
      r.raw(serverNonce_.data(), serverNonce_.size());
      r.raw(proof.data(), proof.size());
      if (!r.atEnd()) refuse("a malformed challenge");
      // The listener proves the secret first, as the store does: a stranger on a reused port
      // learns nothing.
      if (!wire::helloProofMatches(ctx.secret, wire::ProofRole::kServer, clientNonce_, serverNonce_, proof))
        refuse("its listener does not hold this job's secret");
      const Digest256 mine = wire::helloProof(ctx.secret, wire::ProofRole::kClient, clientNonce_, serverNonce_);
      queue(FrameWriter(Op::kHelloProof, 0).raw(mine.data(), mine.size()).finish());
      queue(FrameWriter(Op::kRankIntro, 0)
                .u32(static_cast<uint32_t>(ctx.rank))
                .u32(static_cast<uint32_t>(ctx.nranks))
                .raw(peerToken_.data(), peerToken_.size())
                .u8(ctx.encrypt ? 1 : 0)
                .finish());
      stage_ = Stage::kAwaitOk;
      return;
    }
    case Stage::kAwaitOk:
      if (frame.op == static_cast<uint8_t>(Op::kHelloReject)) break;
      {
        expectOp(Op::kHelloOk);
        const bool listenerEncrypts = r.u8() != 0;
        if (!r.atEnd()) refuse("a malformed hello-ok");
        startRecords(ctx, listenerEncrypts);
        stage_ = Stage::kReady;
        return;
      }
    case Stage::kReady:
      return;
  }
  // A reject from the listener: its reason, bounded.
  r.u8();
  const std::string why = r.str(wire::kMaxErrorMessageBytes);
  refuse("refused by its listener: " + (r.ok() ? why : std::string("(malformed reason)")));
}

void RankLink::startRecords(const LinkContext& ctx, bool peerEncrypts) {
  if (!ctx.encrypt && !peerEncrypts) return;
  const RecordKeys keys = deriveRecordKeys(ctx.secret, "libcollective bootstrap link v1: records", clientNonce_.data(),
                                           serverNonce_.data());
  if (dialled_)
    seal_ = std::move(makeRecordCiphers(keys, RecordSide::kOpener).seal);
  else
    open_ = std::move(makeRecordCiphers(keys, RecordSide::kAccepter).open);
}

}  // namespace bootstrap
}  // namespace coll
