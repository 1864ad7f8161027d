// A survey of one job shape: every all-reduce algorithm the planner could use at each size, the
// algorithm it chooses for the other collectives, the bootstrap, and what a rank holds with lazy
// and with eager connections. The tables (tables.h) and the tests read it.
#pragma once

#include <cstddef>
#include <vector>

#include "tools/collsim/bootstrap_model.h"
#include "tools/collsim/call_study.h"
#include "tools/collsim/job_model.h"

namespace collsim {

struct SurveyOptions {
  std::vector<size_t> sizes{8, size_t{1} << 30};  // bytes per rank of each studied call
  int allRanksUpTo = 1024;                        // walk every rank up to this many ranks
  int extraRanks = 24;                            // pseudo-random ranks walked beyond that
  bool otherCollectives = true;
};

struct SizeStudies {
  size_t bytes = 0;
  coll::Algo chosen = coll::Algo::kAuto;
  std::vector<CallStudy> studies;  // one per algorithm that can run it
  const CallStudy* of(coll::Algo algo) const;
};

struct OtherCollective {
  coll::CollType type;
  size_t bytes;
  CallStudy study;  // with the algorithm the planner chooses
};

struct ShapeSurvey {
  JobShape shape;
  std::vector<int> examined;
  std::vector<SizeStudies> allReduce;  // per size
  std::vector<OtherCollective> others;
  Holdings eager;  // today: every peer connected at init
  // The worst examined rank's union of the plans the planner chooses for every studied call but
  // those that need every peer by definition (needsEveryPeer).
  Holdings lazyChosen;
  BootstrapCost storeBootstrap, logBootstrap;
  std::vector<std::string> problems() const;  // every study's, prefixed with what it was
};

ShapeSurvey surveyShape(const JobShape& shape, const TransportShape& transports, const SurveyOptions& options);

// Gather and scatter (at the root) and all-to-all talk to every rank whatever the transport.
bool needsEveryPeer(coll::CollType type);

// The collectives besides all-reduce that the survey plans.
const std::vector<coll::CollType>& otherCollectiveTypes();

}  // namespace collsim
