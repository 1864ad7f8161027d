// collGetLastError's memory: per thread, the message of the most recent failed entry point, and,
// for the last few communicators a failure concerned, the most recent message about each. Asked
// about a communicator, the thread's most recent message is the answer unless it concerned another
// communicator; then the most recent one about this one is. So a thread that drives several
// communicators can ask about each, and never gets another's message.
#pragma once

#include <cstdint>
#include <string>

namespace coll {

// Records a failure on this thread; comm is the id of the communicator it concerns (0: none,
// such as an init that failed).
void recordLastError(const std::string& message, uint64_t comm);
// This thread's most recent message ("" when none).
const std::string& lastError();
// The answer for communicator `comm` (above; "" when none).
const std::string& lastErrorAbout(uint64_t comm);

// The communicator the current entry point named, once it was found live (0 before): a failure
// is then recorded against it. Each entry point saves, sets and restores it. Inline, with a
// constant initializer: every entry point reads and writes it twice, and an out-of-line accessor
// cost a call and a TLS descriptor call each time (an 8-byte send/receive pair makes four entries).
namespace detail {
inline thread_local uint64_t tCallCommunicator = 0;
}  // namespace detail
inline uint64_t& currentCallCommunicator() { return detail::tCallCommunicator; }

}  // namespace coll
