// Registrations of callers' buffers for the verbs transport's zero-copy sends (COLL_IB_ZCOPY_BYTES):
// a slice whose bytes already lie in the caller's memory is RDMA-written from there, with the
// same immediate, credits and receiver slot as a slot's write, so the receiver cannot tell the
// difference; what it saves is the sender's copy into its registered slot.
//
// Registered per call, never cached across calls. An address-keyed cache that outlives a call
// can go stale: the caller frees its buffer, malloc or mmap hands the same range out again, and
// the cached registration still pins the old pages, so the device would send the old bytes. Here:
//   - a registration is made by the call that needs it (the first slice from a buffer of at least
//     the threshold registers the whole buffer, so the call's later slices reuse it);
//   - it is found only by that call: when the executor reports the call returned
//     (ProgressDriver::Executor::kReturned) every entry is retired, and a retired entry is never
//     found again, so the next call registers afresh whatever the addresses;
//   - it is deregistered once retired and once the device has finished reading it (its last
//     write completed; on the normal path the executor waits for that before returning, so it
//     goes at once; after an error it goes with the writes' error or flush completions, or with
//     the domain, after its QPs are destroyed).
// While a registration can be found, the call that made it has not returned, so its buffer is
// still the caller's (the API's contract): every write reads the pages the buffer has now.
//
// Registration can fail (pinned-memory limits, RLIMIT_MEMLOCK): the buffer's slices then go
// through the slots, as below the threshold, and the failure is logged at INFO once per domain.
//
// Zero-copy receives (verbs_landing.h) register a destination here too, for remote write, with
// the same threshold, counts and once-logged refusal; each such registration belongs to the
// landing that made it, which deregisters it when it is withdrawn (before its call returns), so
// it is never in the table that sends search.
// All of it runs under the domain's lock.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "transport/transport.h"
#include "transport/verbs/verbs_api.h"

namespace coll {
namespace transport {

class VerbsCallerMemory {
 public:
  // `thresholdBytes`: the smallest caller buffer sent zero-copy (0: none is).
  VerbsCallerMemory(std::shared_ptr<const VerbsApi> api, size_t thresholdBytes, int rank);
  ~VerbsCallerMemory();
  VerbsCallerMemory(const VerbsCallerMemory&) = delete;
  VerbsCallerMemory& operator=(const VerbsCallerMemory&) = delete;

  // The protection domain to register in, once the device is open.
  void usePd(ibv_pd* pd) { pd_ = pd; }
  size_t threshold() const { return threshold_; }

  // The registration that zero-copy sends from `buffer` use during this call, made now if no
  // live one covers it: its index, or -1 when the buffer is below the threshold, the table is
  // full, or ibv_reg_mr failed (then not tried again for this buffer in this call).
  int cover(const CallerBuffer& buffer);
  // The live registration of this call that covers [data, data + bytes), or -1.
  int find(const void* data, size_t bytes) const;
  uint32_t lkey(int index) const { return entries_[index].mr->lkey; }

  // A write reading registration `index` was posted / completed (successfully or not).
  void writePosted(int index);
  void writeCompleted(int index);
  // The executor's call returned: nothing registered so far may be found again; what no write
  // reads any more is deregistered now, the rest when its last write completes.
  void callReturned();
  // Deregisters everything, read or not: only once the QPs that could read it are destroyed.
  void releaseAll();

  // A landing's destination, registered for the device to write into; nullptr when refused.
  ibv_mr* registerLanding(void* destination, size_t bytes);
  // False when ibv_dereg_mr failed: its key may still open the memory.
  bool releaseLanding(ibv_mr* mr);

  size_t live() const;  // registrations held now, landings' included
  uint64_t made() const { return made_; }
  uint64_t writes() const { return writes_; }  // zero-copy writes posted
  uint64_t failed() const { return failed_; }

 private:
  // A slot of the table: free (no mr, not refused), live (mr), or a buffer ibv_reg_mr refused
  // during this call (no mr, refused), remembered so that its other slices do not try again.
  struct Entry {
    uintptr_t begin = 0, end = 0;
    ibv_mr* mr = nullptr;
    bool refused = false;
    bool retired = false;  // its call returned: never found again
    int writesInFlight = 0;
  };
  // A call touches a send and a receive buffer, or a group's few point-to-point buffers.
  static constexpr size_t kMaxEntries = 16;
  // ibv_reg_mr, counted; a refusal is counted and logged (once per domain) with what it was for.
  ibv_mr* registerCounted(void* base, size_t bytes, int access, const char* purpose);
  bool deregister(ibv_mr* mr);  // false (logged) when it failed
  void deregister(Entry& entry);

  std::shared_ptr<const VerbsApi> api_;
  ibv_pd* pd_ = nullptr;
  size_t threshold_;
  int rank_;
  std::array<Entry, kMaxEntries> entries_{};
  uint64_t made_ = 0;
  uint64_t writes_ = 0;
  uint64_t failed_ = 0;
  size_t landingsHeld_ = 0;
  bool failureLogged_ = false;
};

}  // namespace transport
}  // namespace coll
