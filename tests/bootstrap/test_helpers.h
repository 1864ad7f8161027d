// Helpers shared by the bootstrap tests.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/store.h"
#include "common/error.h"

namespace coll {
namespace bootstrap {
namespace testing {

// Saves the named environment variables, clears them, and restores them on destruction, so a
// test sees exactly the variables it sets.
class EnvGuard {
 public:
  explicit EnvGuard(const std::vector<std::string>& names) {
    for (const auto& name : names) {
      const char* value = getenv(name.c_str());
      saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
      unsetenv(name.c_str());
    }
  }
  ~EnvGuard() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  void set(const std::string& name, const std::string& value) {
    ASSERT_TRUE(saved_.count(name)) << name << " is not guarded";
    setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

inline Bytes toBytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
inline std::string toString(const Bytes& b) { return std::string(b.begin(), b.end()); }

inline Deadline in(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

inline long long msSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// Runs fn, expects a CollError with the code, and returns its message ("" when none was thrown).
inline std::string expectCollError(collResult_t code, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const CollError& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a CollError with code " << code;
  return "";
}

}  // namespace testing
}  // namespace bootstrap
}  // namespace coll
