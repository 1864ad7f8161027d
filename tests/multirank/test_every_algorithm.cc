// Every row of the algorithm table, forced with COLL_ALGO on every collective it serves, runs that
// collective's standard cases (every type, op, count, root and layout) against the independent
// reference: on 3 ranks of one host, and on 4 ranks of two simulated hosts (shared memory within,
// sockets between). The rows come from the table, so a row added to it is run here with no change
// to this file. Native rows need every rank on one host (and the one-shot path small inputs);
// where a row cannot run a case the library must say so (collInvalidUsage naming COLL_ALGO),
// which is checked too.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <ostream>
#include <string>
#include <vector>

#include "collective_cases.h"
#include "rank_launcher.h"
#include "src/algorithms/algorithm_table.h"
#include "src/collective_table.h"

namespace colltest {
namespace {

struct Subject {
  std::string algorithm;
  coll::CollType type;
};

void PrintTo(const Subject& s, std::ostream* os) { *os << s.algorithm << " on " << coll::collTypeName(s.type); }

// The multi-rank cases' own names for the collectives (they do not use the library's types).
bool sameCollective(Coll coll, coll::CollType type) { return collName(coll) == std::string(coll::collTypeName(type)); }

std::vector<Subject> subjects() {
  std::vector<Subject> out;
  for (const coll::AlgorithmRow& row : coll::algorithmTable())
    for (int t = 0; t < static_cast<int>(coll::CollType::kCount); ++t)
      // The variable-count collectives have no standard cases: test_vcollectives.cc runs them.
      if (coll::serves(row, static_cast<coll::CollType>(t)) &&
          !coll::collectiveRow(static_cast<coll::CollType>(t)).variableCounts)
        out.push_back({row.name, static_cast<coll::CollType>(t)});
  return out;
}

// Runs the subject's cases; a case the forced algorithm cannot run must be refused with
// collInvalidUsage naming COLL_ALGO on every rank, and then not counted as a failure.
RankBody bodyFor(const Subject& s) {
  return [s](collComm_t comm, int rank, int nranks) {
    std::vector<Case> mine;
    for (const Case& c : standardCases(nranks, false))
      if (sameCollective(c.coll, s.type)) mine.push_back(c);
    std::vector<std::string> failures;
    for (const Case& c : mine) {
      std::string error = runCase(comm, rank, nranks, c);
      if (error.empty()) continue;
      if (error.find("COLL_ALGO") != std::string::npos && error.find("invalid usage") != std::string::npos) continue;
      failures.push_back(c.describe() + ": " + error);
      if (failures.size() > 5) break;
    }
    if (mine.empty()) failures.push_back("no standard case is a " + std::string(coll::collTypeName(s.type)));
    return failures;
  };
}

std::function<void(int)> forcing(const Subject& s, bool twoHosts) {
  return [s, twoHosts](int rank) {
    setenv("COLL_ALGO", (std::string(coll::collTypeName(s.type)) + ":" + s.algorithm).c_str(), 1);
    if (twoHosts) setenv("COLL_HOSTID", rank % 2 ? "odd-host" : "even-host", 1);
  };
}

class EveryAlgorithm : public ::testing::TestWithParam<Subject> {};

TEST_P(EveryAlgorithm, ForcedOnOneHost) {
  auto failures = runAsProcessesWithSetup(3, forcing(GetParam(), false), bodyFor(GetParam()), initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

TEST_P(EveryAlgorithm, ForcedOnTwoSimulatedHosts) {
  auto failures = runAsProcessesWithSetup(4, forcing(GetParam(), true), bodyFor(GetParam()), initMustSucceed());
  EXPECT_TRUE(failures.empty()) << joinFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(Table, EveryAlgorithm, ::testing::ValuesIn(subjects()),
                         [](const ::testing::TestParamInfo<Subject>& info) {
                           return info.param.algorithm + "_" + coll::collTypeName(info.param.type);
                         });

}  // namespace
}  // namespace colltest
