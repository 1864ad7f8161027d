#include "transport/net/net_connection.h"

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace coll {
namespace transport {
namespace {

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

// The non-blocking socket calls of the data path, made straight as system calls. glibc's recv()
// and sendmsg() are thread-cancellation points and switch asynchronous cancellation on and off
// around every call: a visible share of an 8-byte broadcast's receiving rank. Nothing here
// blocks, so there is nothing to cancel.
ssize_t receiveNow(int fd, void* to, size_t bytes) {
  return static_cast<ssize_t>(syscall(SYS_recvfrom, fd, to, bytes, MSG_DONTWAIT, nullptr, nullptr));
}

ssize_t sendNow(int fd, const msghdr* message) {
  return static_cast<ssize_t>(syscall(SYS_sendmsg, fd, message, MSG_DONTWAIT | MSG_NOSIGNAL));
}

// What is left of a frame up to this size goes out copied into one buffer, through sendto(): the
// kernel walks a single user buffer faster than a list of pieces, and for a small frame that
// saving is larger than the copy (measured faster over loopback; docs/performance.md,
// "Defaults, and the measurement behind each").
constexpr size_t kFlatFrameBytes = 2048;

ssize_t sendFlat(int fd, const iovec* iov, int count) {
  uint8_t flat[kFlatFrameBytes];
  size_t bytes = 0;
  for (int i = 0; i < count; ++i) {
    std::memcpy(flat + bytes, iov[i].iov_base, iov[i].iov_len);
    bytes += iov[i].iov_len;
  }
  return static_cast<ssize_t>(syscall(SYS_sendto, fd, flat, bytes, MSG_DONTWAIT | MSG_NOSIGNAL, nullptr, 0));
}

// A frame's parts on the wire: header, lead, payload, authentication tag, trail (net_wire.h).
constexpr int kFrameParts = 5;
const uint8_t kZeros[kNetFrameAlign] = {};

// Fills iov with what is left of the frame after its first `offset` bytes; returns the count.
int frameIovecs(const NetFrameHeader& header, const uint8_t* data, const uint8_t* authTag, size_t offset, iovec* iov) {
  const iovec parts[kFrameParts] = {{const_cast<NetFrameHeader*>(&header), sizeof(header)},
                                    {const_cast<uint8_t*>(kZeros), header.lead},
                                    {const_cast<uint8_t*>(data), header.bytes},
                                    {const_cast<uint8_t*>(authTag), netFrameSealBytes(header)},
                                    {const_cast<uint8_t*>(kZeros), header.trail}};
  int count = 0;
  for (const iovec& part : parts) {
    if (offset >= part.iov_len) {
      offset -= part.iov_len;
      continue;
    }
    iov[count++] = {static_cast<uint8_t*>(part.iov_base) + offset, part.iov_len - offset};
    offset = 0;
  }
  return count;
}

std::string socketError(const char* what, int err) {
  if (err == ECONNRESET || err == EPIPE)
    return formatString("connection reset while %s (the peer's process ended or its host went away)", what);
  if (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH)
    return formatString("the link failed while %s (%s)", what, strerror(err));
  return formatString("%s failed: %s", what, strerror(err));
}

}  // namespace

NetSlots::NetSlots(int slotCount, size_t bytesPerSlot)
    : depth(slotCount),
      slotBytes(bytesPerSlot),
      memory(new uint8_t[static_cast<size_t>(slotCount) * bytesPerSlot]),
      sizes(slotCount, 0),
      tags(slotCount, 0) {}

NetSendConnection::NetSendConnection(int peer, std::vector<int> fds, int depth, size_t slotBytes,
                                     NetConnectionOwner& owner)
    : peer_(peer), owner_(owner), slots_(depth, slotBytes), external_(depth, nullptr), sent_(depth, 0) {
  sockets_.resize(fds.size());
  for (size_t s = 0; s < fds.size(); ++s) {
    sockets_[s].fd = fds[s];
    sockets_[s].seq = s;
    sockets_[s].offset = 0;
  }
  attached_.store(!fds.empty() && fds[0] >= 0, std::memory_order_release);
}

void NetSendConnection::attach(const std::vector<int>& fds, std::vector<std::unique_ptr<RecordCipher>> ciphers) {
  for (size_t s = 0; s < sockets_.size(); ++s) {
    sockets_[s].fd = fds.at(s);
    if (ciphers.empty()) continue;
    SocketState& socket = sockets_[s];
    socket.cipher = std::move(ciphers.at(s));
    socket.sealedMemory.reset(new uint8_t[slots_.slotBytes + kNetFrameAlign]);
    const uintptr_t at = reinterpret_cast<uintptr_t>(socket.sealedMemory.get());
    socket.sealed = socket.sealedMemory.get() + (kNetFrameAlign - at % kNetFrameAlign) % kNetFrameAlign;
  }
  attached_.store(true, std::memory_order_release);
}

void NetSendConnection::sealFrame(SocketState& s, const NetFrameHeader& header, const uint8_t* data) {
  if (s.sealedSeq == s.seq) return;
  const ByteView payload{data, header.bytes};
  s.cipher->seal({&header, sizeof(header)}, &payload, 1, s.sealed, s.authTag);
  s.sealedSeq = s.seq;
}

std::vector<uint8_t> NetSendConnection::closingFrame(int index) {
  SocketState& s = sockets_.at(static_cast<size_t>(index));
  NetFrameHeader bye;
  bye.kind = kNetFrameBye;
  bye.seq = static_cast<uint32_t>(s.seq);
  bye.bytes = 0;
  if (s.cipher != nullptr) bye.flags = kNetFrameSealed;
  std::vector<uint8_t> frame(reinterpret_cast<const uint8_t*>(&bye), reinterpret_cast<const uint8_t*>(&bye + 1));
  if (s.cipher != nullptr) {
    uint8_t authTag[kRecordTagBytes];
    s.cipher->seal({&bye, sizeof(bye)}, nullptr, 0, nullptr, authTag);
    frame.insert(frame.end(), authTag, authTag + sizeof(authTag));
  }
  return frame;
}

void* NetSendConnection::tryAcquire() {
  uint64_t posted = posted_.load(std::memory_order_relaxed);
  if (slots_.fits(posted, completed_.load(std::memory_order_acquire))) return slots_.at(posted);
  // Every slot is in flight: push some out ourselves if nobody else is.
  if (mutex_.try_lock()) {
    pump();
    mutex_.unlock();
  }
  return slots_.fits(posted, completed_.load(std::memory_order_acquire)) ? slots_.at(posted) : nullptr;
}

void NetSendConnection::post(size_t bytes, uint64_t tag) { publish(bytes, tag, nullptr); }

void NetSendConnection::postExternal(const void* data, size_t bytes, uint64_t tag) { publish(bytes, tag, data); }

void NetSendConnection::publish(size_t bytes, uint64_t tag, const void* external) {
  uint64_t posted = posted_.load(std::memory_order_relaxed);
  slots_.sizes[slots_.index(posted)] = bytes;
  slots_.tags[slots_.index(posted)] = tag;
  external_[slots_.index(posted)] = static_cast<const uint8_t*>(external);
  if (external != nullptr) externalEnd_.store(posted + 1, std::memory_order_relaxed);
  posted_.store(posted + 1, std::memory_order_seq_cst);
  // Send it now if the sockets take it; otherwise the progress thread finishes the job.
  bool done = false;
  if (mutex_.try_lock()) {
    pump();
    done = posted_.load(std::memory_order_relaxed) == completed_.load(std::memory_order_relaxed);
    mutex_.unlock();
  }
  if (!done) owner_.wakeProgress();
}

bool NetSendConnection::wantsWrite(int s) const {
  return attached() && !abandoned_.load(std::memory_order_relaxed) && sockets_[s].seq < posted_.load(std::memory_order_acquire);
}

void NetSendConnection::abandonExternal() {
  // Under the mutex: a pump copying from the caller's memory (sendFlat) finishes first, and every
  // later one sees the flag.
  std::lock_guard<std::mutex> lock(mutex_);
  abandoned_.store(true, std::memory_order_release);
}

PumpResult NetSendConnection::pump() {
  PumpResult result;
  if (!attached()) return result;  // posted slots wait for the sockets
  if (abandoned_.load(std::memory_order_relaxed)) return result;  // a failed call's frames stay unsent
  uint64_t posted = posted_.load(std::memory_order_acquire);
  uint64_t stride = sockets_.size();
  for (SocketState& s : sockets_) {
    while (s.seq < posted) {
      // The same header every time this frame is (partly) written: it depends on the slot alone.
      NetFrameHeader header;
      header.kind = kNetFrameData;
      header.seq = static_cast<uint32_t>(s.seq);
      header.bytes = static_cast<uint32_t>(slots_.sizes[slots_.index(s.seq)]);
      header.tag = slots_.tags[slots_.index(s.seq)];
      const uint8_t* data = payload(s.seq);
      if (s.cipher != nullptr) {
        // Encrypted into the socket's own buffer: the slot, or the caller's memory, stays as is.
        header.flags = kNetFrameSealed;
        netFramePadding(header, s.sealed);
        try {
          sealFrame(s, header, data);
        } catch (const CollError& e) {
          result.error = e.what();
          owner_.channelFailed(peer_, result.error);
          return result;
        }
        data = s.sealed;
      } else {
        netFramePadding(header, data);
      }
      const size_t total = netFrameWireBytes(header);
      iovec iov[kFrameParts];
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = frameIovecs(header, data, s.authTag, s.offset, iov);
      ssize_t n = total - s.offset <= kFlatFrameBytes ? sendFlat(s.fd, iov, static_cast<int>(msg.msg_iovlen))
                                                      : sendNow(s.fd, &msg);
      if (n < 0) {
        if (wouldBlock(errno)) break;
        result.error = socketError("sending", errno);
        owner_.channelFailed(peer_, result.error);
        return result;
      }
      result.moved = true;
      s.offset += static_cast<size_t>(n);
      if (s.offset < total) break;  // the socket buffer is full; poll for room
      sent_[slots_.index(s.seq)] = 1;
      s.offset = 0;
      s.seq += stride;
    }
  }
  // Slots free up in order, whichever socket finished first.
  uint64_t completed = completed_.load(std::memory_order_relaxed);
  while (completed < posted && sent_[slots_.index(completed)]) sent_[slots_.index(completed++)] = 0;
  completed_.store(completed, std::memory_order_release);
  return result;
}

NetRecvConnection::NetRecvConnection(int peer, std::vector<int> fds, int depth, size_t slotBytes,
                                     NetConnectionOwner& owner)
    : peer_(peer), owner_(owner), slots_(depth, slotBytes), ready_(depth, 0), landedAt_(depth, nullptr) {
  for (size_t s = 0; s < fds.size(); ++s)
    sockets_.push_back({fds[s],
                        s,
                        0,
                        0,
                        0,
                        NetFrameHeader{},
                        false,
                        nullptr,
                        std::make_unique<uint8_t[]>(kStashBytes),
                        0,
                        0,
                        nullptr,
                        {},
                        0});
  attached_.store(!fds.empty() && fds[0] >= 0, std::memory_order_release);
}

void NetRecvConnection::attach(const std::vector<int>& fds, std::vector<std::unique_ptr<RecordCipher>> ciphers) {
  for (size_t s = 0; s < sockets_.size(); ++s) {
    sockets_[s].fd = fds.at(s);
    if (!ciphers.empty()) sockets_[s].cipher = std::move(ciphers.at(s));
  }
  attached_.store(true, std::memory_order_release);
}

void NetRecvConnection::closeSocket(SocketState& s) {
  s.closed = true;
  bool all = true;
  for (const SocketState& other : sockets_) all = all && other.closed;
  if (all) departed_.store(true, std::memory_order_release);
}

const void* NetRecvConnection::tryPeek(size_t* bytes, uint64_t* tag) {
  uint64_t consumed = consumed_.load(std::memory_order_relaxed);
  if (consumed == arrived_.load(std::memory_order_acquire)) {
    if (!mutex_.try_lock()) return nullptr;
    pump();
    mutex_.unlock();
    if (consumed == arrived_.load(std::memory_order_acquire)) return nullptr;
  }
  *bytes = slots_.sizes[slots_.index(consumed)];
  *tag = slots_.tags[slots_.index(consumed)];
  uint8_t* landed = landedAt_[slots_.index(consumed)];
  return landed != nullptr ? landed : slots_.at(consumed);
}

void NetRecvConnection::offerLanding(void* destination, size_t totalBytes, size_t sliceBytes, bool holdLater,
                                     uint64_t tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  landing_.set(destination, totalBytes, sliceBytes, consumed_.load(std::memory_order_relaxed), tag);
  holdPastLanding_ = holdLater && landing_.destination != nullptr;
}

void NetRecvConnection::withdrawLanding() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (landing_.destination == nullptr) return;
  // A frame being read into the caller's memory continues in its slot, and frames read there but
  // not taken move into theirs: the caller may reuse that memory once the call returns.
  for (SocketState& s : sockets_) {
    if (s.payloadTo == nullptr || s.payloadTo == slots_.at(s.seq)) continue;
    std::memcpy(slots_.at(s.seq), s.payloadTo, s.payloadGot);
    s.payloadTo = slots_.at(s.seq);
    landedAt_[slots_.index(s.seq)] = nullptr;
  }
  // What still points into a landing is a complete frame not yet taken (release() clears a taken
  // one's), counted as arrived or not.
  for (size_t i = 0; i < landedAt_.size(); ++i) {
    if (landedAt_[i] == nullptr) continue;
    std::memcpy(slots_.memory.get() + i * slots_.slotBytes, landedAt_[i], slots_.sizes[i]);
    landedAt_[i] = nullptr;
  }
  landing_ = LandingOffer{};
  holdPastLanding_ = false;
}

void NetRecvConnection::release() {
  const uint64_t consumed = consumed_.load(std::memory_order_relaxed);
  // Before the slot is free: pump writes landedAt_ for it again only after consumed_ passes it.
  landedAt_[slots_.index(consumed)] = nullptr;
  consumed_.store(consumed + 1, std::memory_order_seq_cst);
  // Paired with pump's store to stalled_ and re-check of consumed_: either pump sees this slot
  // free, or we see that it stopped and wake the thread that owes the socket a read.
  if (stalled_.load(std::memory_order_seq_cst)) owner_.wakeProgress();
}

bool NetRecvConnection::hasRoom(const SocketState& s) const {
  return slots_.fits(s.seq, consumed_.load(std::memory_order_seq_cst));
}

bool NetRecvConnection::holdsBack(const SocketState& s) const {
  // At a frame's start only: a frame begun is finished wherever it goes.
  return holdPastLanding_ && s.headerGot == 0 && s.seq >= landing_.end &&
         consumed_.load(std::memory_order_acquire) < landing_.end;
}

bool NetRecvConnection::wantsRead(int s) const {
  return attached() && !sockets_[s].closed && hasRoom(sockets_[s]) && !holdsBack(sockets_[s]);
}

ssize_t NetRecvConnection::receive(SocketState& s, uint8_t* to, size_t want) {
  if (s.stashBegin == s.stashEnd && want < kStashBytes) {
    ssize_t n = receiveNow(s.fd, s.stash.get(), kStashBytes);
    if (n <= 0) return n;
    s.stashBegin = 0;
    s.stashEnd = static_cast<size_t>(n);
  }
  if (s.stashBegin == s.stashEnd) return receiveNow(s.fd, to, want);
  size_t n = std::min(want, s.stashEnd - s.stashBegin);
  std::memcpy(to, s.stash.get() + s.stashBegin, n);
  s.stashBegin += n;
  return static_cast<ssize_t>(n);
}

std::string NetRecvConnection::pumpSocket(SocketState& s, bool* moved) {
  while (!s.closed) {
    if (!hasRoom(s)) {
      stalled_.store(true, std::memory_order_seq_cst);
      if (!hasRoom(s)) return "";
      stalled_.store(false, std::memory_order_relaxed);
    }
    if (holdsBack(s)) return "";
    ssize_t n;
    bool inHeader = s.headerGot < sizeof(NetFrameHeader);
    if (s.padLeft > 0) {
      // A frame's lead or trail (net_wire.h): read and dropped.
      uint8_t dropped[kNetFrameAlign];
      n = receive(s, dropped, std::min(s.padLeft, sizeof(dropped)));
    } else if (inHeader) {
      n = receive(s, reinterpret_cast<uint8_t*>(&s.header) + s.headerGot, sizeof(NetFrameHeader) - s.headerGot);
    } else if (s.payloadGot < s.header.bytes) {
      n = receive(s, s.payloadTo + s.payloadGot, s.header.bytes - s.payloadGot);
    } else {
      n = receive(s, s.authTag + s.authTagGot, sizeof(s.authTag) - s.authTagGot);
    }
    if (n < 0) {
      if (wouldBlock(errno)) return "";
      return socketError("receiving", errno);
    }
    if (n == 0) {
      if (s.headerGot > 0 || s.payloadGot > 0 || s.padLeft > 0)
        return formatString(
            "the connection closed in the middle of a frame (%zu of %zu header bytes, %zu payload bytes)", s.headerGot,
            sizeof(NetFrameHeader), s.payloadGot);
      return "the connection closed (the peer's process ended, or it closed its communicator too early)";
    }
    *moved = true;
    if (s.padLeft > 0) {
      s.padLeft -= static_cast<size_t>(n);
      continue;
    }
    if (inHeader) {
      s.headerGot += static_cast<size_t>(n);
      if (s.headerGot < sizeof(NetFrameHeader)) continue;
      std::string bad =
          checkNetFrameHeader(s.header, static_cast<uint32_t>(s.seq), slots_.slotBytes, s.cipher != nullptr);
      if (!bad.empty()) return "received " + bad;
      if (s.header.kind == kNetFrameBye) {
        // A sealed closing frame counts once its tag is read and checked, below.
        if (s.cipher == nullptr) {
          closeSocket(s);
          return "";
        }
      } else {
        s.padLeft = s.header.lead;  // before the payload; the trail follows it
        // A sealed frame never lands in the caller's memory: it is opened in its slot, and the
        // executor copies it out only once it opened, so nothing of a frame that fails
        // authentication is ever where the caller can see it.
        uint8_t* place = s.cipher == nullptr ? landing_.placeOf(s.seq, s.header.bytes, s.header.tag) : nullptr;
        landedAt_[slots_.index(s.seq)] = place;
        s.payloadTo = place != nullptr ? place : slots_.at(s.seq);
      }
    } else if (s.payloadGot < s.header.bytes) {
      s.payloadGot += static_cast<size_t>(n);
    } else {
      s.authTagGot += static_cast<size_t>(n);
    }
    if (s.payloadGot < s.header.bytes) continue;
    if (s.cipher != nullptr) {
      if (s.authTagGot < sizeof(s.authTag)) continue;
      std::string bad = openFrame(s);
      if (!bad.empty() || s.header.kind == kNetFrameBye) return bad;
    }
    slots_.sizes[slots_.index(s.seq)] = s.header.bytes;
    slots_.tags[slots_.index(s.seq)] = s.header.tag;
    ready_[slots_.index(s.seq)] = 1;
    if (landedAt_[slots_.index(s.seq)] != nullptr) receivedInPlace_.fetch_add(1, std::memory_order_relaxed);
    s.seq += sockets_.size();
    s.headerGot = 0;
    s.payloadGot = 0;
    s.authTagGot = 0;
    s.payloadTo = nullptr;
    s.padLeft += s.header.trail;  // with the lead still unread when the payload is empty
    // What of the padding was read along with the frame is dropped here, so that it does not
    // keep the check below from returning (a small frame comes in one read, trail included).
    const size_t stashedPadding = std::min(s.padLeft, s.stashEnd - s.stashBegin);
    s.stashBegin += stashedPadding;
    s.padLeft -= stashedPadding;
    // A frame is complete: hand it over rather than ask the socket for more first. With nothing
    // stashed that read is a system call, and for small messages it usually finds nothing; the
    // next pump reads on (the progress thread's poll() is level-triggered).
    if (s.stashBegin == s.stashEnd) return "";
  }
  return "";
}

std::string NetRecvConnection::openFrame(SocketState& s) {
  bool authentic = false;
  try {
    authentic = s.cipher->open({&s.header, sizeof(s.header)}, s.payloadTo, s.header.bytes, s.authTag);
  } catch (const CollError& e) {
    return e.what();
  }
  if (!authentic)
    return formatString(
        "frame %u (%u bytes) failed authentication: it was altered, replayed or reordered on the way, or sealed under "
        "another key (COLL_NET_ENCRYPT); the connection is closed",
        s.header.seq, s.header.bytes);
  if (s.header.kind == kNetFrameBye) closeSocket(s);
  return "";
}

PumpResult NetRecvConnection::pump() {
  PumpResult result;
  if (!attached()) return result;
  // A broken stream is never read again: its state (a rejected header's length, say) means
  // nothing, and reading on could write where no frame belongs.
  if (!broken_.empty()) {
    result.error = broken_;
    return result;
  }
  for (SocketState& s : sockets_) {
    result.error = pumpSocket(s, &result.moved);
    if (!result.error.empty()) {
      broken_ = result.error;
      owner_.channelFailed(peer_, result.error);
      return result;
    }
  }
  uint64_t arrived = arrived_.load(std::memory_order_relaxed);
  while (ready_[slots_.index(arrived)]) ready_[slots_.index(arrived++)] = 0;
  arrived_.store(arrived, std::memory_order_release);
  return result;
}

}  // namespace transport
}  // namespace coll
