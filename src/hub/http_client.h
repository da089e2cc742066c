// The two HTTP requests the hub needs, on libcurl: a small GET (the file
// listing) and a resumable download to a file. Redirects are followed (the
// hub sends large files to a CDN); the bearer token goes to the first host
// only, never to the one a redirect leads to.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace ember::hub {

// The body of a 200 answer. Throws ember::Error naming the URL and the status.
std::string http_get(const std::string& url, const std::string& token);

// Appends the rest of `url` to `path`: when the file already holds N bytes it
// asks for bytes N onwards (a server that ignores the range starts it over).
// `progress(bytes in the file, total or -1)` is called as data arrives.
void http_download(const std::string& url, const std::string& token, const std::string& path,
                   const std::function<void(int64_t, int64_t)>& progress);

}  // namespace ember::hub
