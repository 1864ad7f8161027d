#include "tools/collsim/survey.h"

#include "common/error.h"
#include "src/plan/planner.h"

namespace collsim {

const CallStudy* SizeStudies::of(coll::Algo algo) const {
  for (const CallStudy& s : studies)
    if (s.algo == algo) return &s;
  return nullptr;
}

const std::vector<coll::CollType>& otherCollectiveTypes() {
  static const std::vector<coll::CollType> types = {
      coll::CollType::kBroadcast, coll::CollType::kReduce,  coll::CollType::kAllGather, coll::CollType::kReduceScatter,
      coll::CollType::kGather,    coll::CollType::kScatter, coll::CollType::kAllToAll,  coll::CollType::kBarrier};
  return types;
}

bool needsEveryPeer(coll::CollType type) {
  return type == coll::CollType::kGather || type == coll::CollType::kScatter || type == coll::CollType::kAllToAll;
}

std::vector<std::string> ShapeSurvey::problems() const {
  std::vector<std::string> all;
  auto add = [&](const char* what, size_t bytes, const CallStudy& s) {
    for (const std::string& p : s.problems)
      all.push_back(coll::formatString("%d ranks on %d hosts, %s of %zu bytes with %s: %s", shape.nranks, shape.nhosts,
                                       what, bytes, coll::algoName(s.algo), p.c_str()));
  };
  for (const SizeStudies& size : allReduce)
    for (const CallStudy& s : size.studies) add("AllReduce", size.bytes, s);
  for (const OtherCollective& o : others) add(coll::collTypeName(o.type), o.bytes, o.study);
  return all;
}

ShapeSurvey surveyShape(const JobShape& shape, const TransportShape& transports, const SurveyOptions& options) {
  ShapeSurvey survey;
  survey.shape = shape;
  const coll::PlanContext ctx = planContextFor(shape, transports);
  survey.examined = ranksToExamine(shape, options.allRanksUpTo, options.extraRanks);
  std::vector<const CallStudy*> chosen;
  for (size_t bytes : options.sizes) {
    SizeStudies size;
    size.bytes = bytes;
    const coll::CollCall call = callOfBytes(coll::CollType::kAllReduce, bytes, shape.nranks);
    size.chosen = coll::planCall(call, ctx).algo;
    for (coll::Algo algo : scheduleAlgorithms(call, ctx))
      size.studies.push_back(studyCall(shape, transports, ctx, call, algo, survey.examined));
    survey.allReduce.push_back(std::move(size));
  }
  if (options.otherCollectives)
    for (coll::CollType type : otherCollectiveTypes())
      for (size_t bytes : options.sizes) {
        const coll::CollCall call = callOfBytes(type, bytes, shape.nranks);
        const coll::Algo algo = coll::planCall(call, ctx).algo;
        survey.others.push_back({type, bytes, studyCall(shape, transports, ctx, call, algo, survey.examined)});
      }
  // Pointers only once the vectors stop growing.
  for (const SizeStudies& size : survey.allReduce)
    if (const CallStudy* s = size.of(size.chosen)) chosen.push_back(s);
  for (const OtherCollective& o : survey.others)
    if (!needsEveryPeer(o.type)) chosen.push_back(&o.study);
  for (int rank : survey.examined) {
    std::vector<const RankTraffic*> plans;
    for (const CallStudy* s : chosen) plans.push_back(&s->traffic.at(rank));
    const Holdings h = lazyHoldings(plans, shape, transports);
    if (h.fifoBytes >= survey.lazyChosen.fifoBytes) survey.lazyChosen = h;
  }
  survey.eager = eagerHoldings(shape, transports);
  survey.storeBootstrap = storeAllGather(shape.nranks);
  survey.logBootstrap = logRoundsAllGather(shape.nranks, survey.examined);
  return survey;
}

}  // namespace collsim
