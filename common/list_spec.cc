#include "common/list_spec.h"

namespace coll {

std::vector<std::string> splitList(const std::string& text, char separator) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

NameSelection NameSelection::parse(const std::string& text, Match match) {
  NameSelection selection;
  size_t at = 0;
  if (at < text.size() && text[at] == '^') selection.exclude_ = true, ++at;
  selection.match_ = match;
  if (at < text.size() && text[at] == '=') selection.match_ = Match::kExact, ++at;
  selection.names_ = splitList(text.substr(at));
  return selection;
}

bool NameSelection::selects(const std::string& name) const {
  bool listed = false;
  for (const std::string& n : names_)
    listed = listed || (match_ == Match::kExact ? name == n : name.compare(0, n.size(), n) == 0);
  return listed != exclude_;
}

}  // namespace coll
