// HMAC-SHA256 (common/hmac.h) against the published test vectors of RFC 4231, section 4.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/hmac.h"

namespace coll {
namespace {

std::string hex(const Digest256& digest) {
  std::string text;
  char byte[3];
  for (uint8_t b : digest) {
    std::snprintf(byte, sizeof byte, "%02x", b);
    text += byte;
  }
  return text;
}

ByteView view(const std::string& s) { return {s.data(), s.size()}; }

TEST(Hmac, Rfc4231Case1) {
  const std::string key(20, '\x0b');
  EXPECT_EQ(hex(hmacSha256(view(key), {view("Hi There")})),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(Hmac, Rfc4231Case2ShortKey) {
  EXPECT_EQ(hex(hmacSha256(view("Jefe"), {view("what do ya want for nothing?")})),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Hmac, Rfc4231Case6KeyLongerThanABlock) {
  const std::string key(131, '\xaa');
  EXPECT_EQ(hex(hmacSha256(view(key), {view("Test Using Larger Than Block-Size Key - Hash Key First")})),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(Hmac, MessagePartsAreConcatenated) {
  EXPECT_EQ(hmacSha256(view("Jefe"), {view("what do ya "), view(""), view("want for nothing?")}),
            hmacSha256(view("Jefe"), {view("what do ya want for nothing?")}));
  EXPECT_NE(hmacSha256(view("Jefe"), {view("what do ya want for nothing!")}),
            hmacSha256(view("Jefe"), {view("what do ya want for nothing?")}));
}

TEST(Hmac, ConstantTimeComparison) {
  const uint8_t a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4}, c[4] = {1, 2, 3, 5}, d[4] = {0, 2, 3, 4};
  EXPECT_TRUE(equalInConstantTime(a, b, 4));
  EXPECT_FALSE(equalInConstantTime(a, c, 4));
  EXPECT_FALSE(equalInConstantTime(a, d, 4));
  EXPECT_TRUE(equalInConstantTime(a, c, 0));
}

}  // namespace
}  // namespace coll
