// COLL_TEST_ENV for the multi-rank suites: ctest's ENVIRONMENT through gtest_discover_tests keeps
// only the first of several variables under CMake 3.25 (its script splits the list into separate
// arguments), so the suites that need several settings pass them in one:
// COLL_TEST_ENV="NAME=VALUE NAME=VALUE ...".
#pragma once

namespace colltest {

// Sets every NAME=VALUE of COLL_TEST_ENV in this process (rank processes inherit them); call it
// before any test, from a static initializer. A malformed entry stops the run: a suite that
// silently ran without its settings is what this replaces. Returns whether COLL_TEST_ENV was set.
bool applyTestEnvironment();

}  // namespace colltest
