// The check that a call is refused with a CollError of a given code, for any test.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "common/error.h"

namespace colltest {

// Runs fn, expects a CollError with the code, and returns its message ("" when none was thrown).
inline std::string expectCollError(collResult_t code, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const coll::CollError& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a CollError with code " << code;
  return "";
}

}  // namespace colltest
