#include <string>

#include "common/error.h"
#include "transport/domain.h"

namespace coll {
namespace transport {
namespace {

std::string listRanks(const std::vector<int>& ranks) {
  if (ranks.empty()) return "none";
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ",") + std::to_string(r);
  return text;
}

}  // namespace

std::string describeUsage(const char* domainName, const DomainUsage& usage) {
  std::string text =
      formatString("%s: %d %s; sends to %s; receives from %s", domainName, usage.resources, usage.resourceKind,
                   listRanks(usage.sendPeers).c_str(), listRanks(usage.recvPeers).c_str());
  for (const auto& [name, count] : usage.counts) text += "; " + name + " " + std::to_string(count);
  return text;
}

}  // namespace transport
}  // namespace coll
