#include "hub/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "util/error.h"

namespace ember::hub {

std::string sha256_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw Error("cannot read " + path);
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw Error("SHA-256 is not available");
  std::vector<unsigned char> buf(size_t(1) << 20);
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) EVP_DigestUpdate(ctx.get(), buf.data(), n);
  if (std::ferror(f.get())) throw Error("cannot read " + path);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace ember::hub
