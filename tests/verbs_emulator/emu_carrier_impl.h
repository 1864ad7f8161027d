// The carrier's inside (emu_carrier.h): one per process, a thread that owns every socket. Writers
// (ibv_post_send, in the application's threads) queue bytes and wake it; it connects, sends,
// reads acknowledgements and completes sends (emu_carrier.cc), and serves the connections of
// other processes' carriers, landing their writes here (emu_carrier_responder.cc).
//
// Locks: the registry's lock, then `mutex`, never the other way round; the thread does its socket
// work holding `mutex` only (every socket is non-blocking), and takes the registry's lock first
// whenever it touches the registry.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "emu_registry.h"

namespace verbs_emu {

using CarrierClock = std::chrono::steady_clock;

// On the wire, in this machine's byte order (both ends are processes of one machine).
constexpr uint32_t kWriteMagic = 0x45574d57;       // a write: this header, then `bytes` bytes
constexpr uint32_t kAckMagic = 0x4b434157;         // its answer
constexpr uint64_t kMaxCarriedBytes = 1ull << 30;  // larger than any write the transport makes

struct WireWrite {
  uint32_t magic;
  uint32_t srcQpn;
  uint32_t destQpn;
  int32_t opcode;
  uint32_t imm;
  uint32_t rkey;
  uint64_t remoteAddr;
  uint64_t bytes;
};

struct WireAck {
  uint32_t magic;
  int32_t status;  // ibv_wc_status
};

// One QP's writes on their way: the connection to its peer's carrier and the writes not yet
// completed, in posting order.
struct Outgoing {
  struct Write {
    uint64_t wrId;
    bool signaled;
    int status;  // -1: waiting for the peer's answer; else the ibv_wc_status it completes with
    CarrierClock::time_point deadline;
  };
  uint32_t qpn = 0;
  ibv_qp* qp = nullptr;  // the process's object (its state follows the registry's)
  int sendCq = -1;
  std::vector<sockaddr_in> peers;  // the peer carrier's addresses, tried in turn
  size_t nextPeer = 0;
  int fd = -1;
  bool connected = false;
  bool broken = false;     // failed: every later write is flushed
  int unreported = -1;     // the failure's status, when no write was waiting to take it: the next one does
  bool forgotten = false;  // its QP was destroyed: the thread closes and drops it
  std::chrono::nanoseconds retryTime{0};
  std::deque<Write> writes;
  std::string out;  // headers and bytes not yet sent
  size_t outSent = 0;
  std::string acks;  // a partial acknowledgement
};

// A connection from another process's carrier: writes in, acknowledgements out.
struct Incoming {
  int fd = -1;
  std::string in;
  size_t inUsed = 0;
  std::string acks;
};

// Appends what a non-blocking socket has to `into`; false when the other end closed or it broke.
bool receiveAvailable(int fd, std::string* into);

class Carrier {
 public:
  // This process's carrier, started on first use (registry lock held); nullptr when it cannot be.
  static Carrier* get();

  uint16_t port = 0;
  std::vector<uint32_t> addresses;  // IPv4, network order: this namespace's, not loopback

  std::mutex mutex;                       // guards `outgoing` and `decided`
  std::map<uint32_t, Outgoing> outgoing;  // by QP number
  bool decided = false;                   // some write's completion is due (deliver())
  void wake();

 private:
  bool start();
  // Closes every descriptor without taking `mutex` (a forked child's copy, or a failed start).
  void abandon();
  void run();
  int collect(std::vector<pollfd>* fds, std::vector<uint32_t>* qpns);
  // The writer's side (emu_carrier.cc), `mutex` held.
  void pumpOutgoing(Outgoing& o, short revents);
  void connectNext(Outgoing& o);
  void fail(Outgoing& o, int status);
  // Completes the decided writes at the head of every QP's queue (takes both locks).
  void deliver();
  // The responder's side (emu_carrier_responder.cc), on the thread only.
  void accept();
  bool serve(Incoming& in);  // false: drop the connection
  void land(Incoming& in, const WireWrite& write, const uint8_t* bytes);

  int listenFd_ = -1;
  int wakeFd_ = -1;
  std::vector<Incoming> incoming_;
};

}  // namespace verbs_emu
