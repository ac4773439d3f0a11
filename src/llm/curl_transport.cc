// HttpTransport over libcurl: one easy handle per request (so calls from many threads never
// share one), each C handle owned by a unique_ptr.
#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <mutex>

#include "llm/llm.h"

namespace kpilot::llm {

namespace {

struct EasyDeleter {
  void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;
using HeaderList = std::unique_ptr<curl_slist, SlistDeleter>;

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// One header line. A status line starts a new response (after a 100 Continue, say): the headers
// kept are the final response's.
size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* headers = static_cast<std::map<std::string, std::string>*>(user);
  std::string_view line(data, size * count);
  if (line.starts_with("HTTP/")) {
    headers->clear();
    return size * count;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * count;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front()))) value.remove_prefix(1);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.remove_suffix(1);
  (*headers)[name] = std::string(value);
  return size * count;
}

long Millis(double seconds) { return static_cast<long>(std::ceil(std::max(seconds, 0.001) * 1000)); }

class CurlTransport final : public HttpTransport {
 public:
  CurlTransport() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }

  Result<HttpResponse> Post(const HttpRequest& request) override {
    EasyHandle curl(curl_easy_init());
    if (!curl) return Status::Internal("libcurl: curl_easy_init failed");
    HeaderList headers;
    auto append = [&headers](const std::string& line) {
      curl_slist* grown = curl_slist_append(headers.get(), line.c_str());
      if (grown == nullptr) return false;
      (void)headers.release();  // `grown` is the same list, longer, or its new head
      headers.reset(grown);
      return true;
    };
    for (const auto& [name, value] : request.headers) {
      if (!append(name + ": " + value)) return Status::Internal("libcurl: curl_slist_append failed");
    }
    // "Expect: 100-continue" would add a round trip to every large prompt.
    if (!append("Expect:")) return Status::Internal("libcurl: curl_slist_append failed");

    HttpResponse response;
    char error[CURL_ERROR_SIZE] = {0};
    CURL* h = curl.get();
    curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &response.body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &response.headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, Millis(request.connect_timeout_s));
    // A reply is not streamed: nothing arrives until the model has finished, so the read timeout
    // bounds the whole exchange after the connection.
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, Millis(request.connect_timeout_s + request.read_timeout_s));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for DNS timeouts: other threads run
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);  // a redirect must not carry the key elsewhere

    CURLcode code = curl_easy_perform(h);
    if (code != CURLE_OK) {
      std::string detail = error[0] != '\0' ? std::string(error) : std::string(curl_easy_strerror(code));
      if (code == CURLE_OPERATION_TIMEDOUT) {
        return Status::Unavailable("POST " + request.url + " timed out (" + detail +
                                   "); raise connect_timeout_s / read_timeout_s in the LLM config");
      }
      return Status::Unavailable("POST " + request.url + " failed: " + detail +
                                 "; check that the server runs and the base URL is right");
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    response.status = static_cast<int>(status);
    return response;
  }
};

}  // namespace

std::shared_ptr<HttpTransport> MakeCurlTransport() { return std::make_shared<CurlTransport>(); }

}  // namespace kpilot::llm
