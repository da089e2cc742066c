// SHA-256 of a file, in lowercase hex: the hub names each large file by it,
// so a download is checked against what the repository holds.
#pragma once
#include <string>

namespace ember::hub {

// Throws ember::Error when the file cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace ember::hub
