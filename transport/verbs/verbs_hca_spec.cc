#include "transport/verbs/verbs_hca_spec.h"

#include <cstdlib>

#include "common/error.h"

namespace coll {
namespace transport {
namespace {

bool nameMatches(const VerbsHcaSpec& spec, const std::string& wanted, const std::string& device) {
  return spec.exact ? device == wanted : device.compare(0, wanted.size(), wanted) == 0;
}

}  // namespace

VerbsHcaSpec parseVerbsHcaSpec(const std::string& text) {
  VerbsHcaSpec spec;
  size_t pos = 0;
  // NCCL reads "^" before "=", so "^=name" excludes exactly that name.
  if (pos < text.size() && text[pos] == '^') {
    spec.exclude = true;
    ++pos;
  }
  if (pos < text.size() && text[pos] == '=') {
    spec.exact = true;
    ++pos;
  }
  const std::string body = text.substr(pos);
  if (body.empty()) {
    if (pos == 0) return spec;  // unset or empty: everything
    throwError(collInvalidUsage, "COLL_IB_HCA=\"%s\": no device named after the prefix", text.c_str());
  }
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    if (comma == std::string::npos) comma = body.size();
    const std::string item = body.substr(start, comma - start);
    VerbsHcaSpec::Item parsed;
    const size_t colon = item.find(':');
    parsed.device = item.substr(0, colon);
    if (parsed.device.empty())
      throwError(collInvalidUsage, "COLL_IB_HCA=\"%s\": an empty device name (expected name[:port],...)",
                 text.c_str());
    if (colon != std::string::npos) {
      const std::string port = item.substr(colon + 1);
      char* end = nullptr;
      const long value = port.empty() ? 0 : std::strtol(port.c_str(), &end, 10);
      if (port.empty() || *end != '\0' || value < 1 || value > 255)
        throwError(collInvalidUsage, "COLL_IB_HCA=\"%s\": port \"%s\" of %s is not a number in 1..255", text.c_str(),
                   port.c_str(), parsed.device.c_str());
      parsed.port = static_cast<int>(value);
    }
    spec.items.push_back(parsed);
    start = comma + 1;
  }
  return spec;
}

bool verbsHcaSelects(const VerbsHcaSpec& spec, const std::string& device, int port) {
  if (spec.items.empty()) return !spec.exclude;
  bool named = false;
  for (const VerbsHcaSpec::Item& item : spec.items)
    if (nameMatches(spec, item.device, device) && (item.port == 0 || item.port == port)) named = true;
  return named != spec.exclude;
}

}  // namespace transport
}  // namespace coll
