// colltopo --algorithms: the algorithm table (src/algorithms/algorithm_table.h) as the planner
// reads it, as a Markdown table (the one docs/algorithms.md holds) or JSON.
#pragma once

namespace colltopo {

int printAlgorithmTable(bool json);

}  // namespace colltopo
