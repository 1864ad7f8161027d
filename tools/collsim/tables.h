// The survey as tables, one per question (docs/algorithms.md, "Large jobs, simulated"), printed
// as Markdown or as aligned text.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tools/collsim/survey.h"

namespace collsim {

struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

std::string renderTable(const Table& table, bool markdown);

// Sizes of the planner's choice table (modelled only, nothing walked).
const std::vector<size_t>& choiceSizes();

std::vector<Table> surveyTables(const std::vector<ShapeSurvey>& surveys, const TransportShape& transports);

std::string formatBytes(double bytes);  // "8 B", "64 KiB", "1.5 GiB"
std::string formatMicros(double us);    // "41 us", "12.3 ms", "1.2 s" (design value)

}  // namespace collsim
