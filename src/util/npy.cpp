#include "util/npy.h"

#include <cstring>
#include <fstream>
#include <regex>

#include "util/error.h"

namespace ember {

void write_npy_f32(const std::string& path, const float* data, int64_t rows, int64_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, ending in '\n'.
  const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot create");
  const uint16_t len = uint16_t(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(char(len & 0xff));
  f.put(char(len >> 8));
  f.write(header.data(), std::streamsize(header.size()));
  f.write(reinterpret_cast<const char*>(data), std::streamsize(size_t(rows * cols) * sizeof(float)));
  if (!f) throw Error(path + ": write failed");
}

NpyArray read_npy_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open");
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw Error(path + ": not a .npy file");
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    hlen = b[0] | (uint32_t(b[1]) << 8);
  } else {
    unsigned char b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    hlen = b[0] | (uint32_t(b[1]) << 8) | (uint32_t(b[2]) << 16) | (uint32_t(b[3]) << 24);
  }
  if (!f || hlen > 65536) throw Error(path + ": bad .npy header");
  std::string header(hlen, '\0');
  f.read(header.data(), hlen);
  if (header.find("'<f4'") == std::string::npos) throw Error(path + ": only little-endian float32 .npy is supported");
  if (header.find("'fortran_order': True") != std::string::npos) throw Error(path + ": Fortran order not supported");
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('shape':\s*\(([^)]*)\))"))) throw Error(path + ": no shape in header");
  NpyArray a;
  const std::string dims = m[1].str();
  std::regex num(R"(\d+)");
  int64_t n = 1;
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) {
    a.shape.push_back(std::stoll(it->str()));
    n *= a.shape.back();
  }
  a.data.resize(size_t(n));
  f.read(reinterpret_cast<char*>(a.data.data()), std::streamsize(size_t(n) * sizeof(float)));
  if (!f) throw Error(path + ": truncated data");
  return a;
}

}  // namespace ember
