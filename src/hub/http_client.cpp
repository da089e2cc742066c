#include "hub/http_client.h"

#include <curl/curl.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>

#include <unistd.h>

#include "util/error.h"

namespace ember::hub {

namespace {

struct Curl {
  CURL* h;
  Curl() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    h = curl_easy_init();
    if (!h) throw Error("libcurl could not start");
  }
  ~Curl() { curl_easy_cleanup(h); }
};

void common_options(CURL* h, const std::string& url, const std::string& token, char* error_buffer) {
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "ember");
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled transfer (under 1 KB/s for a minute) fails instead of hanging.
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
  if (!token.empty()) {
    // Bearer auth through libcurl itself, which keeps it from hosts a redirect leads to.
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, token.c_str());
  }
}

void check(CURL* h, CURLcode rc, const char* error_buffer, const std::string& url, std::initializer_list<long> ok) {
  if (rc != CURLE_OK)
    throw Error(url + ": " + (error_buffer[0] ? std::string(error_buffer) : std::string(curl_easy_strerror(rc))));
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  for (long s : ok)
    if (status == s) return;
  std::string hint;
  if (status == 401 || status == 403) hint = " (a gated or private repository needs HF_TOKEN)";
  if (status == 404) hint = " (no such repository, revision or file)";
  throw Error(url + ": HTTP " + std::to_string(status) + hint);
}

size_t append_to_string(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

struct Sink {
  std::FILE* file = nullptr;
  int64_t written = 0;   // bytes in the file
  int64_t start = 0;     // bytes it had before this request
  bool restarted = false;
  CURL* h = nullptr;
  const std::function<void(int64_t, int64_t)>* progress = nullptr;
};

size_t write_to_file(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  if (!s->restarted) {
    s->restarted = true;
    long status = 0;
    curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
    if (status == 200 && s->start > 0) {  // the range was ignored: the whole file comes again
      if (std::fflush(s->file) != 0 || ftruncate(fileno(s->file), 0) != 0 || std::fseek(s->file, 0, SEEK_SET) != 0) return 0;
      s->written = s->start = 0;
    }
  }
  if (std::fwrite(data, 1, size * n, s->file) != size * n) return 0;  // a short write ends the transfer as an error
  s->written += int64_t(size * n);
  return size * n;
}

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* s = static_cast<Sink*>(user);
  (*s->progress)(s->start + int64_t(now), total > 0 ? s->start + int64_t(total) : -1);
  return 0;
}

}  // namespace

std::string http_get(const std::string& url, const std::string& token) {
  Curl c;
  char err[CURL_ERROR_SIZE] = {0};
  std::string body;
  common_options(c.h, url, token, err);
  curl_easy_setopt(c.h, CURLOPT_WRITEFUNCTION, append_to_string);
  curl_easy_setopt(c.h, CURLOPT_WRITEDATA, &body);
  check(c.h, curl_easy_perform(c.h), err, url, {200});
  return body;
}

void http_download(const std::string& url, const std::string& token, const std::string& path,
                   const std::function<void(int64_t, int64_t)>& progress) {
  Curl c;
  char err[CURL_ERROR_SIZE] = {0};
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "ab"), std::fclose);
  if (!file) throw Error("cannot write " + path);
  Sink sink;
  sink.file = file.get();
  sink.start = sink.written = int64_t(std::filesystem::file_size(path));
  sink.h = c.h;
  sink.progress = &progress;
  common_options(c.h, url, token, err);
  if (sink.start > 0) curl_easy_setopt(c.h, CURLOPT_RESUME_FROM_LARGE, curl_off_t(sink.start));
  curl_easy_setopt(c.h, CURLOPT_WRITEFUNCTION, write_to_file);
  curl_easy_setopt(c.h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c.h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c.h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c.h, CURLOPT_XFERINFODATA, &sink);
  const CURLcode rc = curl_easy_perform(c.h);
  if (std::fflush(file.get()) != 0) throw Error("cannot write " + path);
  check(c.h, rc, err, url, {200, 206});
}

}  // namespace ember::hub
