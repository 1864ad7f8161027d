// The carrier's responder side (emu_carrier.h): other processes' carriers connect here, one
// connection per writing QP, and send writes, each a header and its bytes. Each is checked as a
// device's responder checks it (emu_write.h: admit) against this process's QP and regions, landed
// in this process's memory, its receive completed, and answered with its status, in order.
// Only the carrier's thread runs this.
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "emu_carrier_impl.h"
#include "emu_write.h"

namespace verbs_emu {
namespace {

// Sends what the connection owes of its answers; false when it broke.
bool sendAcks(Incoming& in) {
  while (!in.acks.empty()) {
    ssize_t n = send(in.fd, in.acks.data(), in.acks.size(), MSG_NOSIGNAL);
    if (n > 0) {
      in.acks.erase(0, static_cast<size_t>(n));
    } else {
      return n < 0 && (errno == EAGAIN || errno == EINTR);
    }
  }
  return true;
}

}  // namespace

void Carrier::accept() {
  for (;;) {
    int fd = accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Incoming in;
    in.fd = fd;
    incoming_.push_back(std::move(in));
  }
}

bool Carrier::serve(Incoming& in) {
  // The writer closed (its QP was destroyed) or its link broke: the connection goes.
  if (!sendAcks(in) || !receiveAvailable(in.fd, &in.in)) return false;
  // Every whole write, in order. The header comes from another process: a wrong magic or a size
  // no write has ends the connection (its writer then sees its writes fail), never a wild copy.
  for (;;) {
    const size_t available = in.in.size() - in.inUsed;
    if (available < sizeof(WireWrite)) break;
    WireWrite write;
    std::memcpy(&write, in.in.data() + in.inUsed, sizeof(write));
    if (write.magic != kWriteMagic || write.bytes > kMaxCarriedBytes) return false;
    if (available - sizeof(write) < write.bytes) break;
    land(in, write, reinterpret_cast<const uint8_t*>(in.in.data() + in.inUsed + sizeof(write)));
    in.inUsed += sizeof(write) + write.bytes;
  }
  if (in.inUsed == in.in.size()) {
    in.in.clear();
    in.inUsed = 0;
  } else if (in.inUsed >= (1u << 20)) {
    in.in.erase(0, in.inUsed);
    in.inUsed = 0;
  }
  return sendAcks(in);
}

void Carrier::land(Incoming& in, const WireWrite& write, const uint8_t* bytes) {
  // A write for a QP that is not this process's, or not connected to the writer's, gets no
  // answer on a fabric until the writer's retries run out: the same status, at once.
  int status = IBV_WC_RETRY_EXC_ERR;
  {
    Registry* r = registry();
    Locked lock(r);
    const int d = findQp(r, write.destQpn);
    if (d >= 0 && r->qps[d].pid == getpid() && r->qps[d].destQpn == write.srcQpn) {
      QpSlot& dest = r->qps[d];
      const WriteRequest request{write.opcode, write.rkey, write.remoteAddr, write.bytes, write.imm};
      status = admit(r, dest, request);
      // admit() checked that a region of this process, opened by that key, covers the range.
      if (status == IBV_WC_SUCCESS) {
        if (write.bytes > 0) std::memcpy(reinterpret_cast<void*>(write.remoteAddr), bytes, write.bytes);
        completeReceive(r, dest, write.srcQpn, request);
      }
    }
  }
  const WireAck ack{kAckMagic, status};
  in.acks.append(reinterpret_cast<const char*>(&ack), sizeof(ack));
}

}  // namespace verbs_emu
