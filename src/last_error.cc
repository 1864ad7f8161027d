#include "src/last_error.h"

#include <utility>
#include <vector>

namespace coll {
namespace {

constexpr size_t kCommunicatorsKept = 8;

struct LastErrors {
  std::string latest;
  uint64_t latestComm = 0;                               // the communicator `latest` concerned (0: none)
  std::vector<std::pair<uint64_t, std::string>> byComm;  // most recent first
};

thread_local LastErrors tErrors;
const std::string kNone;

}  // namespace

void recordLastError(const std::string& message, uint64_t comm) {
  tErrors.latest = message;
  tErrors.latestComm = comm;
  if (comm == 0) return;
  auto& list = tErrors.byComm;
  for (auto it = list.begin(); it != list.end(); ++it)
    if (it->first == comm) {
      list.erase(it);
      break;
    }
  list.insert(list.begin(), {comm, message});
  if (list.size() > kCommunicatorsKept) list.pop_back();
}

const std::string& lastError() { return tErrors.latest; }

const std::string& lastErrorAbout(uint64_t comm) {
  if (tErrors.latestComm == 0 || tErrors.latestComm == comm) return tErrors.latest;
  for (const auto& entry : tErrors.byComm)
    if (entry.first == comm) return entry.second;
  return kNone;
}

}  // namespace coll
