// Comma lists in settings, and the one selection grammar that COLL_TRANSPORTS,
// COLL_DEBUG_SUBSYS and COLL_SOCKET_IFNAME share: "a,b" selects the names listed, "^a,b" every
// name but those. Where a setting matches name prefixes (interfaces: "eth" selects eth0 and
// eth1), a '=' after any '^' makes the names exact ("=eth0").
#pragma once

#include <string>
#include <vector>

namespace coll {

// "a,b,,c" -> {"a", "b", "c"}: the items between separators, empty ones dropped.
std::vector<std::string> splitList(const std::string& text, char separator = ',');

class NameSelection {
 public:
  enum class Match { kExact, kPrefix };
  // `match` is how names compare unless the text says '=' (always exact then).
  static NameSelection parse(const std::string& text, Match match = Match::kExact);

  // The names as written, without '^' and '='.
  const std::vector<std::string>& names() const { return names_; }
  bool excludes() const { return exclude_; }
  // Whether `name` is selected: listed (exactly or as a prefix), or, after '^', not listed.
  bool selects(const std::string& name) const;

 private:
  std::vector<std::string> names_;
  bool exclude_ = false;
  Match match_ = Match::kExact;
};

}  // namespace coll
