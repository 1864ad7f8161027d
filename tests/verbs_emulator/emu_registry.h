// The verbs emulator's shared state: one file in /dev/shm that every process using the emulator
// maps, holding the tables a remote process must see (QPs by number, memory regions by key, CQs).
// A writer finds the receiver's QP by the QP number it was given at RTR, the receiver's pid there,
// its memory region by rkey, and its CQ, all under one process-shared robust mutex: a test double
// wants simple and obviously correct, not fast. Slots of processes that died are reclaimed when a
// new object needs one.
#pragma once

#include <infiniband/verbs.h>
#include <pthread.h>
#include <sys/types.h>

#include <cstdint>

namespace verbs_emu {

constexpr int kMaxQps = 256;
constexpr int kMaxCqs = 64;
constexpr int kMaxMrs = 512;
constexpr int kCqDepth = 512;    // completions a CQ holds (max_cqe)
constexpr int kRecvDepth = 256;  // posted receives a QP holds (max_recv_wr)
constexpr int kMaxSge = 4;
constexpr uint32_t kMaxInline = 256;
constexpr uint32_t kMaxHeld = 4;  // receive completions a CQ holds back (COLL_VERBS_EMU_DELAY_QP)
constexpr int kMaxCarrierAddrs = 4;  // IPv4 addresses a QP's owner publishes (emu_carrier.h)

struct MrSlot {
  uint32_t key;  // lkey == rkey
  pid_t pid;     // the owner; 0: free
  uint32_t pd;
  int access;
  uint64_t addr;
  uint64_t length;
};

struct CqSlot {
  pid_t pid;            // 0: free
  uint32_t head, tail;  // entries [head, tail) modulo kCqDepth are pending
  uint32_t capacity;
  ibv_wc entries[kCqDepth];
  // Receive completions of delayed QPs, delivered after the next completion or after a few polls
  // that found nothing (emu_data_path.cc); they count against the capacity.
  uint32_t heldCount, idlePolls;
  ibv_wc held[kMaxHeld];
  // Send completions a carrier (emu_carrier.h) owes for writes still crossing to another network
  // namespace; they count against the capacity too.
  uint32_t owed;
};

struct QpSlot {
  uint32_t qpn;
  pid_t pid;  // the owner; 0: free
  uint32_t pd;
  int state;  // ibv_qp_state
  uint32_t destQpn;
  int sendCq, recvCq;  // CqSlot indices
  uint32_t maxRecv;
  bool delayed;  // COLL_VERBS_EMU_DELAY_QP: its receive completions are held back
  uint32_t recvHead, recvTail;
  uint64_t recvWrIds[kRecvDepth];
  // Where the owner lives and how a writer in another network namespace reaches it (emu_carrier.h):
  // the namespace's inode, the owner's carrier port (0: none) and its IPv4 addresses there.
  uint64_t netns;
  uint16_t carrierPort;
  uint32_t carrierAddrs[kMaxCarrierAddrs];
  int8_t carried;               // its writes go by the carrier: 0 not decided yet (first write decides), 1 yes, -1 no
  uint8_t timeout, retryCount;  // from RTS: how long a carried write waits for its acknowledgement
};

struct Registry {
  uint64_t magic;
  pthread_mutex_t lock;
  uint32_t nextQpn, nextKey, nextPd;
  MrSlot mrs[kMaxMrs];
  CqSlot cqs[kMaxCqs];
  QpSlot qps[kMaxQps];
  uint64_t overtaken;  // held completions delivered after a later one (coll_verbs_emu_overtaken)
};

// The mapped registry: $COLL_VERBS_EMU_REGISTRY, or /dev/shm/coll-verbs-emu-<uid>; created on
// first use by whichever process gets there first. nullptr (errno set) when it cannot be made.
Registry* registry();

// Holds the registry's lock for a scope. A process that died holding it leaves the tables as they
// were at its last complete change (every change is a few stores under the lock), so the next
// owner marks the lock consistent and goes on. Waiting for it never sleeps unbounded (see Locked's
// definition: a lost wake-up seen after a SIGKILL).
class Locked {
 public:
  explicit Locked(Registry* r);
  ~Locked();
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  Registry* r_;
};

// True when the slot's owner is gone (its pid no longer exists), so the slot may be reused and
// writes to it fail as to a dead peer.
bool ownerGone(pid_t pid);

// Slot lookups and allocation, called with the lock held. -1 when none.
int findQp(Registry* r, uint32_t qpn);
int findMr(Registry* r, uint32_t key);
int freeQpSlot(Registry* r);
int freeMrSlot(Registry* r);
int freeCqSlot(Registry* r);
// Unique across the registry's processes; never 0.
uint32_t nextQpn(Registry* r);
uint32_t nextKey(Registry* r);

// Appends a completion to a CQ; false when it is full.
bool pushCompletion(CqSlot* cq, const ibv_wc& wc);
// Whether a CQ has room for one more completion, counting those held back and those owed.
inline bool cqHasRoom(const CqSlot& cq) { return cq.tail - cq.head + cq.heldCount + cq.owed < cq.capacity; }

}  // namespace verbs_emu
