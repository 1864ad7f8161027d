#include "test_env.h"

#include <stdlib.h>

#include <cstdio>
#include <sstream>
#include <string>

namespace colltest {

bool applyTestEnvironment() {
  const char* spec = getenv("COLL_TEST_ENV");
  if (spec == nullptr) return false;
  std::istringstream in(spec);
  std::string item;
  while (in >> item) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      fprintf(stderr, "COLL_TEST_ENV: '%s' is not NAME=VALUE\n", item.c_str());
      abort();
    }
    setenv(item.substr(0, eq).c_str(), item.substr(eq + 1).c_str(), 1);
  }
  return true;
}

}  // namespace colltest
