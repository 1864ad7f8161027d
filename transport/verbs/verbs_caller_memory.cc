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
  entry.mr = api_->regMr(pd_, const_cast<void*>(buffer.base), buffer.bytes, 0);
  if (entry.mr != nullptr) {
    ++made_;
    return vacant;
  }
  const int err = errno;
  entry.refused = true;
  ++failed_;
  if (!failureLogged_) {
    failureLogged_ = true;
    COLL_INFO(kTransport,
              "rank %d: verbs transport: ibv_reg_mr of the caller's buffer (%zu bytes at %p) failed: %s; its slices go "
              "through the registered slots instead (a copy each); pinned-memory limits (ulimit -l) are the usual "
              "cause (logged once)",
              rank_, buffer.bytes, buffer.base, std::strerror(err));
  }
  return -1;
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
  size_t n = 0;
  for (const Entry& e : entries_) n += e.mr != nullptr ? 1 : 0;
  return n;
}

void VerbsCallerMemory::deregister(Entry& entry) {
  // A deregistration that fails leaves the pages pinned until the process ends; nothing reads
  // them any more, so the call goes on.
  if (api_->deregMr(entry.mr) != 0)
    COLL_INFO(kTransport, "rank %d: verbs transport: ibv_dereg_mr of a caller's buffer failed: %s", rank_,
              std::strerror(errno));
  entry = Entry{};
}

}  // namespace transport
}  // namespace coll
