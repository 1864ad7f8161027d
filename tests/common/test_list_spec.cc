// The one list grammar the settings share (COLL_TRANSPORTS, COLL_DEBUG_SUBSYS,
// COLL_SOCKET_IFNAME): comma lists, '^' for "all but", '=' for exact names where prefixes are
// the default.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/list_spec.h"
#include "common/net_interfaces.h"

namespace coll {
namespace {

using Names = std::vector<std::string>;

TEST(SplitList, DropsEmptyItems) {
  EXPECT_EQ(splitList(""), Names{});
  EXPECT_EQ(splitList(","), Names{});
  EXPECT_EQ(splitList("a"), Names{"a"});
  EXPECT_EQ(splitList("a,,b,"), (Names{"a", "b"}));
  EXPECT_EQ(splitList(",a,b"), (Names{"a", "b"}));
  EXPECT_EQ(splitList("x:y;z", ';'), (Names{"x:y", "z"}));
}

TEST(NameSelection, ExactNamesSelectOnlyThemselves) {
  NameSelection s = NameSelection::parse("shm,net");
  EXPECT_FALSE(s.excludes());
  EXPECT_EQ(s.names(), (Names{"shm", "net"}));
  EXPECT_TRUE(s.selects("shm"));
  EXPECT_TRUE(s.selects("net"));
  EXPECT_FALSE(s.selects("sh"));
  EXPECT_FALSE(s.selects("shm2"));
  EXPECT_FALSE(s.selects("p2p"));
}

TEST(NameSelection, CaretSelectsEverythingElse) {
  NameSelection s = NameSelection::parse("^shm");
  EXPECT_TRUE(s.excludes());
  EXPECT_EQ(s.names(), Names{"shm"});
  EXPECT_FALSE(s.selects("shm"));
  EXPECT_TRUE(s.selects("net"));
  // "^" alone excludes nothing.
  EXPECT_TRUE(NameSelection::parse("^").selects("anything"));
  // Nothing listed selects nothing.
  EXPECT_FALSE(NameSelection::parse("").selects("anything"));
}

TEST(NameSelection, PrefixesAndTheExactMarker) {
  NameSelection prefixes = NameSelection::parse("eth,ib", NameSelection::Match::kPrefix);
  EXPECT_TRUE(prefixes.selects("eth0"));
  EXPECT_TRUE(prefixes.selects("ib1"));
  EXPECT_FALSE(prefixes.selects("lo"));
  NameSelection exact = NameSelection::parse("=eth0", NameSelection::Match::kPrefix);
  EXPECT_TRUE(exact.selects("eth0"));
  EXPECT_FALSE(exact.selects("eth01"));
  EXPECT_EQ(exact.names(), Names{"eth0"});
  NameSelection notExact = NameSelection::parse("^=docker0,lo", NameSelection::Match::kPrefix);
  EXPECT_TRUE(notExact.excludes());
  EXPECT_FALSE(notExact.selects("lo"));
  EXPECT_FALSE(notExact.selects("docker0"));
  EXPECT_TRUE(notExact.selects("docker1"));
  EXPECT_TRUE(notExact.selects("lo2"));
}

TEST(InterfaceSpec, IsThePrefixGrammar) {
  EXPECT_TRUE(parseInterfaceSpec("eth").selects("eth3"));
  EXPECT_FALSE(parseInterfaceSpec("=eth").selects("eth3"));
  EXPECT_FALSE(parseInterfaceSpec("^eth").selects("eth3"));
  EXPECT_TRUE(parseInterfaceSpec("^eth").selects("ib0"));
}

}  // namespace
}  // namespace coll
