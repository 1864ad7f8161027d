// The shared-memory domain's setup cards: what one rank says in round 0 reaches the others as it
// was said, and a card that no libcollective rank would send is refused with its sender named.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "common/error.h"
#include "transport/shm/shm_card.h"

namespace coll {
namespace transport {
namespace {

TEST(ShmCard, VerdictSaysBothAnswers) {
  for (bool canRead : {false, true}) {
    for (bool canTake : {false, true}) {
      ShmVerdict said;
      said.canReadPeers = canRead;
      said.canTakeDescriptors = canTake;
      const ShmVerdict heard = parseShmVerdictCard(makeShmVerdictCard(said), 1);
      EXPECT_EQ(heard.canReadPeers, canRead) << "read " << canRead << " take " << canTake;
      EXPECT_EQ(heard.canTakeDescriptors, canTake) << "read " << canRead << " take " << canTake;
    }
  }
}

void expectRefused(const std::string& card, const char* what) {
  try {
    parseShmVerdictCard(card, 7);
    ADD_FAILURE() << "accepted " << what;
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collRemoteError) << what;
    EXPECT_NE(std::string(e.what()).find("rank 7"), std::string::npos) << e.what();
  }
}

TEST(ShmCard, MalformedVerdictsAreRefused) {
  ShmVerdict both;
  both.canReadPeers = both.canTakeDescriptors = true;
  const std::string good = makeShmVerdictCard(both);
  expectRefused("", "an empty card");
  expectRefused(good.substr(0, good.size() - 1), "a short card");
  expectRefused(good + "x", "a long card");
  std::string badMagic = good;
  badMagic[0] ^= 0x20;
  expectRefused(badMagic, "a wrong magic number");
  for (uint32_t flags : {4u, 7u, 0x80000000u}) {
    std::string unknownFlag = good;
    memcpy(&unknownFlag[sizeof(uint32_t)], &flags, sizeof(flags));
    expectRefused(unknownFlag, "an unknown flag");
  }
}

TEST(ShmCard, SegmentCardCarriesTheLocator) {
  EXPECT_EQ(parseShmSegmentCard(makeShmSegmentCard("memfd:12:3"), 1), "memfd:12:3");
  try {
    parseShmSegmentCard("shm1:with space", 2);
    ADD_FAILURE() << "accepted a locator with a space";
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), collRemoteError);
  }
}

}  // namespace
}  // namespace transport
}  // namespace coll
