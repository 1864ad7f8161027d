#include "common/env_setting.h"

#include <strings.h>
#include <cstdlib>
#include <cstring>

#include "common/error.h"

namespace coll {

bool envIsSet(const char* name) {
  const char* text = getenv(name);
  return text != nullptr && *text != '\0';
}

long long envInteger(const char* name, long long minValue, long long maxValue, long long fallback) {
  if (!envIsSet(name)) return fallback;
  const char* text = getenv(name);
  char* end = nullptr;
  long long value = strtoll(text, &end, 0);
  if (end != nullptr && (*end == 'k' || *end == 'K'))
    value <<= 10, ++end;
  else if (end != nullptr && (*end == 'm' || *end == 'M'))
    value <<= 20, ++end;
  if (end == text || *end != '\0' || value < minValue || value > maxValue)
    throwError(collInvalidUsage, "environment variable %s=\"%s\" is not valid: expected an integer in [%lld, %lld]",
               name, text, minValue, maxValue);
  return value;
}

bool envBool(const char* name, bool fallback) {
  if (!envIsSet(name)) return fallback;
  const char* text = getenv(name);
  if (!strcmp(text, "1") || !strcasecmp(text, "true") || !strcasecmp(text, "yes") || !strcasecmp(text, "on"))
    return true;
  if (!strcmp(text, "0") || !strcasecmp(text, "false") || !strcasecmp(text, "no") || !strcasecmp(text, "off"))
    return false;
  throwError(collInvalidUsage, "environment variable %s=\"%s\" is not valid: expected 0 or 1", name, text);
}

}  // namespace coll
