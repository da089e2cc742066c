// Reading a small file named by a user (config.json, tokenizer.json, a
// template, a message file) without trusting the path: it must be a regular
// file (checked without blocking, so a FIFO or device fails at once instead
// of hanging in open) and no larger than `max_bytes`.
#pragma once
#include <cstdint>
#include <string>

namespace ember {

// Throws ember::Error("<path>: <problem>").
std::string read_text_file(const std::string& path, uint64_t max_bytes);

// Opens `path` for reading without blocking and checks that it is a regular
// file; returns the descriptor (the caller closes it) and its size.
int open_regular_file(const std::string& path, uint64_t& size);

}  // namespace ember
