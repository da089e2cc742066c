// guarded(): the one place where request handling errors become replies.
#pragma once
#include <exception>
#include <new>

#include "server/api_error.h"

namespace ember::server {

template <class F>
void guarded(httplib::Response& res, Api api, F&& handle) {
  try {
    handle();
  } catch (const ApiError& e) {
    reply_error(res, api, e.status(), e.what(), e.param());
  } catch (const std::bad_alloc&) {
    reply_error(res, api, 500, "out of memory while handling the request");
  } catch (const std::exception& e) {
    reply_error(res, api, 500, std::string("internal error: ") + e.what());
  }
}

}  // namespace ember::server
