#include "util/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace ember {

int open_regular_file(const std::string& path, uint64_t& size) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  // It has no effect on the reads of a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error(path + ": cannot stat: " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file");
  }
  size = uint64_t(st.st_size);
  return fd;
}

std::string read_text_file(const std::string& path, uint64_t max_bytes) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, size);
  if (size > max_bytes) {
    ::close(fd);
    throw Error(path + ": " + std::to_string(size) + " bytes exceed the limit of " + std::to_string(max_bytes) +
                " bytes for this kind of file");
  }
  std::string text(size_t(size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw Error(path + ": cannot read: " + std::strerror(e));
    }
    if (n == 0) break;  // the file shrank while we read it
    got += size_t(n);
  }
  ::close(fd);
  text.resize(got);
  return text;
}

}  // namespace ember
