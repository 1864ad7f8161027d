#include "algorithm_view.h"

#include <cstdio>
#include <string>

#include "src/algorithms/algorithm_table.h"
#include "topo/json_writer.h"

namespace colltopo {
namespace {

std::string servedCollectives(const coll::AlgorithmRow& row) {
  std::string names;
  for (int t = 0; t < static_cast<int>(coll::CollType::kCount); ++t) {
    auto type = static_cast<coll::CollType>(t);
    if (coll::serves(row, type)) names += (names.empty() ? "" : ", ") + std::string(coll::collTypeName(type));
  }
  return names;
}

const char* runsAs(const coll::AlgorithmRow& row) { return row.build != nullptr ? "schedule" : "native"; }

}  // namespace

int printAlgorithmTable(bool json) {
  if (json) {
    coll::topo::JsonWriter w;
    using Layout = coll::topo::JsonWriter::Layout;
    w.beginArray();
    for (const coll::AlgorithmRow& row : coll::algorithmTable())
      w.beginObject(Layout::kInline)
          .field("name", std::string(row.name))
          .field("serves", servedCollectives(row))
          .field("runs_as", std::string(runsAs(row)))
          .field("planner_takes_it", std::string(row.choice))
          .field("summary", std::string(row.summary))
          .endObject();
    w.endArray();
    fputs(w.str().c_str(), stdout);
    return 0;
  }
  printf("| `COLL_ALGO` | serves | runs as | the planner takes it | what it is |\n");
  printf("| --- | --- | --- | --- | --- |\n");
  for (const coll::AlgorithmRow& row : coll::algorithmTable())
    printf("| `%s` | %s | %s | %s | %s |\n", row.name, servedCollectives(row).c_str(), runsAs(row), row.choice,
           row.summary);
  return 0;
}

}  // namespace colltopo
