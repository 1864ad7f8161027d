// --tag-output: relays the ranks' stdout and stderr line by line, each line prefixed with "[RANK] ".
// Whole lines are written at once so that lines of different ranks never interleave mid-line.
#pragma once

#include <poll.h>

#include <string>
#include <vector>

namespace collrun {

class TaggedOutput {
 public:
  // Takes ownership of readFd (the read end of a rank's pipe); output goes to destFd (1 or 2).
  void add(int rank, int readFd, int destFd);
  // One pollfd per open stream, in the order handle() expects.
  void appendPollFds(std::vector<pollfd>* fds) const;
  // Reads what poll reported for the open streams (fds[first..]); closes streams at EOF.
  void handle(const std::vector<pollfd>& fds, size_t first);
  bool anyOpen() const;
  // Writes every partial line and closes every stream.
  void flushAndCloseAll();

 private:
  struct Stream {
    int rank;
    int fd;  // -1 once closed
    int destFd;
    std::string pending;  // bytes after the last newline
  };
  void readFrom(Stream* s);
  void emitLines(Stream* s, bool flushPartial);
  void close(Stream* s);
  std::vector<Stream> streams_;
};

}  // namespace collrun
