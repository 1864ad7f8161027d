// LandingOffer (transport/landing.h): which frames of another process's posts may be written into
// the caller's destination. Sizes come from another process, so every answer is checked against
// an offer computed here by hand: a frame or a run of frames lands only at its own offset, only
// when it ends where one of the offer's slices ends, and only when it carries the offer's tag
// (the same call: src/call_tag.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "transport/landing.h"

namespace coll {
namespace transport {
namespace {

constexpr uint64_t kTag = 0x1700000000000100;

// 1000 bytes in slices of 300 from frame 10 on: frames 10, 11, 12 of 300 and frame 13 of 100.
LandingOffer offerOf(uint8_t* destination) {
  LandingOffer offer;
  offer.set(destination, 1000, 300, 10, kTag);
  return offer;
}

TEST(LandingOffer, OneFrameLandsAtItsOffsetWithItsExpectedSize) {
  std::vector<uint8_t> out(1000);
  const LandingOffer offer = offerOf(out.data());
  EXPECT_EQ(offer.placeOf(10, 300, kTag), out.data());
  EXPECT_EQ(offer.placeOf(12, 300, kTag), out.data() + 600);
  EXPECT_EQ(offer.placeOf(13, 100, kTag), out.data() + 900);
  EXPECT_EQ(offer.placeOf(13, 300, kTag), nullptr);  // the last slice is shorter
  EXPECT_EQ(offer.placeOf(11, 299, kTag), nullptr);
  EXPECT_EQ(offer.placeOf(9, 300, kTag), nullptr);   // before the offer
  EXPECT_EQ(offer.placeOf(14, 100, kTag), nullptr);  // after it
}

TEST(LandingOffer, RunsOfFramesLandWhenTheyEndAtASliceEnd) {
  std::vector<uint8_t> out(1000);
  const LandingOffer offer = offerOf(out.data());
  EXPECT_EQ(offer.placeOfFrames(10, 1000, kTag), out.data());       // the whole offer
  EXPECT_EQ(offer.placeOfFrames(11, 700, kTag), out.data() + 300);  // to its end
  EXPECT_EQ(offer.placeOfFrames(10, 600, kTag), out.data());        // two whole slices
  EXPECT_EQ(offer.placeOfFrames(12, 300, kTag), out.data() + 600);  // one, as placeOf
  EXPECT_EQ(offer.placeOfFrames(10, 1001, kTag), nullptr);          // past the end
  EXPECT_EQ(offer.placeOfFrames(11, 1000, kTag), nullptr);
  EXPECT_EQ(offer.placeOfFrames(10, 450, kTag), nullptr);  // ends inside a slice
  EXPECT_EQ(offer.placeOfFrames(10, 0, kTag), nullptr);
  EXPECT_EQ(offer.placeOfFrames(9, 300, kTag), nullptr);
  EXPECT_EQ(offer.placeOfFrames(14, 100, kTag), nullptr);
  EXPECT_EQ(offer.placeOfFrames(10, SIZE_MAX, kTag), nullptr);
}

TEST(LandingOffer, FramesOfAnotherCallNeverLand) {
  std::vector<uint8_t> out(1000);
  const LandingOffer offer = offerOf(out.data());
  EXPECT_EQ(offer.placeOf(10, 300, kTag + 1), nullptr);
  EXPECT_EQ(offer.placeOf(13, 100, 0), nullptr);
  EXPECT_EQ(offer.placeOfFrames(10, 1000, kTag ^ (uint64_t{1} << 56)), nullptr);
  EXPECT_EQ(offer.offsetOf(11, 300, kTag - 1), LandingOffer::kNowhere);
}

TEST(LandingOffer, NoOfferNoPlace) {
  const LandingOffer none;
  EXPECT_EQ(none.placeOf(0, 1, kTag), nullptr);
  EXPECT_EQ(none.placeOfFrames(0, 1, kTag), nullptr);
  LandingOffer elsewhere = offerOf(nullptr);  // a verbs sender's: offsets only
  EXPECT_EQ(elsewhere.offsetOf(11, 300, kTag), 300u);
  EXPECT_EQ(elsewhere.placeOfFrames(10, 1000, kTag), nullptr);
}

}  // namespace
}  // namespace transport
}  // namespace coll
