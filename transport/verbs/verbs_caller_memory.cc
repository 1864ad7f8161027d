#include "transport/verbs/verbs_caller_memory.h"

#include <cerrno>
#include <cstring>

#include "common/logging.h"

namespace coll {
namespace transport {

VerbsCallerMemory::VerbsCallerMemory(std::shared_ptr<const VerbsApi> api, size_t thresholdBytes, int rank)
    : api_(std::move(api)), threshold_(thresholdBytes), rank_(rank) {}

VerbsCallerMemory::~VerbsCallerMemory() { releaseAll(); }

int VerbsCallerMemory::cover(const CallerBuffer& buffer) {
  if (threshold_ == 0 || buffer.bytes < threshold_ || pd_ == nullptr) return -1;
  const auto begin = reinterpret_cast<uintptr_t>(buffer.base);
  const uintptr_t end = begin + buffer.bytes;
  int vacant = -1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    const bool used = e.mr != nullptr || e.refused;
    if (used && !e.retired && e.begin <= begin && end <= e.end) return e.refused ? -1 : static_cast<int>(i);
    if (!used && vacant < 0) vacant = static_cast<int>(i);
  }
  if (vacant < 0) return -1;  // more buffers in one call than the table holds: the rest are copied
  Entry& entry = entries_[vacant];
  entry = Entry{};
  entry.begin = begin;
  entry.end = end;
  // Only the device reads it (the source of RDMA writes): no local or remote write access, so a
  // read-only buffer registers too.
  entry.mr = registerCounted(const_cast<void*>(buffer.base), buffer.bytes, 0, "to send from");
  if (entry.mr != nullptr) return vacant;
  entry.refused = true;
  return -1;
}

ibv_mr* VerbsCallerMemory::registerLanding(void* destination, size_t bytes) {
  if (pd_ == nullptr) return nullptr;
  // The peer's device writes into it; verbs requires local write with remote write.
  ibv_mr* mr = registerCounted(destination, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, "to receive into");
  if (mr != nullptr) ++landingsHeld_;
  return mr;
}

bool VerbsCallerMemory::releaseLanding(ibv_mr* mr) {
  --landingsHeld_;
  return deregister(mr);
}

ibv_mr* VerbsCallerMemory::registerCounted(void* base, size_t bytes, int access, const char* purpose) {
  ibv_mr* mr = api_->regMr(pd_, base, bytes, access);
  if (mr != nullptr) {
    ++made_;
    return mr;
  }
  const int err = errno;
  ++failed_;
  if (!failureLogged_) {
    failureLogged_ = true;
    COLL_INFO(kTransport,
              "rank %d: verbs transport: ibv_reg_mr of the caller's buffer (%zu bytes at %p, %s) failed: %s; its "
              "slices go through the registered slots instead (a copy each); pinned-memory limits (ulimit -l) are "
              "the usual cause (logged once)",
              rank_, bytes, base, purpose, std::strerror(err));
  }
  return nullptr;
}

int VerbsCallerMemory::find(const void* data, size_t bytes) const {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.mr != nullptr && !e.retired && e.begin <= begin && begin + bytes <= e.end) return static_cast<int>(i);
  }
  return -1;
}

void VerbsCallerMemory::writePosted(int index) {
  ++entries_[index].writesInFlight;
  ++writes_;
}

void VerbsCallerMemory::writeCompleted(int index) {
  Entry& entry = entries_[index];
  if (entry.writesInFlight > 0) --entry.writesInFlight;
  if (entry.retired && entry.writesInFlight == 0) deregister(entry);
}

void VerbsCallerMemory::callReturned() {
  for (Entry& entry : entries_) {
    if (entry.refused) entry = Entry{};  // the next call may try again: the limit may have moved
    if (entry.mr == nullptr) continue;
    entry.retired = true;
    if (entry.writesInFlight == 0) deregister(entry);
  }
}

void VerbsCallerMemory::releaseAll() {
  for (Entry& entry : entries_)
    if (entry.mr != nullptr) deregister(entry);
}

size_t VerbsCallerMemory::live() const {
  size_t n = landingsHeld_;
  for (const Entry& e : entries_) n += e.mr != nullptr ? 1 : 0;
  return n;
}

bool VerbsCallerMemory::deregister(ibv_mr* mr) {
  // A send's registration that fails to go leaves the pages pinned until the process ends; the
  // device reads them no more, so the call goes on. A landing's may still be written: its owner
  // decides (verbs_landing.cc).
  if (api_->deregMr(mr) == 0) return true;
  COLL_INFO(kTransport, "rank %d: verbs transport: ibv_dereg_mr of a caller's buffer failed: %s", rank_,
            std::strerror(errno));
  return false;
}

void VerbsCallerMemory::deregister(Entry& entry) {
  deregister(entry.mr);
  entry = Entry{};
}

}  // namespace transport
}  // namespace coll
